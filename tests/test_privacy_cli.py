"""`keyboard-lm privacy plan` through the real CLI entry point (the DP planner)."""

import json

import pytest

from keyboard_lm.cli import main


def test_privacy_plan_prints_cohorts_ranked_by_noise_batch_ratio(capsys):
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-6", "--population", "7000",
                 "--rounds", "100", "--mechanism", "ftrl", "--max-clients-per-round", "500", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 3
    ratios = [r["noise_batch_ratio"] for r in rows]
    assert ratios == sorted(ratios)


@pytest.mark.parametrize("argv, expected", [
    (["--epsilon", "0"], "--epsilon: must be > 0"),
    (["--delta", "1.5"], "--delta must be in (0, 1)"),
    (["--max-clients-per-round", "9000"], "population"),
])
def test_privacy_plan_refuses_bad_targets(capsys, argv, expected):
    base = {"--epsilon": "5", "--delta": "1e-6", "--population": "7000", "--rounds": "50"}
    for flag, value in zip(argv[::2], argv[1::2]):
        base[flag] = value
    args = [x for kv in base.items() for x in kv]
    try:
        code = main(["privacy", "plan", "--mechanism", "ftrl", *args])
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err

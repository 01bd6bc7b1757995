"""The canary audit's power check (a positive control first) and the one-run lower bound on epsilon."""

import json
import math

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import audit as au


def _rows(trained, controls, untrained=()):
    rows = [{"exposure": e, "client": f"c{i}", "repeats": 16, "participations": 2} for i, e in enumerate(trained)]
    rows += [{"exposure": e, "client": f"u{i}", "repeats": 16, "participations": 0} for i, e in enumerate(untrained)]
    rows += [{"exposure": e, "client": None, "repeats": 0} for e in controls]
    return rows


def test_power_detects_canaries_above_the_controls_and_not_chance():
    memorized = _rows([9.0, 8.5, 8.0, 7.5, 7.0, 6.5, 6.0, 5.5, 9.5, 10.0], [1.0, 0.5, 2.0, 1.5, 0.2, 0.8, 1.1, 0.3])
    p = au.power(memorized)
    assert p["detected"] and p["p_value"] < 1e-3 and p["above_every_control"] == 10
    chance = _rows([1.0, 0.4, 2.1, 0.9, 1.6], [1.2, 0.5, 2.0, 0.7, 1.4])
    assert au.power(chance)["detected"] is False
    # canaries whose client never trained are not evidence either way
    assert au.power(_rows([9.0, 8.0, 7.0], [1.0, 2.0, 0.5], untrained=[0.1] * 5))["trained_canaries"] == 3
    assert au.power(_rows([9.0], []))["detected"] is None


def test_one_run_bound_is_zero_for_chance_and_grows_with_perfect_separation():
    # 40 candidates, all planted ones above all controls: 20 guesses, all right
    perfect = au.one_run_epsilon(_rows([10.0 + i for i in range(20)], [float(i) / 10 for i in range(20)]))
    assert perfect["guesses"] == 20 and perfect["correct"] == 20
    # all 20 right: p^20 = beta at the bound, p = e^eps / (1 + e^eps)
    p = 0.05 ** (1 / 20)
    assert perfect["epsilon_lower_bound"] == pytest.approx(math.log(p / (1 - p)), rel=1e-6)
    same = au.one_run_epsilon(_rows([float(i % 5) for i in range(20)], [float(i % 5) for i in range(20)]))
    assert same["epsilon_lower_bound"] == 0.0  # the same exposures in and out: nothing to bound
    # each canary in 4 clients: the same separation bounds groups of 4, a user's epsilon a quarter of it
    shared = _rows([10.0 + i for i in range(20)], [float(i) / 10 for i in range(20)])
    for r in shared[:20]:
        r["clients"] = [r["client"], "x", "y", "z"]
    grouped = au.one_run_epsilon(shared)
    assert grouped["clients_per_canary"] == 4
    assert grouped["group_epsilon_lower_bound"] == pytest.approx(perfect["epsilon_lower_bound"])
    assert grouped["epsilon_lower_bound"] == pytest.approx(perfect["epsilon_lower_bound"] / 4)
    lines = au.verdict(au.power(shared), grouped, noisy=True)
    assert "bounds groups of 4" in lines[-2] and "group privacy only (4 x eps)" in lines[-1]


def test_the_verdict_says_power_before_dp(tmp_path):
    weak = au.power(_rows([1.0, 0.4, 2.1, 0.9, 1.6], [1.2, 0.5, 2.0, 0.7, 1.4]))
    strong = au.power(_rows([9.0, 8.5, 8.0, 7.5, 7.0], [1.0, 0.5, 2.0, 1.5, 0.2]))
    one = {"epsilon_lower_bound": 0.0, "correct": 3, "guesses": 4, "beta": 0.05}
    noiseless = au.verdict(weak, one, noisy=False)
    assert noiseless[0].startswith("power (this run has no noise") and "no power" in noiseless[1]
    unknown = au.verdict(weak, one, noisy=True)
    assert unknown[0].startswith("power: unknown")
    under_dp = au.verdict(weak, one, noisy=True, control=strong, control_run="runs/ctl")
    assert "detected" in under_dp[0] and under_dp[1].startswith("under DP: memorization not detected")
    powerless = au.verdict(weak, one, noisy=True, control=weak, control_run="runs/ctl")
    assert "cannot tell DP from no DP" in powerless[1]
    assert under_dp[-1].startswith("one-run lower bound on eps")


def test_a_control_must_be_an_audited_noiseless_run(tmp_path):
    with pytest.raises(ConfigError, match="no audit.json"):
        au.control_power(str(tmp_path))
    (tmp_path / "audit.json").write_text(json.dumps({"rows": [], "differential_privacy": {"noise_multiplier": 1.2}}))
    with pytest.raises(ConfigError, match="without noise"):
        au.control_power(str(tmp_path))
    rows = _rows([9.0, 8.0, 7.0], [1.0, 0.5, 2.0])
    (tmp_path / "audit.json").write_text(json.dumps({"rows": rows, "differential_privacy": None}))
    assert au.control_power(str(tmp_path))["trained_canaries"] == 3

"""benchmarks/privacy/privacy_cohorts.py lines privacy_benchmark's per-cohort results up by K, each DP row against its own z = 0."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "privacy"))
import privacy_cohorts  # noqa: E402

pytestmark = pytest.mark.bench


def row(name, k, z, recall, seconds=600.0, diverged=None):
    if diverged:
        return {"row": name, "model": "cifg", "diverged": diverged}
    return {"row": name, "clients_per_round": k, "population": 6387, "rounds": 40, "noise_multiplier": z,
            "noise_batch_ratio": z * 0.1 / k, "recall_at_3": recall, "canaries_trained": 10,
            "trained_above_controls": 0, "seconds": seconds}


def test_each_dp_row_is_compared_with_the_noiseless_row_of_its_own_cohort(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(privacy_cohorts, "RESULTS", str(tmp_path))
    (tmp_path / "big.json").write_text(json.dumps({"rows": [
        row("base_ftrl_inf", 600, 0, 0.20), row("base_ftrl_eps10", 600, 2.0, 0.19),
        row("base_ftrl_eps1", 600, 9.0, None, diverged="training diverged at round 30")]}))
    (tmp_path / "small.json").write_text(json.dumps({"rows": [
        row("base_ftrl_inf", 50, 0, 0.16), row("base_ftrl_eps10", 50, 1.2, 0.12)]}))
    monkeypatch.setattr(sys, "argv", ["privacy_cohorts.py", "big", "small", "--out", "cohorts"])
    privacy_cohorts.main()
    lines = [ln for ln in (tmp_path / "cohorts.md").read_text().splitlines() if ln.startswith("| ")]
    assert lines[1].startswith("| 50 |") and lines[2].startswith("| 600 |")  # sorted by K
    assert "**0.750**" in lines[1] and "not run" in lines[1]  # 0.12 / 0.16; no eps 1 row at K = 50
    assert "**0.950**" in lines[2] and "training diverged at round 30" in lines[2]
    assert "9.4% / 3.76" in lines[2]  # 600 / 6387 a round, 600 * 40 / 6387 epochs
    assert (tmp_path / "cohorts.png").read_bytes()[:4] == b"\x89PNG"
    assert "| 600 |" in capsys.readouterr().out


def test_a_missing_or_foreign_result_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(privacy_cohorts, "RESULTS", str(tmp_path))
    with pytest.raises(SystemExit, match="nothing.json: not a privacy_benchmark result"):
        privacy_cohorts.load(["nothing"])
    (tmp_path / "empty.json").write_text(json.dumps({"rows": [row("base_ftrl_inf", 50, 0, None, diverged="x")]}))
    with pytest.raises(SystemExit, match="empty.json: no finished rows"):
        privacy_cohorts.load(["empty"])

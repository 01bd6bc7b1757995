"""The privacy profile: eps at several deltas from the run's own accountant, the membership-inference
bound of each (eps, delta), in run.json's record, the planner's rows and the printed tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.config import FederatedConfig
from keyboard_lm.privacy import accounting, planner
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.privacy.profile import (PROFILE_DELTAS, advantage_bound, format_profile, privacy_profile,
                                         profile_deltas)
from keyboard_lm.privacy.sampling import tree_sensitivity


def _region_advantage(eps, delta):
    """max over FPR of TPR - FPR on the boundary of (eps, delta)-DP's privacy region, on a fine grid:
    TPR <= e^eps FPR + delta and TPR <= 1 - e^-eps (1 - delta - FPR) (Kairouz, Oh, Viswanath 2015)."""
    fpr = np.linspace(0, 1, 2_000_001)
    tpr = np.minimum.reduce([np.exp(eps) * fpr + delta, 1 - np.exp(-eps) * (1 - delta - fpr), np.ones_like(fpr)])
    return float(np.max(tpr - fpr))


@pytest.mark.parametrize("eps,delta", [(0.5, 0.0), (1.0, 1e-5), (3.0, 1e-3), (8.0, 1e-10), (0.0, 0.01)])
def test_advantage_bound_is_the_corner_of_the_privacy_region(eps, delta):
    assert advantage_bound(eps, delta) == pytest.approx(_region_advantage(eps, delta), abs=1e-6)
    assert advantage_bound(eps, delta) == pytest.approx((math.exp(eps) - 1 + 2 * delta) / (math.exp(eps) + 1))


def test_advantage_bound_limits():
    assert advantage_bound(1.0, 0.0) == pytest.approx(math.tanh(0.5))  # pure DP: (e - 1) / (e + 1)
    assert advantage_bound(0.0, 1e-6) == pytest.approx(1e-6)  # eps 0: only delta is left
    assert advantage_bound(1000.0, 1e-6) == 1.0 and advantage_bound(math.inf, 1e-6) == 1.0  # no overflow
    assert advantage_bound(1.0, 1e-5) < advantage_bound(2.0, 1e-5) < advantage_bound(2.0, 1e-3)


@pytest.mark.parametrize("eps,delta,word", [(-1.0, 1e-5, "epsilon"), (1.0, 1.0, "delta"), (1.0, -0.1, "delta")])
def test_advantage_bound_refuses_bad_input(eps, delta, word):
    with pytest.raises(ConfigError, match=word):
        advantage_bound(eps, delta)


def test_profile_deltas_are_the_fixed_ones_1_over_n_and_the_runs_own_largest_first():
    rows = profile_deltas(1000, 2e-6)
    assert [d for d, _ in rows] == pytest.approx([1e-3, 1000 ** -1.1, 1e-5, 2e-6, 1e-7, 1e-10])
    assert dict((label, d) for d, label in rows if label) == pytest.approx(
        {"1/N^1.1": 1000 ** -1.1, "run": 2e-6, "Gboard's": 1e-10})
    # The default delta is 1/N^1.1: one row with both labels.
    merged = profile_deltas(1000, 1000 ** -1.1)
    assert len(merged) == 5 and ("1/N^1.1, run" in [label for _, label in merged])
    # A delta typed to two digits is the 1/N^1.1 row, at the delta given.
    assert [(d, label) for d, label in profile_deltas(6387, 6.5e-5, own="target") if label] == [
        (6.5e-5, "1/N^1.1, target"), (1e-10, "Gboard's")]
    # A delta equal to a fixed one takes its row and its label.
    assert profile_deltas(10, 1e-5, own="target") == [(10 ** -1.1, "1/N^1.1"), (1e-3, ""), (1e-5, "target"),
                                                      (1e-7, ""), (1e-10, "Gboard's")]
    # Gboard's own delta given as the run's: one row, both labels
    assert profile_deltas(10, 1e-10)[-1] == (1e-10, "Gboard's, run")


def test_ftrl_profile_is_the_runs_zcdp_at_each_delta():
    rho = tree_sensitivity(6387, 100, 300, 63) / (2 * 2.0 ** 2)
    rows = privacy_profile(lambda ds: accounting.rho_to_epsilons(rho, ds), 6387, 6387 ** -1.1)
    assert [r["delta"] for r in rows] == sorted((r["delta"] for r in rows), reverse=True)
    for r in rows:
        assert r["epsilon"] == pytest.approx(accounting.rho_to_epsilon(rho, r["delta"]))
        assert r["advantage"] == pytest.approx(advantage_bound(r["epsilon"], r["delta"]))
        assert r["delta_above_1_over_n"] == (r["delta"] > 1 / 6387)
    eps = [r["epsilon"] for r in rows]
    assert eps == sorted(eps)  # a smaller delta costs a larger eps


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_fedavg_profile_is_the_runs_rdp_at_each_delta(sampling):
    q, rounds = 0.02, 50
    rows = privacy_profile(lambda ds: accounting.fedavg_epsilons(1.0, q, rounds, ds, sampling, 1000), 1000, 1e-6)
    for r in (rows[0], rows[-3], rows[-1]):  # 1e-3, the run's 1e-6 and 1e-10: each its own composition
        assert r["epsilon"] == pytest.approx(accounting.fedavg_epsilon(1.0, q, rounds, r["delta"], sampling, 1000))
    assert rows[-3]["label"] == "run" and [r["epsilon"] for r in rows] == sorted(r["epsilon"] for r in rows)


def test_unbounded_eps_is_written_as_inf():
    rows = privacy_profile(lambda ds: accounting.rho_to_epsilons(math.inf, ds), 100)
    assert all(r["epsilon"] == "inf" and r["advantage"] == 1.0 for r in rows)
    json.dumps(rows, allow_nan=False)  # run.json stays standard JSON


def test_profile_table_is_short_and_marks_deltas_above_1_over_n():
    rows = privacy_profile(lambda ds: accounting.rho_to_epsilons(0.5, ds), 5000, 5000 ** -1.1)
    text = format_profile(rows, "privacy profile after 40 rounds")
    lines = text.splitlines()
    assert lines[0] == "privacy profile after 40 rounds:" and "TPR-FPR <=" in lines[1]
    assert len(lines) == 2 + len(rows) + 2  # title, header, rows, the bound's formula, the footnote
    assert lines[2].split()[0] == "0.001*" and "1/N^1.1, run" in text and "* delta above 1/N" in lines[-1]
    # Gboard's reporting: eps at delta 1e-10 from the same accountant, and rho-zCDP beside it
    (gboard,) = [r for r in rows if r["label"] == "Gboard's"]
    assert gboard["delta"] == 1e-10 and gboard["epsilon"] == pytest.approx(accounting.rho_to_epsilon(0.5, 1e-10))
    with_rho = format_profile(rows, "p", rho=0.5).splitlines()
    assert with_rho[-3] == "  rho-zCDP: 0.5" and len(with_rho) == len(lines) + 1
    assert "not reported" in format_profile(rows, "p", rho=None)


def _dp_run(mechanism, **options):
    from keyboard_lm.federated.dp_run import DPRun

    ids = [f"c{i:04d}" for i in range(1000)]
    config = FederatedConfig(clients_per_round=20, rounds=120, clip="adaptive", server_optimizer="sgd")
    return DPRun(DPOptions(mechanism, noise_multiplier=1.5, clip=1.0, **options), ids, config)


@pytest.mark.parametrize("mechanism,options", [("fedavg", {}), ("fedavg", {"sampling": "fixed"}),
                                               ("ftrl", {}), ("ftrl", {"tree_restart": "epoch"})])
def test_run_record_carries_the_profile_of_its_own_accountant(mechanism, options):
    run = _dp_run(mechanism, **options)
    info = run.info(120)
    own = [r for r in info["profile"] if "run" in r["label"]]
    assert len(own) == 1 and own[0]["delta"] == info["delta"]
    assert own[0]["epsilon"] == pytest.approx(info["epsilon"])
    assert "TPR - FPR" in info["profile_advantage"]
    report = run.report(120)
    assert report.startswith(run.summary(120)) and "privacy profile after 120 rounds" in report
    assert "Gboard's" in report and [r["delta"] for r in info["profile"]][-1] == 1e-10
    if mechanism == "ftrl":
        assert info["rho"] > 0 and f"rho-zCDP: {info['rho']:.4g}" in report
    else:
        assert info["rho"] is None and "rho-zCDP: not reported" in report
    if mechanism == "ftrl":
        period = 50 if options else None  # epoch: 1,000 // 20
        assert (info["tree_restart"], info["restart_period"], info["trees"]) == (
            options.get("tree_restart", "none"), period, 3 if options else 1)


def test_planner_rows_carry_their_profile_and_the_target_row_meets_it():
    rows = planner.plan(4.0, 1e-6, 2000, 100, clients_per_round=[20, 100])
    for row in rows:
        (target,) = [r for r in row["profile"] if r["label"] == "target"]
        assert target["delta"] == 1e-6 and 0.95 * 4.0 < target["epsilon"] <= 4.0 + 1e-6
        assert [r["delta"] for r in row["profile"]][:1] == [max(PROFILE_DELTAS)]


def test_privacy_plan_prints_the_top_rows_profile(capsys):
    assert main(["privacy", "plan", "--epsilon", "8", "--delta", "1e-7", "--population", "20000", "--rounds",
                 "300", "--mechanism", "ftrl", "--max-clients-per-round", "400", "--tree-restart", "epoch"]) == 0
    out = capsys.readouterr().out
    table, profile = out.split("privacy profile of rank 1")
    assert "tree restart epoch" in table and "restart" in table.splitlines()[1]
    assert "target" in profile and "1/N^1.1" in profile and "TPR-FPR" in profile and "rho-zCDP: " in profile
    assert main(["privacy", "plan", "--epsilon", "8", "--delta", "1e-7", "--population", "20000", "--rounds",
                 "300", "--mechanism", "ftrl", "--max-clients-per-round", "400", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    # delta 1e-7 is one of the fixed ones: five rows, the target's labelled.
    assert all([p["label"] for p in r["profile"]] == ["", "1/N^1.1", "", "target", "Gboard's"] for r in rows)
    assert rows[0]["tree_restart"] == "none"

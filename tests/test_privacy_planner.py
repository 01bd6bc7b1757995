"""The privacy planner: calibrated noise per cohort, the directions of McKenna et al. 2025's Fig. 4,
agreement with the project's accountant, the command's output and its refusals."""

import argparse
import json
import math

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import accounting, planner

DELTA = 1e-6


def _z(mechanism, eps=4.0, n=2000, t=100, k=100):
    return planner.noise_for(eps, DELTA, n, t, k, mechanism)


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_doubling_the_population_lowers_the_noise(mechanism):
    # fedavg: q = K/N halves; ftrl: each client takes half as many turns.
    assert _z(mechanism, n=4000) < _z(mechanism, n=2000)


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_more_rounds_need_more_noise_at_fixed_epsilon(mechanism):
    """The accountant's direction: T compositions (or more tree participations) cost more, so
    the same eps over twice the rounds needs a larger z, i.e. a larger noise-batch ratio.
    McKenna et al.'s Fig. 4 plots the same direction for more iterations at a fixed batch."""
    assert _z(mechanism, t=200) > _z(mechanism, t=100)


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_larger_epsilon_lowers_the_noise(mechanism):
    assert _z(mechanism, eps=8.0) < _z(mechanism, eps=4.0)


def test_rows_are_ranked_by_noise_batch_ratio_with_their_cost():
    rows = planner.plan(4.0, DELTA, 2000, 100, clients_per_round=[20, 100, 400], clip=2.0)
    ratios = [r["noise_batch_ratio"] for r in rows]
    assert ratios == sorted(ratios)
    for r in rows:
        assert r["noise_batch_ratio"] == pytest.approx(r["noise_multiplier"] * 2.0 / r["clients_per_round"])
        assert r["client_steps"] == r["clients_per_round"] * 100
        assert r["sampling_probability"] == r["clients_per_round"] / 2000


def test_planned_fedavg_noise_meets_the_target_with_the_project_accountant():
    z = _z("fedavg")
    eps = accounting.fedavg_epsilon(z, 100 / 2000, 100, DELTA)
    # The project's finer RDP grid agrees within a few per cent and keeps the planned z within the target.
    assert 0.95 * 4.0 < eps <= 4.0


def test_planned_ftrl_single_participation_is_kairouz_closed_form():
    (row,) = planner.plan(4.0, DELTA, 2000, 100, mechanism="ftrl", clients_per_round=[20])
    assert row["max_participations"] == 1
    z = row["noise_multiplier"]
    assert row["rho"] == pytest.approx(math.ceil(math.log2(101)) / (2 * z * z))
    assert row["rho"] == pytest.approx(accounting.tree_rho_single_participation(z, 100))
    assert 0.95 * 4.0 < accounting.rho_to_epsilon(row["rho"], DELTA) <= 4.0


def test_default_grid_halves_down_from_the_maximum():
    assert planner.cohort_grid(1000, 400) == [1, 2, 3, 6, 12, 25, 50, 100, 200, 400]
    assert planner.cohort_grid(50)[-1] == 50


def _args(**kw):
    base = dict(epsilon=4.0, delta=DELTA, population=2000, rounds=50, max_clients_per_round=400,
                mechanism="ftrl", clip=1.0, png=None, json=False)
    base.update(kw)
    return argparse.Namespace(**base)


def test_command_prints_a_ranked_table_and_writes_the_frontier_png(capsys, tmp_path):
    png = tmp_path / "frontier.png"
    assert planner.cmd_privacy_plan(_args(png=str(png))) == 0
    out = capsys.readouterr().out
    assert "ranked by noise-batch ratio" in out and "client-steps" in out and "rho" in out
    table, profile = out.split("privacy profile of rank 1")
    lines = [ln for ln in table.splitlines() if ln.strip()[:1].isdigit()]
    assert len(lines) == len(planner.cohort_grid(2000, 400))
    assert "TPR-FPR" in profile
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_json_is_the_plan(capsys):
    planner.cmd_privacy_plan(_args(json=True, max_clients_per_round=40))
    rows = json.loads(capsys.readouterr().out)
    assert [r["clients_per_round"] for r in rows] == [40, 20, 10, 5, 2, 1]  # largest cohort, lowest ratio


@pytest.mark.parametrize("kwargs,flag", [
    pytest.param(dict(epsilon=0.0), "--epsilon", id="eps_zero"),
    pytest.param(dict(epsilon=-1.0), "--epsilon", id="eps_negative"),
    pytest.param(dict(delta=0.0), "--delta", id="delta_zero"),
    pytest.param(dict(delta=1.0), "--delta", id="delta_one"),
    pytest.param(dict(population=0), "--population", id="population_zero"),
    pytest.param(dict(rounds=0), "--rounds", id="rounds_zero"),
    pytest.param(dict(max_clients_per_round=2001), "--max-clients-per-round", id="cohort_above_population"),
    pytest.param(dict(clip=0.0), "--clip", id="clip_zero"),
    pytest.param(dict(mechanism="dpsgd"), "--mechanism", id="unknown_mechanism"),
])
def test_refuses_bad_input_naming_the_flag(kwargs, flag):
    with pytest.raises(ConfigError, match=flag):
        planner.cmd_privacy_plan(_args(**kwargs))

"""DP-FTRL tree restarts: the accounting against tensorflow_privacy and dp_accounting, the restarted
query in TFF's aggregator and its checkpoint, the flags' refusals, and one tiny `train --resume` run."""

from __future__ import annotations

import asyncio
import csv
import json
import os

import dp_accounting
import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import accounting, planner
from keyboard_lm.privacy.config import DPConfig, DPOptions
from keyboard_lm.privacy.sampling import epoch_rounds, ftrl_schedule, tree_sensitivity

ORDERS = np.asarray(accounting._ORDERS)


def _tree_rounds(rounds, period):
    """Rounds in each tree of a run restarted every ``period`` rounds."""
    return [min(period, rounds - start) for start in range(0, rounds, period)]


@pytest.mark.parametrize("population,k,rounds,z", [
    (1000, 10, 450, 3.0),   # 4 full epochs of 100 rounds and half a fifth
    (334, 1, 2000, 7.0),    # the Gboard es-ES setting (z 7, 2000 rounds), restarted every 334 rounds
    (600, 200, 7, 1.5),     # an epoch of 3 rounds: trees of 3, 3, 1
])
def test_epoch_restart_rho_matches_tensorflow_privacy_compute_rdp_tree_restart(population, k, rounds, z):
    """K divides N: the client opening the schedule opens every tree, so the exact S is the sum of
    the trees' depths, which is what tensorflow_privacy's DP-FTRL-TreeRestart accountant assumes."""
    from tensorflow_privacy.privacy.analysis.tree_aggregation_accountant import compute_rdp_tree_restart

    period = epoch_rounds(population, k)
    rho = tree_sensitivity(population, k, rounds, period) / (2 * z * z)
    expected = compute_rdp_tree_restart(z, _tree_rounds(rounds, period), ORDERS)
    np.testing.assert_allclose(rho * ORDERS, expected, rtol=1e-12)


def test_epoch_restart_matches_dp_accounting_single_epoch_tree_events():
    # dp_accounting 0.4.3: one SingleEpochTreeAggregationDpEvent per tree (a record at most once in it),
    # composed over the trees, on the RDP accountant's zero-out ("replace special") relation.
    n, k, rounds, z, delta = 1000, 10, 450, 3.0, 1e-6
    acc = dp_accounting.rdp.RdpAccountant(list(ORDERS), dp_accounting.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(dp_accounting.ComposedDpEvent(
        [dp_accounting.SingleEpochTreeAggregationDpEvent(z, steps) for steps in _tree_rounds(rounds, 100)]))
    rho = tree_sensitivity(n, k, rounds, epoch_rounds(n, k)) / (2 * z * z)
    assert rho == pytest.approx(34 / (2 * z * z))  # 4 trees of depth 7 and one of depth 6
    assert accounting.rho_to_epsilon(rho, delta) == pytest.approx(acc.get_epsilon(delta), rel=1e-12)


def test_exact_sensitivity_is_at_most_tensorflow_privacys_when_k_does_not_divide_n():
    # N = 1050, K = 100: an epoch is 10 rounds (1,000 clients), so each tree starts half a round further
    # on and no client stays among the deepest leaves of all 20 trees: the sum of depths is a bound.
    s = tree_sensitivity(1050, 100, 200, epoch_rounds(1050, 100))
    depths = sum(t.bit_length() for t in _tree_rounds(200, 10))
    assert depths == 80 and s == 72


def _brute_force(n, k, rounds, period):
    """Max over the schedule's clients of the sum, over every tree and its complete dyadic intervals,
    of (the client's rounds in the interval)^2, by enumeration."""
    cohorts = ftrl_schedule(list(range(n)), k, rounds, 0).rounds
    period = min(period or rounds, rounds)
    worst = 0
    for client in range(n):
        mine = [t for t in range(rounds) if client in cohorts[t]]
        total = 0
        for start in range(0, rounds, period):
            length = min(period, rounds - start)
            level = 0
            while 1 << level <= length:
                for i in range(length >> level):
                    lo, hi = start + (i << level), start + ((i + 1) << level)
                    total += sum(lo <= t < hi for t in mine) ** 2
                level += 1
        worst = max(worst, total)
    return float(worst)


@pytest.mark.parametrize("n,k,rounds", [(7, 2, 20), (10, 3, 17), (11, 1, 40), (13, 5, 25)])
@pytest.mark.parametrize("period", [None, 1, 2, 5, "epoch", 100])
def test_restarted_sensitivity_is_exact_for_the_cyclic_schedule(n, k, rounds, period):
    p = epoch_rounds(n, k) if period == "epoch" else period
    assert tree_sensitivity(n, k, rounds, p) == _brute_force(n, k, rounds, p)


def test_restarting_every_epoch_lowers_eps_only_after_the_first_epoch():
    # Gboard es-ES: z = 7, 2,000 rounds, 6 participations 333 rounds apart: rho 0.806 without restarts
    # (the published 0.81), 54 / 98 = 0.551 with a tree per epoch; eps at delta 1e-10 from 8.9 to 7.2.
    none = tree_sensitivity(334, 1, 2000) / 98
    epoch = tree_sensitivity(334, 1, 2000, 334) / 98
    assert none == pytest.approx(79 / 98) and epoch == pytest.approx(54 / 98)
    assert accounting.rho_to_epsilon(epoch, 1e-10) < accounting.rho_to_epsilon(none, 1e-10) - 1.5
    # Within the first epoch no tree is restarted: the same tree, the same eps.
    assert tree_sensitivity(334, 1, 334, 334) == tree_sensitivity(334, 1, 334)


def test_planner_calibrates_less_noise_with_epoch_restarts_and_meets_the_target():
    n, rounds, k, eps, delta = 6387, 300, 100, 10.0, 6387 ** -1.1
    z_none = planner.noise_for(eps, delta, n, rounds, k, "ftrl", "none")
    z_epoch = planner.noise_for(eps, delta, n, rounds, k, "ftrl", "epoch")
    # S = 75 without restarts, 30 with them (5 trees of depth 6): z scales with sqrt(S).
    assert z_epoch / z_none == pytest.approx((30 / 75) ** 0.5, rel=2e-3)
    rho = tree_sensitivity(n, k, rounds, epoch_rounds(n, k)) / (2 * z_epoch ** 2)
    assert 0.99 * eps < accounting.rho_to_epsilon(rho, delta) <= eps
    # One epoch or less: restarts change nothing.
    assert planner.noise_for(eps, delta, n, 60, k, "ftrl", "epoch") == planner.noise_for(eps, delta, n, 60, k, "ftrl")


def test_epoch_period_keeps_each_client_at_most_once_per_tree():
    n, k, rounds = 103, 10, 60
    period = epoch_rounds(n, k)
    cohorts = ftrl_schedule(list(range(n)), k, rounds, 3).rounds
    for start in range(0, rounds, period):
        ids = [c for cohort in cohorts[start:start + period] for c in cohort]
        assert len(ids) == len(set(ids))
    # One round more per tree and the permutation wraps around inside a tree.
    ids = [c for cohort in cohorts[:period + 1] for c in cohort]
    assert len(ids) > len(set(ids))


@pytest.mark.parametrize("value,period", [(None, None), ("none", None), ("epoch", 33), ("EPOCH", 33), ("7", 7), (7, 7)])
def test_restart_setting_gives_the_period_in_rounds(value, period):
    cfg = DPOptions("ftrl", noise_multiplier=1.0, clip=1.0, tree_restart=value).for_population(1000, 30)
    assert cfg.restart_period == period


@pytest.mark.parametrize("kwargs,words", [
    pytest.param(dict(tree_restart="0"), "--dp-tree-restart must be none, epoch or a number", id="zero"),
    pytest.param(dict(tree_restart="-2"), "--dp-tree-restart must be", id="negative"),
    pytest.param(dict(tree_restart="weekly"), "--dp-tree-restart must be", id="unknown_word"),
    pytest.param(dict(tree_restart=2.5), "--dp-tree-restart must be", id="fraction"),
    pytest.param(dict(mechanism="fedavg", tree_restart="epoch"), "applies to --dp ftrl only", id="fedavg"),
])
def test_refuses_bad_restart_settings(kwargs, words):
    kwargs = {"mechanism": "ftrl", **kwargs}
    with pytest.raises(ConfigError, match=words):
        DPOptions(kwargs.pop("mechanism"), noise_multiplier=1.0, clip=1.0, **kwargs)


def test_planner_refuses_bad_restart_settings():
    with pytest.raises(ConfigError, match="--tree-restart epoch applies to --mechanism ftrl"):
        planner.plan(4.0, 1e-6, 2000, 100, mechanism="fedavg", tree_restart="epoch")
    with pytest.raises(ConfigError, match="--tree-restart must be"):
        planner.plan(4.0, 1e-6, 2000, 100, mechanism="ftrl", tree_restart="0")


def test_runs_recorded_before_restarts_resume_without_them():
    record = {"mechanism": "ftrl", "noise_multiplier": 2.0, "clip": 1.0, "clip_quantile": None, "delta": 1e-5,
              "sampling": "schedule"}
    assert DPOptions.from_record(record).tree_restart == "none"
    assert DPOptions.from_record({**record, "tree_restart": 5}).tree_restart == 5


# TFF: the restarted query in the aggregator, seeded so that two aggregators can be compared.

def _aggregator(tree_restart, noise_seed=7):
    import tensorflow as tf

    from keyboard_lm.federated import dp as dp_lib
    from keyboard_lm.federated.runtime import start_runtime

    tff = start_runtime()
    cfg = DPConfig(mechanism="ftrl", noise_multiplier=1.0, population=3, clients_per_round=3, clip=1.0,
                   tree_restart=tree_restart)
    specs = [tf.TensorSpec([3], tf.float32), tf.TensorSpec([2], tf.float32)]
    values = tff.to_type([(np.float32, [3]), (np.float32, [2])])
    return dp_lib.build_dp_aggregator(cfg, specs, noise_seed=noise_seed).create(values)


def _rounds(process, state, n):
    zeros = [[np.zeros(3, np.float32), np.zeros(2, np.float32)]] * 3
    outs = []
    for _ in range(n):
        out = process.next(state, zeros)
        state = out.state
        outs.append(np.concatenate([np.ravel(x) for x in out.result]))  # pure noise: the records are zero
    return outs, state


def test_restarted_tree_starts_afresh_after_its_period():
    restarted, plain = _aggregator(2), _aggregator("none")
    got, state = _rounds(restarted, restarted.initialize(), 4)
    want, _ = _rounds(plain, plain.initialize(), 4)
    # Same seed: the same first tree for two rounds, then a new tree where the single tree goes on.
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-6)
    assert not np.allclose(got[2], want[2])
    inner = _find_restart_state(state)
    assert int(inner.indicator_state) == 4
    # Just restarted (after round 4): the next round subtracts no earlier prefix noise.
    assert all(np.all(np.asarray(x) == 0) for x in inner.inner_query_state.previous_tree_noise)


def _find_restart_state(state):
    """Walk the aggregator state down to the RestartQuery's (inner_query_state, indicator_state)."""
    todo = [state]
    while todo:
        node = todo.pop()
        if hasattr(node, "indicator_state"):
            return node
        if hasattr(node, "_asdict"):
            todo += list(node._asdict().values())
        elif isinstance(node, dict):
            todo += list(node.values())
        elif isinstance(node, (list, tuple)):
            todo += list(node)
        elif hasattr(node, "__attrs_attrs__") or hasattr(node, "__dataclass_fields__"):
            todo += list(vars(node).values())
    raise AssertionError(f"no RestartQuery state in {state}")


def test_checkpointed_restart_state_resumes_as_an_uninterrupted_run(tmp_path):
    from keyboard_lm.federated.runtime import start_runtime

    tff = start_runtime()
    process = _aggregator(2)
    straight, _ = _rounds(process, process.initialize(), 5)
    first, state = _rounds(process, process.initialize(), 3)
    # The run's own checkpoint manager (federated/trainer.py), in the middle of the second tree.
    manager = tff.program.FileProgramStateManager(str(tmp_path))
    asyncio.run(manager.save(state, 3))
    loaded, version = asyncio.run(manager.load_latest(process.initialize()))
    assert version == 3 and int(_find_restart_state(loaded).indicator_state) == 3
    rest, _ = _rounds(process, loaded, 2)
    np.testing.assert_allclose(first + rest, straight, rtol=1e-6)


# The real CLI: one tiny DP-FTRL run with a restart every 2 rounds, resumed after 3.

TINY = ["--no-phrases", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--dropout", "0"]


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_train_with_restarts_accounts_per_tree_and_resumes_into_the_same_trees(tmp_path, capsys):
    from keyboard_lm.models.run_dir import load_run

    out = str(tmp_path / "ftrl_restart")
    assert main(["train", "--out", out, *TINY, "--rounds", "3", "--eval-every", "3", "--clients-per-round", "40",
                 "--dp", "ftrl", "--dp-noise-multiplier", "2", "--dp-clip", "1", "--dp-tree-restart", "2"]) == 0
    assert main(["train", "--out", out, "--resume", "--rounds", "4"]) == 0
    printed = capsys.readouterr().out
    dp = load_run(out).info["differential_privacy"]
    n = dp["population"]
    assert (dp["tree_restart"], dp["restart_period"], dp["trees"], dp["rounds"]) == (2, 2, 2, 4)
    # 160 of ~1,650 clients in 4 rounds: each once, so the worst is a client of round 1 or 2, under the
    # 2 nodes of its 2-round tree: S = 1, 2, 2, 2 (one tree of 4 rounds would give 3 at round 4).
    rhos = [float(r["rho"]) for r in _rows(out)]
    assert rhos == pytest.approx([tree_sensitivity(n, 40, t, 2) / 8 for t in (1, 2, 3, 4)])
    assert rhos == pytest.approx([1 / 8, 2 / 8, 2 / 8, 2 / 8]) and tree_sensitivity(n, 40, 4) == 3
    assert dp["epsilon"] == pytest.approx(accounting.rho_to_epsilon(0.25, dp["delta"]))
    assert "tree restarted every 2 rounds, 2 trees" in printed and "privacy profile after 4 rounds" in printed
    # The resumed run's TFF state: the restart counter went on from the checkpoint (4, not 1).
    import tensorflow as tf

    from keyboard_lm.federated.dp import build_dp_process
    from keyboard_lm.federated.runtime import start_runtime

    run = load_run(out)
    seq = run.info["client_data"]["max_seq_len"]
    process = build_dp_process(run.model_config, DPOptions.from_record(dp).for_population(n, 40),
                               (tf.TensorSpec([None, seq], tf.int32),) * 2, metrics=False)
    manager = start_runtime().program.FileProgramStateManager(os.path.join(out, "checkpoints"))
    state, version = asyncio.run(manager.load_latest(process.initialize()))
    assert version == 4 and int(_find_restart_state(state).indicator_state) == 4
    # The model card carries the restart and the profile as run.json has them.
    assert main(["export", out, "--out", str(tmp_path / "m.tflite")]) == 0
    with open(str(tmp_path / "m.tflite") + ".card.json", encoding="utf-8") as f:
        card = json.load(f)["differential_privacy"]
    assert card["tree_restart"] == 2 and card["profile"] == json.loads(json.dumps(dp["profile"]))


@pytest.mark.parametrize("flags,words", [
    (["--dp", "ftrl", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--dp-tree-restart", "weekly"],
     "--dp-tree-restart must be"),
    (["--dp", "ftrl", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--dp-tree-restart", "0"],
     "--dp-tree-restart must be"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--dp-tree-restart", "epoch"],
     "applies to --dp ftrl only"),
    (["--dp-tree-restart", "epoch"], "without --dp"),
])
def test_bad_restart_flags_fail_before_training(tmp_path, capsys, flags, words):
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), *TINY, "--rounds", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (out / "metrics.csv").exists()

"""BLT-DP-FTRL: the BLT matrix, its sensitivity against a brute force, its accounting, and the TensorFlow query's
noise against the mechanism's matrix."""

import itertools
import math

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import accounting
from keyboard_lm.privacy.blt import BLT, blt_for_schedule, optimize, participation_schema


def _brute_force_sensitivity(C, n, k, b):
    """max ||C 1_pi|| over every pattern of at most k rounds, any two at least b apart."""
    best = 0.0
    for m in range(1, k + 1):
        for pattern in itertools.combinations(range(n), m):
            if all(y - x >= b for x, y in zip(pattern, pattern[1:])):
                v = C[:, list(pattern)].sum(1)
                best = max(best, float(np.sqrt(v @ v)))
    return best


@pytest.mark.parametrize("n,k,b", [(12, 3, 3), (12, 4, 2), (10, 10, 1), (14, 2, 5), (16, 3, 4), (9, 1, 20)])
def test_the_optimized_blts_sensitivity_is_the_worst_pattern_of_the_schema(n, k, b):
    blt = optimize(n, k, b)
    assert blt.sensitivity(n, k, b) == pytest.approx(_brute_force_sensitivity(blt.matrix(n), n, k, b), rel=1e-9)
    c = blt.coefficients(n)
    assert c[0] == 1 and np.all(np.diff(c) <= 1e-12)  # non-increasing: the condition the periodic max rests on


def test_the_streamed_inverse_is_the_inverse_matrix_and_the_loss_its_definition():
    blt = BLT((0.9, 0.5), (0.3, 0.2))
    n = 9
    C = blt.matrix(n)
    assert blt.coefficients(n)[1] == pytest.approx(0.5) and blt.coefficients(n)[3] == pytest.approx(
        0.3 * 0.81 + 0.2 * 0.25)
    z = np.random.default_rng(0).standard_normal((n, 5))
    np.testing.assert_allclose(blt.stream_inverse(z), np.linalg.solve(C, z), atol=1e-12)
    A = np.tril(np.ones((n, n)))
    B = A @ np.linalg.inv(C)
    assert blt.prefix_error(n) == pytest.approx(np.sum(B * B) / n)
    assert blt.loss(n, 2, 4) == pytest.approx(_brute_force_sensitivity(C, n, 2, 4) ** 2 * np.sum(B * B) / n)


def test_optimizing_beats_independent_noise_and_the_tree_leaves_more_error():
    # 60 rounds, every client at most twice, 30 rounds apart
    n, k, b = 60, 2, 30
    blt = optimize(n, k, b)
    # independent noise each round (C = I): sens^2 = k, error = mean prefix length
    independent = k * np.mean(np.arange(1, n + 1))
    assert blt.loss(n, k, b) < 0.3 * independent
    # the prefix-sum workload as its own factor (C = A, "noise the running sum"): sens^2 ~ k n
    assert blt.loss(n, k, b) < 0.3 * BLT((1 - 1e-9,), (1 - 1e-9,)).loss(n, k, b)


def test_bad_parameters_and_schemas_are_refused():
    with pytest.raises(ConfigError, match="theta"):
        BLT((1.2,), (0.1,))
    with pytest.raises(ConfigError, match="as many"):
        BLT((0.5, 0.6), (0.1,))
    with pytest.raises(ConfigError, match="min separation"):
        BLT((0.5,), (0.1,)).sensitivity(10, 2, 0)


def test_schema_of_the_cyclic_schedule_and_rho_of_one_participation_is_the_gaussian_mechanisms():
    # 1,000 clients, 100 a round, 40 rounds: each client every 10 rounds, 4 times
    assert participation_schema(1000, 100, 40) == (4, 10)
    blt, s = blt_for_schedule(1000, 100, 40)
    assert s == pytest.approx(blt.sensitivity(40, 4, 10) ** 2)
    # one round, one participation: C = [1], sensitivity 1, the plain Gaussian mechanism: rho = 1 / (2 z^2),
    # whose RDP at order a is a * rho (dp_accounting's own Gaussian event agrees), so eps agrees too
    import dp_accounting

    blt1, s1 = blt_for_schedule(10, 10, 1)
    assert s1 == pytest.approx(1.0)
    z = 1.3
    rho = s1 / (2 * z * z)
    acc = dp_accounting.rdp.RdpAccountant(orders=[2.0, 8.0, 32.0])
    acc.compose(dp_accounting.GaussianDpEvent(z))
    assert acc._rdp == pytest.approx([a * rho for a in (2.0, 8.0, 32.0)])
    eps = accounting.rho_to_epsilon(rho, 1e-5)
    want = dp_accounting.rdp.RdpAccountant(orders=list(accounting._ORDERS))
    want.compose(dp_accounting.GaussianDpEvent(z))
    assert eps == pytest.approx(want.get_epsilon(1e-5), rel=1e-6)


def _run_query(blt, n, shape, std_mult=1.0, seed=7, state=None, start=0):
    import tensorflow as tf

    from keyboard_lm.federated.blt_query import make_blt_query

    specs = [tf.TensorSpec(shape, tf.float32)]
    q = make_blt_query(blt, clip=1.0, noise_multiplier=std_mult, record_specs=specs, noise_seed=seed)
    state = q.initial_global_state() if state is None else state
    out = []
    for _ in range(start, n):
        sample = q.initial_sample_state([tf.zeros(shape)])
        result, state, _ = q.get_noised_result(sample, state)
        out.append(result[0].numpy())
    return np.array(out), state, q


def test_the_querys_noise_is_c_inverse_of_its_seeded_gaussian_and_resumes_the_same():
    import tensorflow as tf

    blt = BLT((0.9, 0.4), (0.3, 0.25))
    n, shape = 7, [3, 4]
    w, _, _ = _run_query(blt, n, shape, std_mult=2.0)
    # C w is the Gaussian z the query drew: the same stateless draws, std 2 * clip
    z = np.array([2.0 * tf.random.stateless_normal([3, 4], tf.random.experimental.stateless_fold_in(
        tf.constant([7, t], tf.int64), 0)).numpy() for t in range(n)])
    np.testing.assert_allclose(np.tensordot(blt.matrix(n), w, axes=1), z, rtol=1e-5, atol=1e-5)
    # stopped after 4 rounds and resumed from the state (as a checkpoint holds it): the same stream
    first, state, _ = _run_query(blt, 4, shape, std_mult=2.0)
    rest, _, _ = _run_query(blt, n, shape, std_mult=2.0, state=state, start=4)
    np.testing.assert_allclose(np.concatenate([first, rest]), w, rtol=1e-6)


def test_the_querys_noise_covariance_matches_the_mechanisms_matrix():
    blt = BLT((0.8, 0.3), (0.35, 0.2))
    n = 5
    w, _, _ = _run_query(blt, n, [40000], std_mult=1.5, seed=3)  # 40,000 independent coordinates
    want = 1.5 ** 2 * np.linalg.inv(blt.matrix(n)) @ np.linalg.inv(blt.matrix(n)).T
    np.testing.assert_allclose(np.cov(w), want, atol=0.06)
    assert np.cov(w)[1, 0] < -0.2  # the correlation is there (C^-1 has negative off-diagonals)


def test_the_query_clips_each_record_to_the_clip():
    import tensorflow as tf

    from keyboard_lm.federated.blt_query import make_blt_query

    q = make_blt_query(BLT((0.5,), (0.1,)), clip=2.0, noise_multiplier=0.0,
                       record_specs=[tf.TensorSpec([2], tf.float32)])
    params = q.derive_sample_params(q.initial_global_state())
    clipped = q.preprocess_record(params, [tf.constant([30.0, 40.0])])
    np.testing.assert_allclose(clipped[0].numpy(), [1.2, 1.6], rtol=1e-6)
    assert math.isclose(float(tf.norm(clipped[0])), 2.0, rel_tol=1e-6)


def test_a_blt_dp_run_accounts_its_own_matrix_and_calibrates_to_the_target():
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.dp_run import DPRun
    from keyboard_lm.privacy.config import DPOptions

    ids = [f"c{i:04d}" for i in range(1000)]
    config = FederatedConfig(clients_per_round=100, rounds=40, server_optimizer="sgd")
    run = DPRun(DPOptions("blt", target_epsilon=5.0, clip=0.1), ids, config)
    info = run.info(40)
    assert info["mechanism"] == "blt" and info["blt_buffers"] == len(info["blt"]["theta"])
    k, b = participation_schema(1000, 100, 40)
    s = run.blt.sensitivity(40, k, b) ** 2
    assert info["rho"] == pytest.approx(s / (2 * info["noise_multiplier"] ** 2))
    assert info["epsilon"] == pytest.approx(5.0, rel=1e-3)  # the calibrated z meets the target after 40 rounds
    assert "BLT-DP-FTRL" in run.summary(40) and run.schedule.min_separation == b - 1
    # a resumed run keeps the matrix it started with
    again = DPRun(DPOptions.from_record(info), ids, config)
    assert again.blt == run.blt and again.info(40)["rho"] == pytest.approx(info["rho"])


@pytest.mark.parametrize("kwargs,word", [
    (dict(mechanism="blt", noise_multiplier=1.0, clip=0.1, tree_restart="epoch"), "--dp ftrl only"),
    (dict(mechanism="ftrl", noise_multiplier=1.0, clip=0.1, blt={"theta": [0.5], "omega": [0.1]}), "--dp blt only"),
    (dict(mechanism="blt", noise_multiplier=1.0, clip_quantile=0.5), "--dp fedavg"),
    (dict(mechanism="blt", noise_multiplier=1.0, clip=0.1, sampling="poisson"), "schedule"),
])
def test_blt_options_refuse_what_does_not_apply(kwargs, word):
    from keyboard_lm.privacy.config import DPOptions

    with pytest.raises(ConfigError, match=word):
        DPOptions(**kwargs)


def test_train_dp_blt_runs_in_tff_resumes_and_records_the_matrix(tmp_path):
    import json

    from keyboard_lm.cli import main

    out = str(tmp_path / "run")
    small = ["--units", "16", "--embedding-dim", "8", "--vocab-size", "200", "--max-batches", "2",
             "--clients-per-round", "20", "--eval-every", "2"]
    assert main(["train", "--dp", "blt", "--dp-noise-multiplier", "1.0", "--dp-clip", "0.5", "--rounds", "2",
                 "--out", out, *small]) == 0
    first = json.loads(open(f"{out}/run.json").read())["differential_privacy"]
    assert main(["train", "--resume", "--rounds", "3", "--out", out]) == 0
    dp = json.loads(open(f"{out}/run.json").read())["differential_privacy"]
    assert dp["mechanism"] == "blt" and dp["blt"] == first["blt"] and dp["rounds"] == 3
    assert dp["rho"] > first["rho"] and dp["epsilon"] > first["epsilon"]
    assert [p for p in dp["profile"] if p["label"] == "Gboard's"][0]["delta"] == 1e-10


def test_privacy_plan_plans_blt_with_its_rho():
    from keyboard_lm.privacy.planner import plan

    rows = plan(10.0, 6.5e-5, 6387, 40, mechanism="blt", clients_per_round=[100])
    tree = plan(10.0, 6.5e-5, 6387, 40, mechanism="ftrl", clients_per_round=[100])
    r, t = rows[0], tree[0]
    assert r["rho"] == pytest.approx(r["blt_sensitivity"] / (2 * r["noise_multiplier"] ** 2))
    # the same rho (the same eps) for both; BLT's single-participation sensitivity is below the tree's log2 T
    assert r["rho"] == pytest.approx(t["rho"], rel=1e-2) and r["noise_multiplier"] < t["noise_multiplier"]

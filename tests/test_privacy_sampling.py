"""Client sampling as the accountant assumes it: Poisson, fixed-size, and the DP-FTRL schedule."""

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import sampling

IDS = [f"client{i:04d}" for i in range(500)]


def test_poisson_rate_is_close_to_q_over_many_rounds():
    q, rounds = 0.02, 400
    sizes = [len(sampling.poisson_sample(IDS, q, seed=1, round_num=r)) for r in range(rounds)]
    # Mean cohort qN = 10; its standard error over 400 rounds is sqrt(qN(1-q) / 400) ~ 0.16.
    assert np.mean(sizes) == pytest.approx(q * len(IDS), abs=0.8)
    assert len(set(sizes)) > 3  # the cohort size varies, as Poisson sampling does
    hits = np.zeros(len(IDS))
    for r in range(rounds):
        for cid in sampling.poisson_sample(IDS, q, seed=1, round_num=r):
            hits[IDS.index(cid)] += 1
    assert hits.mean() / rounds == pytest.approx(q, rel=0.1)


def test_poisson_round_may_be_empty_and_returns_an_empty_list():
    sizes = [len(sampling.poisson_sample(IDS[:20], 0.02, seed=0, round_num=r)) for r in range(200)]
    assert 0 in sizes  # (1 - 0.02)^20 = 0.67: most rounds are empty


def test_fixed_size_sample_is_exact_and_without_replacement():
    for r in range(50):
        picked = sampling.fixed_size_sample(IDS, 17, seed=4, round_num=r)
        assert len(picked) == len(set(picked)) == 17
        assert picked == sorted(picked, key=IDS.index)


def test_samples_are_deterministic_under_seed_and_differ_across_rounds_and_seeds():
    assert sampling.poisson_sample(IDS, 0.05, 7, 3) == sampling.poisson_sample(IDS, 0.05, 7, 3)
    assert sampling.fixed_size_sample(IDS, 9, 7, 3) == sampling.fixed_size_sample(IDS, 9, 7, 3)
    assert sampling.fixed_size_sample(IDS, 9, 7, 3) != sampling.fixed_size_sample(IDS, 9, 7, 4)
    assert sampling.fixed_size_sample(IDS, 9, 7, 3) != sampling.fixed_size_sample(IDS, 9, 8, 3)
    assert sampling.ftrl_schedule(IDS, 30, 40, seed=2) == sampling.ftrl_schedule(IDS, 30, 40, seed=2)
    assert sampling.ftrl_schedule(IDS, 30, 40, seed=2) != sampling.ftrl_schedule(IDS, 30, 40, seed=3)


def _participations(schedule):
    rounds = {}
    for t, cohort in enumerate(schedule.rounds):
        for cid in cohort:
            rounds.setdefault(cid, []).append(t)
    return rounds


@pytest.mark.parametrize("n,k,t", [(500, 30, 100), (500, 7, 300), (37, 5, 100), (10, 10, 6), (500, 100, 3)])
def test_ftrl_schedule_respects_max_participations_and_min_separation(n, k, t):
    schedule = sampling.ftrl_schedule(IDS[:n], k, t, seed=5)
    assert len(schedule.rounds) == t
    assert all(len(c) == len(set(c)) == k for c in schedule.rounds)
    seen = _participations(schedule)
    assert max(len(r) for r in seen.values()) == schedule.max_participations
    gaps = [b - a - 1 for r in seen.values() for a, b in zip(r, r[1:])]
    if gaps:  # tensorflow_privacy's convention: rounds strictly between two participations
        assert min(gaps) >= schedule.min_separation == n // k - 1
    assert (schedule.max_participations, schedule.min_separation) == sampling.ftrl_participation(n, k, t)


def _brute_tree_sensitivity(schedule, t):
    """Max over clients of sum over the dyadic nodes inside [0, T) of (participations under it)^2."""
    worst = 0
    for rounds in _participations(schedule).values():
        total = 0
        for level in range(t.bit_length()):
            counts = {}
            for r in rounds:
                if ((r >> level) + 1) << level <= t:
                    counts[r >> level] = counts.get(r >> level, 0) + 1
            total += sum(c * c for c in counts.values())
        worst = max(worst, total)
    return worst


@pytest.mark.parametrize("n,k,t", [(10, 3, 7), (50, 7, 40), (37, 5, 100), (20, 20, 16), (101, 10, 200),
                                   (1000, 50, 60), (500, 1, 300)])
def test_tree_sensitivity_is_exact_for_the_schedule(n, k, t):
    schedule = sampling.ftrl_schedule([str(i) for i in range(n)], k, t, seed=0)
    assert sampling.tree_sensitivity(n, k, t) == _brute_tree_sensitivity(schedule, t)


def test_single_participation_sensitivity_is_kairouz_closed_form():
    # ceil(log2(T + 1)) nodes hold the first leaf (Kairouz et al. 2021, App. D).
    for t in (1, 2, 3, 4, 7, 8, 2000, 3000):
        assert sampling.tree_sensitivity(10 * t, 10, t) == np.ceil(np.log2(t + 1))


@pytest.mark.parametrize("call,word", [
    pytest.param(lambda: sampling.poisson_sample(IDS, 0.0, 0, 1), "probability", id="poisson_q_zero"),
    pytest.param(lambda: sampling.poisson_sample(IDS, 1.5, 0, 1), "probability", id="poisson_q_above_one"),
    pytest.param(lambda: sampling.fixed_size_sample(IDS, 501, 0, 1), "population", id="fixed_k_above_population"),
    pytest.param(lambda: sampling.ftrl_schedule(IDS, 600, 10, 0), "population", id="ftrl_cohort_above_population"),
    pytest.param(lambda: sampling.ftrl_schedule(IDS, 10, 0, 0), "rounds", id="ftrl_no_rounds"),
    pytest.param(lambda: sampling.fixed_size_sample(IDS, 5, -1, 1), "seed", id="negative_seed"),
])
def test_refuses_bad_sampling_settings(call, word):
    with pytest.raises(ConfigError, match=word):
        call()


def _tensorflow_privacy_tree_accountant():
    """tensorflow_privacy's tree accountant module alone (numpy + dp_accounting).

    ``import tensorflow_privacy`` would import TensorFlow and every DP query
    first; the accountant module needs neither.
    """
    import importlib.util
    import os

    root = os.path.dirname(importlib.util.find_spec("tensorflow_privacy").origin)
    spec = importlib.util.spec_from_file_location(
        "_tree_aggregation_accountant", os.path.join(root, "privacy", "analysis", "tree_aggregation_accountant.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("n,k,t", [(50, 7, 40), (37, 5, 100), (64, 8, 33), (1000, 50, 60)])
def test_tree_sensitivity_never_exceeds_tensorflow_privacy_worst_case(n, k, t):
    """compute_zcdp_single_tree bounds any schedule with the same (participations, separation);
    ours is one such schedule.  Small cases only: the bound's search takes minutes at T = 2000."""
    tree = _tensorflow_privacy_tree_accountant()
    max_part, min_sep = sampling.ftrl_participation(n, k, t)
    bound = 2 * tree.compute_zcdp_single_tree(1.0, t, max_part, min_sep)  # rho = S / (2 z^2) at z = 1
    assert sampling.tree_sensitivity(n, k, t) <= bound + 1e-9

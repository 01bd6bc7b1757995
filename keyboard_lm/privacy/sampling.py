"""Client sampling that matches the privacy accountant (pure numpy, no TensorFlow).

An (eps, delta) guarantee holds only for the sampling the accountant assumed:

- ``poisson_sample``: each client joins a round independently with
  probability q, the ``PoissonSampledDpEvent`` of DP-FedAvg (McMahan et al.
  2018, add/remove-one neighbours).  The cohort size varies and may be 0.
- ``fixed_size_sample``: exactly k clients without replacement, the
  ``SampledWithoutReplacementDpEvent`` (replace-one neighbours).
- ``ftrl_schedule``: DP-FTRL needs no sampling at all but a participation
  pattern with at most ``max_participations`` per client, at least
  ``min_separation`` rounds between two of them (Kairouz et al. 2021, App. D).
  ``tree_sensitivity`` is the worst client's squared sensitivity summed over
  the tree's nodes under that schedule: rho = S / (2 z^2); with tree
  restarts, summed over every tree the client is in.

Every draw depends only on (seed, round), so a resumed run samples what an
uninterrupted one would have.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from keyboard_lm.errors import ConfigError

# Stream tags: each sampler draws from its own stream of (seed, round), so a
# Poisson and a fixed-size draw of the same round are independent of each
# other and of the non-DP trainer's ``sample_clients``.
_POISSON, _FIXED, _SCHEDULE = 1, 2, 3


def _rng(seed: int, *key: int) -> np.random.Generator:
    if seed < 0:
        raise ConfigError(f"sampling seed must be >= 0, got {seed}")
    return np.random.default_rng([seed, *key])


def poisson_sample(client_ids: Sequence[str], q: float, seed: int, round_num: int) -> list[str]:
    """Each client independently with probability ``q`` (Poisson sampling).

    The result may be empty (probability (1 - q)^N, about e^-K for an expected
    cohort K = qN).  An empty round is returned as ``[]``: the caller skips
    the TFF round (TFF cannot aggregate over zero clients) but counts it as a
    round for accounting, since the accountant composes T sampled Gaussians
    whatever each sample held.  Skipping does reveal that the round was empty,
    an event the Poisson accountant does not model; keep K above ~20 so that
    it practically never happens.

    Args:
      client_ids: the population (order fixes which id each draw picks).
      q: sampling probability in (0, 1].
      seed, round_num: the draw depends only on these.
    Returns:
      The sampled ids, in population order.
    """
    if not 0 < q <= 1:
        raise ConfigError(f"Poisson sampling probability must be in (0, 1], got {q}")
    picked = _rng(seed, round_num, _POISSON).random(len(client_ids)) < q
    return [client_ids[i] for i in np.flatnonzero(picked)]


def fixed_size_sample(client_ids: Sequence[str], k: int, seed: int, round_num: int) -> list[str]:
    """Exactly ``k`` distinct clients, uniformly without replacement, in population order."""
    if not 1 <= k <= len(client_ids):
        raise ConfigError(f"fixed-size sampling needs 1 <= k <= population ({len(client_ids)}), got {k}")
    picks = _rng(seed, round_num, _FIXED).choice(len(client_ids), size=k, replace=False)
    return [client_ids[i] for i in sorted(picks)]


class Schedule(NamedTuple):
    """A DP-FTRL participation schedule and the two numbers its accounting needs.

    ``min_separation`` follows tensorflow_privacy's ``compute_zcdp_single_tree``:
    rounds strictly between two participations (rounds x and y give y - x - 1).
    """

    rounds: list[list[str]]
    max_participations: int
    min_separation: int


def _check_schedule(population: int, clients_per_round: int, rounds: int) -> None:
    if population < 1:
        raise ConfigError(f"population must be >= 1, got {population}")
    if not 1 <= clients_per_round <= population:
        raise ConfigError(f"clients per round ({clients_per_round}) must be between 1 and the "
                          f"population ({population})")
    if rounds < 1:
        raise ConfigError(f"rounds must be >= 1, got {rounds}")


def ftrl_participation(population: int, clients_per_round: int, rounds: int) -> tuple[int, int]:
    """(max participations, min separation) of ``ftrl_schedule`` without building it.

    The schedule walks one fixed permutation cyclically, K clients a round:
    the client at position p joins rounds floor((p + jN) / K), so at most
    ceil(TK / N) times, and consecutive rounds differ by at least floor(N / K)
    (floor(a + b) - floor(a) >= floor(b)), i.e. N // K - 1 rounds between.
    """
    _check_schedule(population, clients_per_round, rounds)
    return math.ceil(rounds * clients_per_round / population), population // clients_per_round - 1


def ftrl_schedule(client_ids: Sequence[str], clients_per_round: int, rounds: int, seed: int) -> Schedule:
    """Per-round cohorts for DP-FTRL: shuffle once, then cycle through the population.

    Reshuffling every epoch could put a client at the end of one epoch and the
    start of the next; one fixed order keeps every client N // K rounds from
    its previous turn (Kairouz et al. 2021, "multiple passes" with a minimum
    separation).

    Returns:
      ``Schedule(rounds, max_participations, min_separation)``, cohorts in
      population order.
    """
    n, k = len(client_ids), clients_per_round
    max_part, min_sep = ftrl_participation(n, k, rounds)
    order = _rng(seed, _SCHEDULE).permutation(n)
    cohorts = []
    for t in range(rounds):
        positions = (t * k + np.arange(k)) % n
        cohorts.append([client_ids[i] for i in sorted(order[positions])])
    return Schedule(cohorts, max_part, min_sep)


def epoch_rounds(population: int, clients_per_round: int) -> int:
    """N // K: the most consecutive rounds of ``ftrl_schedule`` in which no client appears twice.

    Any N // K consecutive rounds take N // K * K <= N consecutive positions
    of the one permutation, so a tree restarted every N // K rounds ("every
    epoch") holds each client at most once.  A period of ceil(N / K) would
    let the permutation wrap around inside a tree when K does not divide N.
    """
    _check_schedule(population, clients_per_round, 1)
    return population // clients_per_round


def restart_period(tree_restart: str | int | None, population: int, clients_per_round: int) -> int | None:
    """Rounds per tree of a DP-FTRL restart setting: ``epoch`` -> ``epoch_rounds``, a number -> itself,
    ``none`` (or None) -> None (one tree)."""
    if tree_restart in (None, "none"):
        return None
    if tree_restart == "epoch":
        return epoch_rounds(population, clients_per_round)
    return int(tree_restart)


def tree_sensitivity(population: int, clients_per_round: int, rounds: int,
                     restart_period: int | None = None) -> float:
    """Worst client's sum over tree nodes of (its participations under the node)^2.

    The tree of DP-FTRL has one node per dyadic interval of rounds
    [i 2^l, (i + 1) 2^l) inside [0, T); each node's noisy sum changes by
    (count x clip) when a client is removed, so the Gaussian tree is
    rho-zCDP with rho = S / (2 z^2) (Kairouz et al. 2021, App. D).  This is
    exact for ``ftrl_schedule`` (every client's rounds are known in advance);
    tensorflow_privacy's ``compute_zcdp_single_tree`` bounds the worst pattern
    of any schedule with the same (max participations, min separation), which
    is never smaller and takes minutes at T = 2000.  One participation gives
    ceil(log2(T + 1)), the closed form.

    With ``restart_period`` P the rounds form trees [jP, (j + 1)P) (the last
    one shorter), each with fresh noise and its own dyadic nodes counted from
    its first round, and S sums over all of a client's trees (the whole run
    is one Gaussian mechanism over every tree's nodes; zCDP composes by
    adding rho, Bun and Steinke 2016).  With at most one
    participation per tree (P <= N // K, ``epoch_rounds``) this is at most the
    sum of the trees' depths ceil(log2(L_j + 1)), tensorflow_privacy's
    ``compute_rdp_tree_restart``, and equal to it when one client opens every
    tree (K divides N and P = N // K).
    """
    n, k, t_total = population, clients_per_round, rounds
    max_part, _ = ftrl_participation(n, k, t_total)
    if restart_period is not None and restart_period < 1:
        raise ConfigError(f"tree restart period must be >= 1 round, got {restart_period}")
    period = t_total if restart_period is None else min(restart_period, t_total)
    if max_part <= 1:
        # The client of round 0 sits at the first leaf of the first (longest) tree.
        return float(period.bit_length())  # == ceil(log2(period + 1))
    # Position p = aK + b joins rounds a + floor((b + jN) / K); over b the
    # pattern changes only where b + (jN mod K) reaches K, so these offsets b
    # (and every block a) cover all distinct patterns: about max_part * N / K rows.
    offsets = sorted({0} | {(-j * n) % k for j in range(1, max_part)})
    p = (np.arange((n - 1) // k + 1)[:, None] * k + np.asarray(offsets)[None, :]).ravel()
    p = p[p < n]
    r = (p[:, None] + np.arange(max_part)[None, :] * n) // k  # [patterns, max_part], ascending per row
    tree = r // period
    leaf = r - tree * period  # the round's place in its own tree
    length = np.minimum(period, t_total - tree * period)  # that tree's rounds (<= 0 past round T)
    index = np.arange(max_part)[None, :]
    worst = np.zeros(len(p))
    for level in range(period.bit_length()):
        node = leaf >> level
        # Only complete intervals of a tree are nodes (rounds >= T fall in none); ok is
        # the same for every member of one (tree, node) run.
        ok = ((node + 1) << level) <= length
        new_run = np.ones_like(node, dtype=bool)
        new_run[:, 1:] = (node[:, 1:] != node[:, :-1]) | (tree[:, 1:] != tree[:, :-1])
        run_start = np.maximum.accumulate(np.where(new_run, index, 0), axis=1)
        # count^2 of a node = sum over its members of (2 x members before it + 1).
        worst += np.where(ok, 2 * (index - run_start) + 1, 0).sum(axis=1)
    return float(worst.max())

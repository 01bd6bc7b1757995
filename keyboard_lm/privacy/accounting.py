"""Privacy accounting with dp_accounting 0.4.3 (the version TFF pins).

DP-FedAvg: T-fold composition of a Poisson-subsampled Gaussian (RDP accountant,
add/remove-one) or a fixed-size sample without replacement (RDP accountant,
replace-one). DP-FTRL: rho-zCDP of the tree for one participation per client,
ceil(log2(T+1)) / (2 z^2) (Kairouz et al. 2021, App. D), converted to (eps, delta)
through RDP of order a, rho * a; with several participations, or tree restarts,
rho = S / (2 z^2) with S from ``sampling.tree_sensitivity``.  Each ``*_epsilons``
gives eps at several deltas from one composition (the run's privacy profile).
"""

import math

import dp_accounting
import numpy as np

from keyboard_lm.errors import ConfigError

# zCDP -> (eps, delta): RDP of order a is rho * a exactly, so any grid is valid.
_ORDERS = tuple(np.concatenate([np.linspace(1.01, 10, 200), np.linspace(10.1, 1024, 400)]))
# Sampled Gaussian: dp_accounting's own grid (fractional orders only up to
# 10.9, then integers to 63 and 128..1024), as the planner uses.  Its series
# for fractional orders above ~11 loses precision at large z and returned
# negative divergences on a fine fractional grid (z = 30, q = 0.5, T = 100
# raised "Renyi divergence cannot be negative").
_SAMPLED_ORDERS = tuple(dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS)


def _check(epsilon=None, delta=None, noise_multiplier=None):
    if delta is not None and not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1), got {delta}")
    if noise_multiplier is not None and not noise_multiplier >= 0:
        raise ConfigError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    if epsilon is not None and not epsilon > 0:
        raise ConfigError(f"epsilon must be > 0, got {epsilon}")


def fedavg_event(noise_multiplier, sampling_probability, rounds, sampling="poisson", population=None):
    """The DpEvent of T rounds of DP-FedAvg under the given client sampling."""
    _check(noise_multiplier=noise_multiplier)
    gauss = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling == "poisson":
        one = dp_accounting.PoissonSampledDpEvent(sampling_probability, gauss)
    elif sampling == "fixed":
        k = int(round(sampling_probability * population))
        one = dp_accounting.SampledWithoutReplacementDpEvent(population, k, gauss)
    else:
        raise ConfigError(f"unknown sampling {sampling!r}; use poisson or fixed")
    return dp_accounting.SelfComposedDpEvent(one, rounds)


def fedavg_epsilon(noise_multiplier, sampling_probability, rounds, delta, sampling="poisson", population=None):
    """eps at ``delta`` after ``rounds`` rounds of DP-FedAvg (RDP accountant)."""
    return fedavg_epsilons(noise_multiplier, sampling_probability, rounds, [delta], sampling, population)[0]


def fedavg_epsilons(noise_multiplier, sampling_probability, rounds, deltas, sampling="poisson", population=None):
    """eps at each of ``deltas`` after ``rounds`` rounds of DP-FedAvg: one composition, one eps per delta."""
    for delta in deltas:
        _check(delta=delta)
    if rounds == 0:
        return [0.0 for _ in deltas]
    if noise_multiplier == 0:
        return [math.inf for _ in deltas]
    relation = (dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE if sampling == "poisson"
                else dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc = dp_accounting.rdp.RdpAccountant(_SAMPLED_ORDERS, relation)
    acc.compose(fedavg_event(noise_multiplier, sampling_probability, rounds, sampling, population))
    return [acc.get_epsilon(delta) for delta in deltas]


def tree_rho_single_participation(noise_multiplier, rounds):
    """zCDP rho of the tree when every client participates at most once."""
    _check(noise_multiplier=noise_multiplier)
    if noise_multiplier == 0:
        return math.inf
    return math.ceil(math.log2(rounds + 1)) / (2.0 * noise_multiplier ** 2)


def rho_to_epsilon(rho, delta):
    """(eps, delta) implied by rho-zCDP, via RDP of order a equal to rho * a."""
    return rho_to_epsilons(rho, [delta])[0]


def rho_to_epsilons(rho, deltas):
    """eps at each of ``deltas`` implied by rho-zCDP (``rho_to_epsilon`` per delta)."""
    for delta in deltas:
        _check(delta=delta)
    if math.isinf(rho):
        return [math.inf for _ in deltas]
    orders = np.asarray(_ORDERS)
    return [float(dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon(orders, rho * orders, delta)[0])
            for delta in deltas]

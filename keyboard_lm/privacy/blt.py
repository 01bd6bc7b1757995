"""Buffered linear Toeplitz (BLT) correlated noise for DP-FTRL (numpy; no TensorFlow).

McMahan, Xu and Zhang 2024 ("Efficient and near-optimal noise generation for
streaming differential privacy") factor the prefix-sum workload A (lower
triangular ones: the model after round t is the sum of the first t noisy
updates) as A = B C with C a lower-triangular Toeplitz matrix whose
coefficients are

    c_0 = 1,   c_j = sum_i omega_i theta_i^(j - 1)   (j >= 1, i = 1..d)

The mechanism releases C x + z, z ~ N(0, sigma^2 I): equivalently each round
adds the noise w = C^-1 z to the clipped sum x_t, so the model (a prefix sum)
carries B z = A C^-1 z. C^-1 z streams with d buffers of model size, w_t =
z_t - sum_i omega_i s_i and then s_i <- theta_i s_i + w_t, because C w = z
reads w_t + sum_{j>=1} c_j w_(t-j) = z_t and s_i holds
sum_{j>=1} theta_i^(j-1) w_(t-j). The tree of Kairouz et al. needs log T
buffers; a BLT with d = 2-5 buffers "essentially matches" the optimal
matrix-factorization mechanism (their claim).

Privacy: a client that takes part in rounds pi changes C x by sum_{t in pi}
C e_t times at most the clip, so the whole run is one Gaussian mechanism
with L2 sensitivity clip * sens(C), sens(C) = max_pi ||C 1_pi||: with noise
std z * clip per coordinate of z, it is rho-zCDP with rho = sens^2 / (2 z^2).
For C >= 0 with non-increasing coefficients the worst pattern packs the
participations as tightly as the participation schema allows (every ``b``
rounds, at most ``k`` of them); ``sensitivity`` takes the largest over every
such periodic pattern, and the tests hold it equal to a brute force over all
patterns on small cases.

Parameters (theta, omega) are chosen for the run's rounds n and schema (k, b)
by minimizing sens(C)^2 ||A C^-1||_F^2 / n, the mean squared error of the
prefix sums at a fixed rho (``optimize``).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from keyboard_lm.config_checks import check_range
from keyboard_lm.errors import ConfigError

#: Buffers of the optimized BLT (the paper's d; each costs one model-size buffer on the server).
BUFFERS = 4


@dataclasses.dataclass(frozen=True)
class BLT:
    """A BLT matrix C: ``theta`` (decays, each in (0, 1)) and ``omega`` (weights, each > 0), d of each."""

    theta: tuple[float, ...]
    omega: tuple[float, ...]

    def __post_init__(self):
        if len(self.theta) != len(self.omega) or not self.theta:
            raise ConfigError(f"a BLT needs as many thetas as omegas (>= 1), got {len(self.theta)} and "
                              f"{len(self.omega)}")
        for i, (theta, omega) in enumerate(zip(self.theta, self.omega)):
            check_range(f"BLT theta[{i}]", theta, 0, 1, low_open=True, high_open=True)
            check_range(f"BLT omega[{i}]", omega, 0, low_open=True)

    def coefficients(self, n: int) -> np.ndarray:
        """c_0 .. c_(n-1) of C."""
        j = np.arange(1, n)
        c = np.ones(n)
        c[1:] = sum(w * t ** (j - 1) for t, w in zip(self.theta, self.omega))
        return c

    def matrix(self, n: int) -> np.ndarray:
        """C as a dense n x n lower-triangular Toeplitz matrix (for tests and small cases)."""
        c = self.coefficients(n)
        i, j = np.indices((n, n))
        return np.where(i >= j, c[np.clip(i - j, 0, n - 1)], 0.0)

    def inverse_coefficients(self, n: int) -> np.ndarray:
        """The coefficients of C^-1 (itself lower-triangular Toeplitz): C^-1 applied to a unit impulse."""
        z = np.zeros(n)
        z[0] = 1.0
        return self.stream_inverse(z)

    def stream_inverse(self, z: np.ndarray) -> np.ndarray:
        """C^-1 z along axis 0, streamed with d buffers as the server does it (the numpy reference)."""
        z = np.asarray(z, np.float64)
        buffers = np.zeros((len(self.theta), *z.shape[1:]))
        out = np.empty_like(z)
        theta = np.asarray(self.theta).reshape(-1, *([1] * (z.ndim - 1)))
        omega = np.asarray(self.omega).reshape(-1, *([1] * (z.ndim - 1)))
        for t in range(len(z)):
            w = z[t] - (omega * buffers).sum(0)
            out[t] = w
            buffers = theta * buffers + w
        return out

    def prefix_error(self, n: int) -> float:
        """||A C^-1||_F^2 / n: the mean, over rounds, of the prefix-sum noise variance per unit of z's."""
        b = np.cumsum(self.inverse_coefficients(n))
        return float(np.sum((n - np.arange(n)) * b * b) / n)

    def sensitivity(self, n: int, max_participations: int, min_separation: int) -> float:
        """sens(C) = max ||C 1_pi|| over periodic patterns pi = {s, s + b, ...} (at most k of them, inside n)."""
        _check_schema(n, max_participations, min_separation)
        c = self.coefficients(n)
        b, k = min_separation, max_participations
        best = 0.0
        for s in range(min(b, n)):
            pattern = np.zeros(n)
            pattern[s::b][:k] = 1.0
            v = np.convolve(pattern, c)[:n]
            best = max(best, float(np.sqrt(np.dot(v, v))))
        return best

    def loss(self, n: int, max_participations: int, min_separation: int) -> float:
        """sens(C)^2 ||A C^-1||_F^2 / n: the mean squared prefix-sum error at a fixed rho (what ``optimize``
        minimizes)."""
        return self.sensitivity(n, max_participations, min_separation) ** 2 * self.prefix_error(n)

    def to_dict(self) -> dict:
        return {"theta": list(self.theta), "omega": list(self.omega)}


def _check_schema(n: int, k: int, b: int) -> None:
    if n < 1 or k < 1 or b < 1:
        raise ConfigError(f"a participation schema needs rounds, max participations and min separation >= 1, "
                          f"got {n}, {k}, {b}")


@functools.lru_cache(maxsize=64)
def optimize(n: int, max_participations: int, min_separation: int, buffers: int = BUFFERS) -> BLT:
    """The BLT of ``buffers`` buffers minimizing ``BLT.loss`` for ``n`` rounds under the (k, b) schema.

    Deterministic, so cached: a run's calibration, its DPRun and the planner's rows ask for the same
    schedule more than once. L-BFGS-B from fixed starting points (decays spread over the scales of n). The search is
    unconstrained through theta = logistic(u) and omega = logistic(v_0) * softmax(v_1..d): so 0 < theta < 1,
    omega > 0 and sum(omega) = c_1 < 1 = c_0, which keeps C's coefficients non-increasing (the condition
    under which ``BLT.sensitivity``'s periodic patterns are the worst ones).
    """
    from scipy.optimize import minimize

    _check_schema(n, max_participations, min_separation)

    def unpack(x):
        theta = np.clip(1.0 / (1.0 + np.exp(-np.clip(x[:buffers], -40, 40))), 1e-9, 1 - 1e-9)
        total = 1.0 / (1.0 + math.exp(-min(max(x[buffers], -40.0), 40.0)))
        shares = np.exp(x[buffers + 1:] - np.max(x[buffers + 1:]))
        omega = np.maximum(total * shares / shares.sum(), 1e-12)
        return tuple(float(t) for t in theta), tuple(float(w) for w in omega)

    def objective(x):
        theta, omega = unpack(x)
        with np.errstate(all="ignore"):
            value = BLT(theta, omega).loss(n, max_participations, min_separation)
        return math.log(value) if math.isfinite(value) and value > 0 else 1e6

    best = None
    scales = np.geomspace(2.0, max(4.0, float(n)), buffers)  # decay time constants from 2 rounds to n
    theta0 = 1.0 - 1.0 / scales
    for total0 in (0.3, 0.6):
        x0 = np.concatenate([np.log(theta0 / (1 - theta0)), [math.log(total0 / (1 - total0))], np.zeros(buffers)])
        result = minimize(objective, x0, method="L-BFGS-B", options={"maxiter": 300})
        if best is None or result.fun < best.fun:
            best = result
    return BLT(*unpack(best.x))


def participation_schema(population: int, clients_per_round: int, rounds: int) -> tuple[int, int]:
    """(k, b) of DP-FTRL's cyclic schedule: at most k participations, any two at least b rounds apart.

    ``sampling.ftrl_participation`` gives the rounds *between* two participations (N // K - 1); b counts
    from one participation to the next (N // K).
    """
    from keyboard_lm.privacy.sampling import ftrl_participation

    k, between = ftrl_participation(population, clients_per_round, rounds)
    return k, between + 1


def blt_for_schedule(population: int, clients_per_round: int, rounds: int) -> tuple[BLT, float]:
    """The optimized BLT of a DP-FTRL run and its squared sensitivity S (rho = S / (2 z^2), as the tree's)."""
    k, b = participation_schema(population, clients_per_round, rounds)
    blt = optimize(rounds, k, b)
    return blt, blt.sensitivity(rounds, k, b) ** 2

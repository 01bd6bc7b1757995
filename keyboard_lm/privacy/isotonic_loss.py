"""McKenna et al. 2025's way of fitting the loss of DP training: monotone tables, interpolated in log space.

McKenna et al. ("Scaling Laws for Differentially Private Language Models") do not fit a formula. For each
model size they smooth every run's loss with a rolling average, fit the loss as a function of iterations and
of the noise-batch ratio by isotonic regression (non-increasing in iterations, non-decreasing in the
ratio), and predict any (size, iterations, ratio) by interpolating the fitted values in log space over the
three. This module does that with the project's runs (``loss_model.read_run``: the rolling average of
``SMOOTH_ROUNDS`` rounds), so it can be put beside the parametric form of ``loss_model`` on the same held-out
runs:

- per size, a table over the runs' rounds (a common grid) and their distinct ratios (runs of one ratio
  averaged), made monotone in both by alternating one-dimensional isotonic regressions (pool adjacent
  violators) until neither changes it: non-increasing in rounds (what the best round so far can reach:
  DP-FTRL's loss can climb late at a high ratio, and a table monotone in rounds reads as the best checkpoint),
  non-decreasing in the ratio;
- a prediction interpolates bilinearly in (log rounds, log(ratio + ``RATIO_FLOOR``)) (the floor lets a
  noiseless run, ratio 0, sit on the same axis), clamped at the table's edges (no extrapolation beyond the
  runs: ``outside`` says when a query lies there), and linearly in log(parameters) between the two nearest
  sizes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from keyboard_lm.errors import ConfigError

#: Added to the noise-batch ratio before its log: below every noisy run's ratio here (~5e-4 and up).
RATIO_FLOOR = 1e-5


def pava(y, decreasing: bool = False) -> np.ndarray:
    """Least-squares isotonic fit of ``y`` (non-decreasing, or non-increasing with ``decreasing``)."""
    y = np.asarray(y, float)
    if decreasing:
        return -pava(-y)
    blocks: list[list[float]] = []  # [mean, count]
    for v in y:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, n2 = blocks.pop()
            m1, n1 = blocks.pop()
            blocks.append([(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2])
    return np.concatenate([np.full(int(n), m) for m, n in blocks])


def monotone_table(table: np.ndarray, iterations: int = 200) -> np.ndarray:
    """``table[ratio, round]`` made non-decreasing along ratios and non-increasing along rounds."""
    t = np.array(table, float)
    for _ in range(iterations):
        before = t.copy()
        t = np.apply_along_axis(pava, 1, t, decreasing=True)
        t = np.apply_along_axis(pava, 0, t)
        if np.allclose(t, before, atol=1e-10):
            break
    return t


@dataclasses.dataclass
class SizeTable:
    params: int
    rounds: list[int]
    ratios: list[float]
    loss: list[list[float]]  # [ratio][round]

    def predict(self, rounds: float, ratio: float) -> float:
        x = np.log(np.asarray(self.rounds, float))
        y = np.log(np.asarray(self.ratios, float) + RATIO_FLOOR)
        table = np.asarray(self.loss)
        xq = float(np.clip(math.log(rounds), x[0], x[-1]))
        yq = float(np.clip(math.log(ratio + RATIO_FLOOR), y[0], y[-1]))
        along_rounds = np.array([np.interp(xq, x, row) for row in table])  # one value per ratio
        return float(np.interp(yq, y, along_rounds)) if len(y) > 1 else float(along_rounds[0])


@dataclasses.dataclass
class IsotonicLossModel:
    """McKenna et al.'s semi-parametric loss model (see the module docstring)."""

    tables: list[SizeTable]
    fitted_on: list[str]

    def predict(self, params, rounds, ratio) -> float:
        sizes = sorted(self.tables, key=lambda s: s.params)
        p = float(params)
        if len(sizes) == 1 or p <= sizes[0].params:
            return sizes[0].predict(rounds, ratio)
        if p >= sizes[-1].params:
            return sizes[-1].predict(rounds, ratio)
        hi = next(i for i, s in enumerate(sizes) if s.params >= p)
        a, b = sizes[hi - 1], sizes[hi]
        w = (math.log(p) - math.log(a.params)) / (math.log(b.params) - math.log(a.params))
        return (1 - w) * a.predict(rounds, ratio) + w * b.predict(rounds, ratio)

    def outside(self, params, rounds, ratio) -> list[str]:
        """What of the query lies beyond the fitted runs (the prediction is then the edge's value)."""
        out = []
        ps = [s.params for s in self.tables]
        if not min(ps) <= params <= max(ps):
            out.append(f"P = {params:,} outside {min(ps):,}..{max(ps):,}")
        if rounds > max(max(s.rounds) for s in self.tables):
            out.append(f"T > {max(max(s.rounds) for s in self.tables)}")
        if ratio > max(max(s.ratios) for s in self.tables) * 1.0001:
            out.append(f"z*C/K > {max(max(s.ratios) for s in self.tables):.3g}")
        return out


def fit_isotonic(curves) -> IsotonicLossModel:
    """The monotone tables of ``curves`` (``loss_model.RunCurve``), one per model size."""
    if len(curves) < 2:
        raise ConfigError(f"the isotonic loss model needs at least 2 runs, got {len(curves)}")
    starts = {c.start for c in curves}
    if len(starts) > 1:
        raise ConfigError("the runs start from different weights: fit one loss model per start")
    tables = []
    for params in sorted({c.params for c in curves}):
        runs = [c for c in curves if c.params == params]
        grid = sorted({t for c in runs for t in c.rounds})
        ratios = sorted({round(c.ratio, 12) for c in runs})
        table = np.full((len(ratios), len(grid)), np.nan)
        for j, r in enumerate(ratios):
            same = [c for c in runs if round(c.ratio, 12) == r]
            # each run on the common grid (no value past its last round), runs of one ratio averaged
            rows = np.array([np.where(np.asarray(grid) <= c.rounds[-1], np.interp(grid, c.rounds, c.loss), np.nan)
                             for c in same])
            with np.errstate(all="ignore"):
                table[j] = np.nanmean(rows, axis=0)
        # rounds some runs did not reach: carried from their last value (the table must be complete)
        for j in range(len(ratios)):
            last = np.where(np.isfinite(table[j]))[0]
            table[j, last[-1] + 1:] = table[j, last[-1]]
        tables.append(SizeTable(params, grid, ratios, monotone_table(table).tolist()))
    return IsotonicLossModel(tables, [c.name for c in curves])


def leave_one_out_isotonic(curves) -> list[dict]:
    """Each run's final smoothed loss predicted by the isotonic model of the others (same keys as
    ``loss_model.leave_one_out``'s entries)."""
    out = []
    for i, c in enumerate(curves):
        rest = curves[:i] + curves[i + 1:]
        if c.params not in {x.params for x in rest} or len(rest) < 2:
            continue
        model = fit_isotonic(rest)
        predicted = model.predict(c.params, c.rounds[-1], c.ratio)
        constant = float(np.mean([x.loss[-1] for x in rest]))
        out.append({"run": c.name, "params": c.params, "clients_per_round": c.clients_per_round,
                    "noise_multiplier": c.noise_multiplier, "ratio": c.ratio, "rounds": c.rounds[-1],
                    "measured": c.loss[-1], "predicted": predicted,
                    "relative_error": (predicted - c.loss[-1]) / c.loss[-1],
                    "constant_relative_error": (constant - c.loss[-1]) / c.loss[-1],
                    "outside": model.outside(c.params, c.rounds[-1], c.ratio)})
    return out

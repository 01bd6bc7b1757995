"""A loss model for DP federated training, fitted to the project's own runs (McKenna et al. 2025's method).

McKenna et al. ("Scaling Laws for Differentially Private Language Models")
fit the loss of DP training as a function of model size, training steps and
the noise-batch ratio, and then choose the model size, batch and steps that
minimise the predicted loss under a privacy and a compute budget. At this
project's scale the same idea is a four-term form, fitted by least squares to
the smoothed training loss of every round of every run:

    L(P, T, r) = E + A (P / 1e6)^-alpha + B T^-beta + G (1000 r)^gamma T^eta

P parameters, T rounds (server steps), r = z C / K the noise-batch ratio (the
noise standard deviation on the averaged update). The noise term grows with
the rounds (T^eta): DP-FTRL's model carries the running sum of every round's
noise, and at a high ratio the project's runs from the base climb in loss as
the rounds go on, which a noise term fixed in T cannot follow. McKenna et
al.'s own fits are richer (a semi-parametric table over ratio and steps per
size); with the runs this machine can afford, a term per factor is what the
data can pin down, and the held-out error says how far it can be trusted.

Each run also gives its cost: seconds per client-step (a client's local
training in a round), measured on the machine that ran it, so a budget in
hours converts to client-steps per model size; and tokens per client-step
(the examples its clients trained on, times the sequence length), so a budget
in FLOPs does too, at McKenna et al.'s 6 x parameters x tokens. ``compute_plan`` ranks the sizes and
cohorts a budget buys by the loss this model predicts.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os

import numpy as np

from keyboard_lm.errors import ConfigError

FORM = "L = E + A (P/1e6)^-alpha + B T^-beta + G (1000 r)^gamma T^eta"
NAMES = ("E", "A", "alpha", "B", "beta", "G", "gamma", "eta")
SMOOTH_ROUNDS = 5  # the training loss of a round is its clients' mean: averaged over this many rounds
SKIP_ROUNDS = 5  # the first rounds (loss still near log V) tell little about the trend


@dataclasses.dataclass
class RunCurve:
    """What one run contributes: its setting, its smoothed loss per round and its cost."""

    name: str
    params: int
    units: int
    vocab_size: int
    clients_per_round: int
    noise_multiplier: float
    clip: float
    rounds: list[int]
    loss: list[float]  # smoothed training loss after each round in ``rounds``
    seconds_per_client_step: float
    start: str = "random"
    tokens_per_client_step: float = 0.0  # "random", or the warm start's name and the first 12 hex of its weights' sha256

    @property
    def ratio(self) -> float:
        return self.noise_multiplier * self.clip / self.clients_per_round


def read_run(run_dir: str) -> RunCurve:
    """A DP run's setting (run.json) and its smoothed training-loss curve (metrics.csv)."""
    from keyboard_lm.models.run_dir import RunRecord

    name = os.path.basename(os.path.normpath(run_dir))
    try:
        record = RunRecord.read(run_dir)
        with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (ConfigError, OSError, ValueError) as e:
        raise ConfigError(f"{run_dir}: not a finished training run ({e})") from None
    dp = record.differential_privacy
    if not dp or dp.get("clip") in (None, "adaptive"):
        raise ConfigError(f"{run_dir}: the loss model needs a DP run with a fixed clip (its noise-batch ratio "
                          "z*C/K must be known); this run has " + ("no DP" if not dp else "an adaptive clip"))
    rows = [r for r in rows if r.get("train_loss") not in (None, "")]
    if len(rows) < SKIP_ROUNDS + SMOOTH_ROUNDS:
        raise ConfigError(f"{run_dir}: {len(rows)} rounds in metrics.csv, the loss model needs at least "
                          f"{SKIP_ROUNDS + SMOOTH_ROUNDS}")
    raw = np.array([float(r["train_loss"]) for r in rows])
    if not np.all(np.isfinite(raw)):
        raise ConfigError(f"{run_dir}: non-finite training loss in metrics.csv (a diverged run)")
    smoothed = np.convolve(raw, np.ones(SMOOTH_ROUNDS) / SMOOTH_ROUNDS, mode="valid")  # ends at the last round
    rounds = [int(r["round"]) for r in rows][SMOOTH_ROUNDS - 1:]
    keep = [i for i, t in enumerate(rounds) if t > SKIP_ROUNDS]
    clients = sum(int(r["clients"]) for r in rows)
    seconds = float(rows[-1]["elapsed_seconds"])
    seq_len = int(record.client_data.get("max_seq_len", 20))
    tokens = sum(float(r.get("examples") or 0) for r in rows) * seq_len
    m = record.model
    init = record.init_from
    start = "random" if not init else f"{init.get('name', '?')}:{str(init.get('weights_sha256', ''))[:12]}"
    return RunCurve(name, int(record.parameters), int(m["units"]), int(m["vocab_size"]),
                    int(dp["clients_per_round"]), float(dp["noise_multiplier"]), float(dp["clip"]),
                    [rounds[i] for i in keep], [float(smoothed[i]) for i in keep], seconds / max(clients, 1),
                    start, tokens / max(clients, 1))


def _predict(theta, p, t, r):
    e, a, alpha, b, beta, g, gamma, eta = theta
    return (e + a * (p / 1e6) ** -alpha + b * np.power(t, -beta)
            + g * np.power(1000 * r, gamma) * np.power(t, eta))


@dataclasses.dataclass
class LossModel:
    theta: dict
    fitted_on: list[str]
    fit_rmse: float
    heldout: list[dict] = dataclasses.field(default_factory=list)
    cost: dict = dataclasses.field(default_factory=dict)  # params -> seconds per client-step
    #: the sizes of the fitted runs ({units, vocab_size, params}); with one size the fit has no size term
    sizes: list[dict] = dataclasses.field(default_factory=list)
    start: str = "random"  # where every fitted run started (refused when they differ)
    #: each fitted run predicted by a fit on the others (``leave_one_out``), same keys as ``heldout``
    leave_one_out: list[dict] = dataclasses.field(default_factory=list)
    #: the fitted runs' largest rounds and noise-batch ratio: a plan beyond them is an extrapolation
    ranges: dict = dataclasses.field(default_factory=dict)
    tokens: dict = dataclasses.field(default_factory=dict)  # params -> tokens per client-step (FLOPs budgets)

    def outside(self, rounds: int, ratio: float) -> list[str]:
        """What of (rounds, ratio) lies beyond the fitted runs, e.g. ``["T > 40"]`` (empty: inside)."""
        out = []
        if self.ranges.get("rounds") and rounds > self.ranges["rounds"]:
            out.append(f"T > {self.ranges['rounds']}")
        if self.ranges.get("ratio") is not None and ratio > self.ranges["ratio"] * 1.0001:
            out.append(f"z*C/K > {self.ranges['ratio']:.3g}")
        return out

    def predict(self, params, rounds, ratio):
        return _predict([self.theta[n] for n in NAMES], np.asarray(params, float), np.asarray(rounds, float),
                        np.asarray(ratio, float))

    @property
    def one_size(self) -> bool:
        """Fitted on runs of one model size: it predicts that size only (A = 0: no size term)."""
        return len(self.sizes) == 1

    def seconds_per_client_step(self, params: int) -> float:
        """Measured cost, interpolated linearly in the parameter count between the fitted sizes."""
        if not self.cost:
            raise ConfigError("the loss model holds no measured cost; plan with --budget-client-steps")
        sizes = sorted((int(p), c) for p, c in self.cost.items())
        return float(np.interp(params, [p for p, _ in sizes], [c for _, c in sizes]))

    def to_dict(self) -> dict:
        return {"form": FORM, "theta": self.theta, "fitted_on": self.fitted_on, "fit_rmse": self.fit_rmse,
                "heldout": self.heldout, "cost_seconds_per_client_step": self.cost, "sizes": self.sizes,
                "start": self.start, "leave_one_out": self.leave_one_out, "ranges": self.ranges,
                "tokens_per_client_step": self.tokens}

    @classmethod
    def from_dict(cls, d: dict, where: str = "loss model") -> "LossModel":
        try:
            if d["form"] != FORM:
                raise ValueError(f"form {d['form']!r}")
            theta = {n: float(d["theta"][n]) for n in NAMES}
            sizes = [{"units": int(s["units"]), "vocab_size": int(s["vocab_size"]), "params": int(s["params"])}
                     for s in d.get("sizes", [])]
            return cls(theta, list(d["fitted_on"]), float(d["fit_rmse"]), list(d.get("heldout", [])),
                       {str(k): float(v) for k, v in d.get("cost_seconds_per_client_step", {}).items()},
                       sizes, str(d.get("start", "random")), list(d.get("leave_one_out", [])),
                       dict(d.get("ranges", {})),
                       {str(k): float(v) for k, v in d.get("tokens_per_client_step", {}).items()})
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{where}: not a keyboard_lm loss model ({e})") from None

    @classmethod
    def load(cls, path: str) -> "LossModel":
        try:
            with open(path, encoding="utf-8") as f:
                return cls.from_dict(json.load(f), path)
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: cannot read the loss model ({e})") from None


def fit(curves: list[RunCurve], heldout: list[RunCurve] = ()) -> LossModel:
    """Least squares over every (run, round) point of ``curves``; ``heldout`` runs are only predicted.

    Every run must start from the same weights (random, or one warm start): a warm start moves the whole
    curve, and the form has no term for it. Runs of one model size (warm starts from one base, typically)
    fit the form without its size term (A = 0), and the model then predicts that size only.

    Held-out error: each held-out run's final smoothed loss, predicted at its own size, rounds and ratio,
    beside the error of predicting the fitted runs' mean final loss (what knowing nothing gives).
    """
    from scipy.optimize import least_squares

    if len(curves) < 3:
        raise ConfigError(f"the loss model has {len(NAMES)} parameters: fit it on at least 3 runs, got {len(curves)}")
    starts = {c.start for c in [*curves, *heldout]}
    if len(starts) > 1:
        raise ConfigError("the runs start from different weights (" + "; ".join(
            f"{s}: {', '.join(c.name for c in [*curves, *heldout] if c.start == s)}" for s in sorted(starts))
            + "): fit one loss model per start")
    sizes = sorted({(c.params, c.units, c.vocab_size) for c in curves})
    one_size = len(sizes) == 1
    for c in heldout:
        if one_size and c.params != sizes[0][0]:
            raise ConfigError(f"held-out run {c.name}: {c.params:,} parameters, but the fitted runs have one size "
                              f"({sizes[0][0]:,}) and the model predicts that size only")
    p = np.concatenate([[c.params] * len(c.rounds) for c in curves]).astype(float)
    t = np.concatenate([c.rounds for c in curves]).astype(float)
    r = np.concatenate([[c.ratio] * len(c.rounds) for c in curves]).astype(float)
    y = np.concatenate([c.loss for c in curves])
    free = [i for i, n in enumerate(NAMES) if not (one_size and n in ("A", "alpha"))]
    low = np.array([0, 0, 0, 0, 0, 0, 0.1, 0])
    high = np.array([20, 50, 3, 50, 3, 50, 4, 3])

    def full(x):
        theta = np.zeros(len(NAMES))
        theta[free] = x
        return theta

    best = None
    # a few starts: the power-law terms trade off against E
    for alpha, beta, gamma, eta in ((0.3, 0.5, 1.0, 0.0), (1.0, 1.0, 0.5, 0.5), (0.1, 0.2, 2.0, 1.0)):
        start = np.array([float(y.min()) - 0.5, 0.5, alpha, 2.0, beta, 0.1, gamma, eta])[free]
        res = least_squares(lambda x: _predict(full(x), p, t, r) - y, np.clip(start, low[free], high[free]),
                            bounds=(low[free], high[free]))
        if best is None or res.cost < best.cost:
            best = res
    theta = dict(zip(NAMES, (float(v) for v in full(best.x))))
    model = LossModel(theta, [c.name for c in curves], float(np.sqrt(np.mean(best.fun ** 2))),
                      sizes=[{"units": u, "vocab_size": v, "params": n} for n, u, v in sizes],
                      start=next(iter(starts)),
                      ranges={"rounds": max(c.rounds[-1] for c in curves), "ratio": max(c.ratio for c in curves)})
    # what knowing nothing would predict: the mean final loss of the fitted runs (a model must beat it)
    constant = float(np.mean([c.loss[-1] for c in curves]))
    for c in heldout:
        model.heldout.append(_heldout_error(model, c, constant))
    by_size: dict[int, list[float]] = {}
    for c in [*curves, *heldout]:
        by_size.setdefault(c.params, []).append(c.seconds_per_client_step)
    model.cost = {str(k): float(np.median(v)) for k, v in by_size.items()}
    tokens: dict[int, list[float]] = {}
    for c in [*curves, *heldout]:
        if c.tokens_per_client_step:
            tokens.setdefault(c.params, []).append(c.tokens_per_client_step)
    model.tokens = {str(k): float(np.median(v)) for k, v in tokens.items()}
    return model


#: Training FLOPs per parameter and token (forward and backward; McKenna et al., after Kaplan et al.).
FLOPS_PER_PARAM_TOKEN = 6


def flops_per_client_step(model: LossModel, params: int) -> float:
    """6 x parameters x the measured tokens per client-step (interpolated between the fitted sizes)."""
    if not model.tokens:
        raise ConfigError("the loss model holds no measured tokens per client-step; refit it (privacy fit) "
                          "to plan a FLOPs budget")
    sizes = sorted((int(p), t) for p, t in model.tokens.items())
    tokens = float(np.interp(params, [p for p, _ in sizes], [t for _, t in sizes]))
    return FLOPS_PER_PARAM_TOKEN * params * tokens


def _heldout_error(model: LossModel, c: RunCurve, constant: float) -> dict:
    """A run the model was not fitted on: its final smoothed loss, predicted and measured."""
    predicted = float(model.predict(c.params, c.rounds[-1], c.ratio))
    return {"run": c.name, "params": c.params, "clients_per_round": c.clients_per_round,
            "noise_multiplier": c.noise_multiplier, "ratio": c.ratio, "rounds": c.rounds[-1],
            "measured": c.loss[-1], "predicted": predicted,
            "relative_error": (predicted - c.loss[-1]) / c.loss[-1],
            "constant_relative_error": (constant - c.loss[-1]) / c.loss[-1]}


def error_summary(predictions: list[dict]) -> dict:
    """Mean and largest |error| of ``heldout`` or ``leave_one_out`` entries, and how often the model beat the constant."""
    err = [abs(h["relative_error"]) for h in predictions]
    return {"mean": float(np.mean(err)), "max": max(err), "count": len(err),
            "beats_constant": sum(abs(h["relative_error"]) < abs(h["constant_relative_error"]) for h in predictions)}


def leave_one_out(model: LossModel, curves: list[RunCurve]) -> LossModel:
    """Fill ``model.leave_one_out``: each of ``curves`` (its fitted runs) predicted by a fit on the others.

    With few held-out runs one split can flatter a fit; every run in turn shows where it fails (the
    constant baseline is then the mean final loss of the other runs).
    """
    if len(curves) < 4:
        raise ConfigError(f"leave-one-out fits on all runs but one: it needs at least 4 runs, got {len(curves)}")
    model.leave_one_out = []
    for i, c in enumerate(curves):
        rest = curves[:i] + curves[i + 1:]
        if not model.one_size and c.params not in {x.params for x in rest}:
            continue  # the only run of its size: nothing left to predict it from
        part = fit(rest)
        model.leave_one_out.append(_heldout_error(part, c, float(np.mean([x.loss[-1] for x in rest]))))
    return model


def plot(model: LossModel, curves: list[RunCurve], path: str, rounds: int) -> None:
    """PNG: predicted loss after ``rounds`` against the noise-batch ratio per fitted size, measured runs on it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ratios = np.geomspace(1e-5, 2e-2, 80)
    sizes = sorted({c.params for c in curves})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, params in enumerate(sizes):
        color = colors[i % len(colors)]
        ax.plot(ratios, model.predict(params, rounds, ratios), "-", color=color, label=f"predicted, {params:,} params")
        # runs of other lengths sit on their own line (dashed), not on the one at ``rounds``
        for other in sorted({c.rounds[-1] for c in curves if c.params == params} - {rounds}):
            ax.plot(ratios, model.predict(params, other, ratios), "--", color=color, lw=0.8,
                    label=f"predicted, {params:,} params, {other} rounds")
        for c in curves:
            if c.params == params:
                held = c.name in {h["run"] for h in model.heldout}
                x = max(c.ratio, 1e-5)  # a noiseless run sits at the left edge
                ax.plot([x], [c.loss[-1]], "s" if held else "o", color=color, mfc="none" if held else color)
    ax.set_xscale("log")
    ax.set_xlabel("noise-batch ratio z*C/K (noiseless runs at the left edge)")
    ax.set_ylabel(f"final smoothed training loss (line: {rounds} rounds)")
    measured = [c.loss[-1] for c in curves]
    ax.set_ylim(min(measured) - 0.1, max(measured) + 0.5)  # the lines may run far off past the runs
    ax.set_title("DP-FTRL loss model: predicted (lines), fitted runs (dots), held-out runs (squares)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

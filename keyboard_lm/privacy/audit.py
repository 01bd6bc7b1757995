"""The canary audit as library calls: plant canaries in a corpus, record them beside the run that trained on
it, and measure each one's exposure in that run (``keyboard-lm audit canaries`` is these three calls
around a ``train``).

    corpus, placements, controls = plant(corpus, split, canaries=10, controls=10)
    ... train a federated run into RUN_DIR on ``corpus``, tracking the canaries' clients ...
    save_canaries(RUN_DIR, placements, controls)
    report = audit(RUN_DIR)          # also written to RUN_DIR/audit.json
"""

from __future__ import annotations

import json
import os

from keyboard_lm.errors import ConfigError

#: What an audit run keeps beside run.json: the planted canaries and the never-planted controls, and the report.
CANARY_FILE, AUDIT_FILE = "canaries.json", "audit.json"


def check_counts(canaries: int, controls: int) -> None:
    if canaries < 1 or controls < 0:
        raise ConfigError(f"--canaries must be >= 1 and --controls >= 0, got {canaries}, {controls}")


def plant(corpus, split, *, canaries: int, controls: int, repeats=(1,), seed: int = 0,
          validation_fraction: float = 0.0, alphabet=None, slots: int | None = None, clients_per_canary: int = 1):
    """(corpus with ``canaries`` planted, their placements, ``controls`` never planted).

    Canaries go to training clients that train (not to the validation clients ``validation_fraction``
    sets aside), each to ``clients_per_canary`` of them; the i-th canary is planted ``repeats[i % len(repeats)]``
    times in each of its clients. ``alphabet`` and ``slots`` make the format ("my number is" + ``slots`` words
    of ``alphabet``; the default format's when None).
    """
    from keyboard_lm.data.split import split_clients, validation_clients
    from keyboard_lm.privacy import canaries as cn

    check_counts(canaries, controls)
    train_ids, _ = split_clients(corpus.client_ids, split)
    if validation_fraction:
        train_ids = validation_clients(train_ids, validation_fraction, split.seed)[0]
    made = cn.make_canaries(canaries + controls, seed=seed, alphabet=alphabet or cn.DEFAULT_ALPHABET,
                            slots=slots or cn.DEFAULT_SLOTS)
    planted, never = made[:canaries], made[canaries:]
    per_canary = [repeats[i % len(repeats)] for i in range(len(planted))]
    corpus, placements = cn.plant_canaries(corpus, planted, per_canary, train_ids, seed=seed,
                                           clients_per_canary=clients_per_canary)
    return corpus, placements, never


def tracked_clients(placements: dict) -> list[str]:
    """The clients holding canaries, whose rounds of participation the training run should record."""
    return sorted({c for p in placements["canaries"] for c in p["clients"]})


def save_canaries(run_dir: str, placements: dict, controls) -> None:
    with open(os.path.join(run_dir, CANARY_FILE), "w", encoding="utf-8") as f:
        json.dump({"placements": placements, "controls": [c.text for c in controls]}, f, indent=1)


def load_canaries(run_dir: str):
    """(placements, controls) of an audit run; a clear error for a run that is not one."""
    from keyboard_lm.privacy import canaries as cn

    path = os.path.join(run_dir, CANARY_FILE)
    if not os.path.exists(path):
        raise ConfigError(f"{run_dir}: no {CANARY_FILE}; --run re-audits a run made by `audit canaries`")
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    placements = saved["placements"]
    fmt = cn.CanaryFormat.from_dict(placements["format"])
    return placements, [cn.Canary(fmt, fmt.parse(t)) for t in saved["controls"]]


#: The audit's two scores: Carlini et al.'s exposure, and the same calibrated against the run's start.
STATISTICS = ("exposure", "calibrated_exposure")


def audit(run_dir: str, placements: dict | None = None, controls=None) -> dict:
    """Each canary's exposure in the run (and how many rounds its client trained in), written to audit.json.

    ``placements``/``controls`` default to the run's own canaries.json.  A run warm-started from a base
    is also scored against its start (calibrated exposure), and that is the audit's statistic: its power
    check and one-run bound use it (``statistic``); both scores' are kept (``by_statistic``).
    """
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.models.warm_start import start_weights
    from keyboard_lm.privacy import exposure

    if placements is None:
        placements, controls = load_canaries(run_dir)
    run = load_run(run_dir)
    start, why = start_weights(run)
    rows = exposure.audit_run(run_dir, placements, reference_weights=start, controls=controls)
    record = run.record
    rounds_of = record.participation
    for row in rows:
        # Trainings of a client holding the canary (rounds, summed over its clients): a canary never sampled
        # cannot be memorized.
        row["participations"] = sum(len(rounds_of.get(c, [])) for c in row["clients"])
    statistic = STATISTICS[1] if start is not None else STATISTICS[0]
    by = {key: {"power": power(rows, key=key), "one_run": one_run_epsilon(rows, key=key)}
          for key in STATISTICS[:2 if start is not None else 1]}
    report = {"rows": rows, "differential_privacy": record.differential_privacy, "rounds": record.rounds_done,
              "final_metrics": record.final_metrics, "statistic": statistic,
              "calibration": "against the run's start" if start is not None else f"none: {why}",
              "power": by[statistic]["power"], "one_run": by[statistic]["one_run"], "by_statistic": by}
    with open(os.path.join(run_dir, AUDIT_FILE), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return report


#: Significance of the power check and confidence of the one-run lower bound.
ALPHA = 0.05


def power(rows: list[dict], alpha: float = ALPHA, key: str = "exposure") -> dict:
    """Whether the audit can see memorization at all: are the canaries whose client trained more exposed
    than the never-planted controls?

    A one-sided Mann-Whitney U test of the trained canaries' ``key`` (exposure, or calibrated_exposure)
    against the controls'; ``detected`` when p < ``alpha``. Run on a noiseless run of the same setting, this
    is the audit's positive control: without it, canaries at the controls' level under DP say nothing about DP.
    """
    from scipy.stats import mannwhitneyu

    trained = [r[key] for r in rows if r["client"] is not None and r.get("participations", 1) > 0]
    controls = [r[key] for r in rows if r["client"] is None]
    out = {"trained_canaries": len(trained), "controls": len(controls), "alpha": alpha,
           "above_every_control": sum(e > max(controls) for e in trained) if controls else None}
    if not trained or not controls:
        return {**out, "p_value": None, "detected": None,
                "why": "needs trained canaries and never-planted controls (--controls)"}
    p = float(mannwhitneyu(trained, controls, alternative="greater").pvalue)
    return {**out, "p_value": p, "detected": p < alpha}


def one_run_epsilon(rows: list[dict], beta: float = ALPHA, key: str = "exposure") -> dict:
    """Steinke, Nasr and Jagielski 2023's one-run lower bound on epsilon from the canaries of this run.

    The candidates are every canary, planted ("in") or a control ("out"); which were planted is a uniformly
    random subset of the draw (fixed size, where the paper flips a coin per candidate). Ranked by ``key``,
    the top quarter is guessed "in" and the bottom quarter "out"; with v correct of r guesses, an
    eps-DP mechanism makes each guess right with probability at most e^eps / (1 + e^eps), so any eps with
    P[Binomial(r, e^eps / (1 + e^eps)) >= v] <= ``beta`` is ruled out. Returned: the largest such eps (0
    when none), at confidence 1 - beta (delta's share of the bound is ignored: below 1e-3 here for
    delta <= 1e-5 and at most 100 candidates).

    A canary held by k clients is the data of k users: the test bounds the epsilon of groups of k (by group
    privacy at most k times a user's), so the user-level bound is the group's divided by k
    (``group_epsilon_lower_bound`` and ``clients_per_canary`` say so).
    """
    import math

    from scipy.stats import binom

    import random

    shuffled = list(rows)
    random.Random(0).shuffle(shuffled)  # equal exposures in no particular order: a tie never favours the planted
    ranked = sorted(shuffled, key=lambda r: -r[key])
    r4 = len(ranked) // 4
    if r4 < 1:
        return {"guesses": 0, "correct": 0, "epsilon_lower_bound": 0.0, "beta": beta,
                "why": "needs at least 4 canaries and controls"}
    guesses = [(r, True) for r in ranked[:r4]] + [(r, False) for r in ranked[-r4:]]
    correct = sum((r["client"] is not None or r["repeats"] > 0) == guess_in for r, guess_in in guesses)
    n = len(guesses)

    def tail(eps):  # P[Binomial(n, p(eps)) >= correct]
        return float(binom.sf(correct - 1, n, 1.0 / (1.0 + math.exp(-eps))))

    group = max((len(r.get("clients") or [r["client"]]) for r in rows if r["client"] is not None), default=1)
    if tail(0.0) > beta:
        bound = 0.0
    else:
        lo, hi = 0.0, 1.0
        while tail(hi) <= beta and hi < 100:
            lo, hi = hi, hi * 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid) <= beta else (lo, mid)
        bound = lo
    return {"guesses": n, "correct": correct, "epsilon_lower_bound": bound / group, "beta": beta,
            "clients_per_canary": group, "group_epsilon_lower_bound": bound}


def control_power(run_dir: str, statistic: str = "exposure") -> dict:
    """``power`` of a noiseless audit run (its audit.json, made by `audit canaries`) by ``statistic``, the
    audited run's own; refuses a noisy one, and one not scored by that statistic."""
    path = os.path.join(run_dir, AUDIT_FILE)
    if not os.path.exists(path):
        raise ConfigError(f"--control {run_dir}: no {AUDIT_FILE}; audit the noiseless run first (audit canaries)")
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    dp = report.get("differential_privacy") or {}
    if dp.get("noise_multiplier"):
        raise ConfigError(f"--control {run_dir}: trained with noise (z = {dp['noise_multiplier']}); the control "
                          "is the same setting without noise")
    if not all(statistic in r for r in report["rows"]):
        raise ConfigError(f"--control {run_dir}: its {AUDIT_FILE} has no {statistic} (audited before it, or from "
                          f"random weights); measure it again with `keyboard-lm audit canaries --run {run_dir}`")
    return power(report["rows"], key=statistic)


def verdict(own: dict, one_run: dict, *, noisy: bool, control: dict | None = None,
            control_run: str | None = None, statistic: str = "exposure") -> list[str]:
    """The audit's conclusion, power first: lines for the report."""
    score = statistic.replace("_", " ")

    def describe(p):
        if p.get("detected") is None:
            return f"cannot be tested ({p.get('why')})"
        return (f"{'detected' if p['detected'] else 'not detected'} (the trained canaries' {score} against the "
                f"controls': one-sided Mann-Whitney p = {p['p_value']:.3g}; {p['trained_canaries']} trained, "
                f"{p['controls']} controls, {p['above_every_control']} above every control)")

    lines = []
    if not noisy:
        lines.append(f"power (this run has no noise, it is the positive control): memorization {describe(own)}")
        if own.get("detected") is False:
            lines.append("  the audit has no power in this setting: a DP run audited like this one would look the "
                         "same with or without noise (more repeats, more rounds, canaries in clients that train "
                         "more often, or each canary in more clients: --canary-clients)")
    elif control is None:
        lines.append("power: unknown; give --control RUN_DIR, the same setting audited without noise: a DP run whose "
                     "canaries sit at the controls' level says nothing until the control shows they would not")
    else:
        lines.append(f"power (noiseless control {control_run}): memorization {describe(control)}")
        if control.get("detected"):
            lines.append(f"under DP: memorization {describe(own)}")
        else:
            lines.append("  the control detects nothing: this audit cannot tell DP from no DP, and its canaries say "
                         "nothing about the noise")
    group = one_run.get("clients_per_canary", 1)
    lines.append(f"one-run lower bound on eps (Steinke, Nasr and Jagielski 2023): {one_run['epsilon_lower_bound']:.3g} "
                 f"({one_run['correct']} of {one_run['guesses']} membership guesses right, confidence "
                 f"{1 - one_run['beta']:.0%}"
                 + (f"; each canary is in {group} clients, so the test bounds groups of {group}: "
                    f"{one_run['group_epsilon_lower_bound']:.3g}, divided by {group}" if group > 1 else "") + ")")
    if noisy and group > 1:
        lines.append(f"  a canary shared by {group} users is guarded by group privacy only ({group} x eps): DP "
                     "does not promise it stays at the controls' level")
    return lines

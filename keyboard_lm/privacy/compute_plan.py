"""A compute-aware plan from a fitted loss model (McKenna et al. 2025's use of it): every CIFG size that fits
the file budget, every cohort K, the rounds T the compute budget buys and the noise that (eps, delta) asks
for, ranked by the loss ``loss_model`` predicts (``frontier``); its table and plot.
"""

from __future__ import annotations

from keyboard_lm.data.limits import MAX_ROUNDS
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy.loss_model import FORM, LossModel, error_summary, flops_per_client_step


def candidate_sizes(embedding_dim: int = 96, budget_bytes: int = 1_468_006, vocab_sizes=(10000,)) -> list[dict]:
    """CIFG sizes (units, vocabulary) whose int8 file fits ``budget_bytes``.

    One vocabulary by default, the one the loss model's runs used: a loss over a smaller vocabulary
    (more words are ``<oov>``, an easy target) is not comparable, so the model cannot rank vocabularies.

    The file is estimated as one byte per parameter plus 5.3 bytes per vocabulary word (the
    vocabulary text, its tensors and the metadata) plus 1 KB: 1,466,274 bytes for the paper's
    1,412,250 parameters at V = 10,000, whose file measures 1,465,478.
    """
    out = []
    for units in (96, 192, 256, 384, 512, 670, 800):
        for vocab in vocab_sizes:
            params = cifg_parameters(vocab, embedding_dim, units)
            size = estimated_bytes(params, vocab)
            if size <= budget_bytes:
                out.append({"units": units, "vocab_size": vocab, "params": params, "estimated_bytes": size})
    return out


def estimated_bytes(params: int, vocab: int) -> int:
    """The int8 file's size estimate of ``candidate_sizes``."""
    return params + int(5.3 * vocab) + 1024


def cifg_parameters(vocab: int, embedding_dim: int, units: int) -> int:
    """Hard et al.'s closed form for a CIFG with projection and tied embeddings: V*D + 3(D+P+1)H + H*P, P = D."""
    d = embedding_dim
    return vocab * d + 3 * (d + d + 1) * units + units * d


def frontier(model: LossModel, *, epsilon: float, delta: float, population: int, mechanism: str, clip: float,
             client_steps: int | None = None, hours: float | None = None, sizes: list[dict] | None = None,
             cohorts: list[int] | None = None, tree_restart=None, flops: float | None = None) -> list[dict]:
    """Every (size, cohort) under the budget: rounds T = budget / K, z for (eps, delta), predicted loss.

    The budget is ``client_steps`` (K * T), or ``hours`` converted per size with the measured seconds
    per client-step, or ``flops`` converted per size at 6 x parameters x measured tokens per client-step.
    Rows sorted by predicted loss (best first). A model fitted on one size plans that size only (the
    start's, for warm starts): it has no term that could rank another.
    """
    from keyboard_lm.privacy.planner import cohort_grid, noise_for

    if sum(b is not None for b in (client_steps, hours, flops)) != 1:
        raise ConfigError("give one compute budget: --budget-client-steps, --budget-hours or --budget-flops")
    if flops is not None and not flops > 0:
        raise ConfigError(f"--budget-flops must be > 0, got {flops}")
    if client_steps is not None and client_steps < 1:
        raise ConfigError(f"--budget-client-steps must be >= 1, got {client_steps}")
    if hours is not None and not hours > 0:
        raise ConfigError(f"--budget-hours must be > 0, got {hours}")
    rows = []
    fitted = sorted(map(int, model.cost))
    noise: dict[tuple[int, int], float] = {}  # (rounds, K) -> z: sizes with the same budget share them
    if model.one_size:
        only = model.sizes[0]
        if sizes and any(s["params"] != only["params"] for s in sizes):
            raise ConfigError(f"the loss model was fitted on one size ({only['units']} units, V = "
                              f"{only['vocab_size']:,}, {only['params']:,} parameters) and predicts no other")
        sizes = [{**only, "estimated_bytes": estimated_bytes(only["params"], only["vocab_size"])}]
    for size in sizes or candidate_sizes():
        cost = model.seconds_per_client_step(size["params"]) if model.cost else None
        per_step = flops_per_client_step(model, size["params"]) if model.tokens else None
        budget = (client_steps if client_steps is not None else int(hours * 3600 / cost) if hours is not None
                  else int(flops / per_step))
        for k in cohorts or cohort_grid(population):
            rounds = budget // k
            if not 1 <= rounds <= MAX_ROUNDS:  # less than a round, or more than a run may take
                continue
            if (rounds, k) not in noise:
                noise[rounds, k] = noise_for(epsilon, delta, population, rounds, k, mechanism, tree_restart)
            z = noise[rounds, k]
            ratio = z * clip / k
            rows.append({**size, "clients_per_round": k, "rounds": rounds, "client_steps": k * rounds,
                         "noise_multiplier": z, "noise_batch_ratio": ratio,
                         "hours": None if cost is None else k * rounds * cost / 3600,
                         "flops": None if per_step is None else k * rounds * per_step,
                         "predicted_loss": float(model.predict(size["params"], rounds, ratio)),
                         "extrapolated": None if cost is None else not fitted[0] <= size["params"] <= fitted[-1],
                         "outside_fit": model.outside(rounds, ratio)})
    if not rows:
        raise ConfigError(f"the budget buys less than one round, or more than {MAX_ROUNDS:,} rounds, at every "
                          "cohort size")
    return sorted(rows, key=lambda r: r["predicted_loss"])


def format_frontier(rows: list[dict], model: LossModel, top: int = 12) -> str:
    head = (f"{'units':>5} {'V':>6} {'params':>10} {'K':>6} {'T':>6} {'z':>8} {'z*C/K':>9} {'hours':>7} "
            f"{'FLOPs':>9} {'pred. loss':>10}")
    lines = [head]
    for r in rows[:top]:
        hours = "-" if r["hours"] is None else f"{r['hours']:.2f}"
        flops = "-" if r.get("flops") is None else f"{r['flops']:.3g}"
        lines.append(f"{r['units']:>5} {r['vocab_size']:>6} {r['params']:>10,} {r['clients_per_round']:>6,} "
                     f"{r['rounds']:>6,} {r['noise_multiplier']:>8.4g} {r['noise_batch_ratio']:>9.3g} {hours:>7} "
                     f"{flops:>9} "
                     f"{r['predicted_loss']:>10.3f}" + ("  (size outside the fitted runs)" if r["extrapolated"] else "")
                     + (f"  (beyond the fitted runs: {', '.join(r['outside_fit'])})" if r.get("outside_fit") else ""))
    if model.one_size:
        lines.append(f"one model size: the loss model's runs all had {model.sizes[0]['units']} units "
                     f"(start: {model.start}), so the plan keeps it and chooses cohort and rounds")
    lines.append(f"loss model: {FORM}; fitted on {len(model.fitted_on)} runs (rmse {model.fit_rmse:.3f})"
                 + (f"; held-out runs {', '.join(h['run'] for h in model.heldout)}: |error| mean "
                    f"{100 * error_summary(model.heldout)['mean']:.1f}%, max "
                    f"{100 * error_summary(model.heldout)['max']:.1f}%" if model.heldout else "; no held-out runs"))
    return "\n".join(lines)


def plot_plan(rows: list[dict], path: str, title: str) -> None:
    """PNG of a compute-aware plan: predicted loss against the cohort K (T = budget / K), a line per size.

    Each line is the frontier the budget buys at one size: a small K leaves many rounds and a large
    noise-batch ratio, a large K the reverse; the chosen plan (the lowest point) is starred.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, units in enumerate(sorted({r["units"] for r in rows})):
        pts = sorted((r for r in rows if r["units"] == units), key=lambda r: r["clients_per_round"])
        color = colors[i % len(colors)]
        ax.plot([r["clients_per_round"] for r in pts], [r["predicted_loss"] for r in pts], "-", color=color,
                label=f"{units} units, {pts[0]['params']:,} params")
        for r in pts:  # hollow: beyond the fitted runs' rounds or ratio
            ax.plot([r["clients_per_round"]], [r["predicted_loss"]], "o", ms=4, color=color,
                    mfc="none" if r.get("outside_fit") or r.get("extrapolated") else color)
    best = min(rows, key=lambda r: r["predicted_loss"])
    ax.plot([best["clients_per_round"]], [best["predicted_loss"]], "*", ms=14, color="black",
            label=f"plan: K = {best['clients_per_round']:,}, T = {best['rounds']:,}")
    # far-off predictions (a noise term extrapolated to tiny cohorts) would flatten the rest: keep 1.5 above the best
    ax.set_ylim(best["predicted_loss"] - 0.1, best["predicted_loss"] + 1.5)
    ax.plot([], [], "o", ms=4, color="gray", mfc="none", label="beyond the fitted runs")
    ax.set_xscale("log")
    ax.set_xlabel("clients per round K (rounds T = budget / K)")
    ax.set_ylabel("predicted smoothed training loss")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

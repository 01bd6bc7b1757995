"""Accounting-only budget fields: what doubling each budget does to the noise-batch ratio.

McKenna et al. 2025 ("Scaling Laws for Differentially Private Language Models", section 4.5) ask, before
any training, which budget buys the most noise reduction: a table of the noise-batch ratio over two budgets
spaced evenly on a log scale, drawn as a vector field whose arrows are the relative decrease of the ratio from
one grid step along each axis. Here the ratio is z * C / K for K clients a round (the planner's), the
compute budget is the cohort K at a fixed number of rounds T (their batch size at fixed iterations), the
privacy budget epsilon at a fixed delta, and the data budget the population N of clients:

- ``vs="privacy"``: rows K, columns epsilon, at population N;
- ``vs="data"``: rows K, columns N, at epsilon.

Each cell's z comes from ``planner.noise_for`` (dp_accounting, the run's own mechanism and sampling), so
DP-FedAvg's amplification by sampling (q = K / N) and DP-FTRL's participations (ceil(K T / N) a client on
the cyclic schedule) shape the field as they shape a run. A cell the mechanism cannot serve (K > N, or an
epsilon met below z = 0.001) is empty and draws no arrow.
"""

from __future__ import annotations

import math

import numpy as np

from keyboard_lm.errors import ConfigError

AXES = {"privacy": "epsilon", "data": "population"}


def _check_grid(name: str, values, integer: bool) -> list:
    if values is None:
        raise ConfigError(f"give {name} (comma-separated, increasing)")
    values = list(values)
    if len(values) < 2:
        raise ConfigError(f"{name}: give at least two values, got {values}")
    if any(not v > 0 or math.isinf(v) for v in values):
        raise ConfigError(f"{name}: every value must be a finite number > 0, got {values}")
    if integer and any(int(v) != v for v in values):
        raise ConfigError(f"{name}: whole numbers only, got {values}")
    if sorted(set(values)) != values:
        raise ConfigError(f"{name}: values must be strictly increasing, got {values}")
    return [int(v) for v in values] if integer else [float(v) for v in values]


def noise_batch_table(vs: str, *, cohorts, columns, delta: float, rounds: int, mechanism: str = "fedavg",
                      epsilon: float | None = None, population: int | None = None, clip: float = 1.0) -> dict:
    """The noise-batch ratio z * clip / K of every (K, column) cell.

    Args:
      vs: ``privacy`` (columns are epsilons, at ``population``) or ``data`` (columns are populations, at
        ``epsilon``).
      cohorts: the rows, clients per round K (increasing).
      columns: the epsilons or populations (increasing).
      delta, rounds, mechanism, clip: as ``privacy plan``.
    Returns:
      A dict with the axes, the fixed budget, ``z`` and ``ratio`` (lists of rows, None where the cell is
      empty) and ``empty`` (why each empty cell is).
    """
    from keyboard_lm.privacy.planner import _check, noise_for

    if vs not in AXES:
        raise ConfigError(f"the field is drawn against {' or '.join(AXES)}, got {vs!r}")
    cohorts = _check_grid("--clients-per-round", cohorts, integer=True)
    columns = _check_grid("--epsilons" if vs == "privacy" else "--populations", columns, integer=(vs == "data"))
    fixed = population if vs == "privacy" else epsilon
    if fixed is None or not fixed > 0 or math.isinf(fixed):
        raise ConfigError(f"the field against {vs} needs --{'population' if vs == 'privacy' else 'epsilon'} "
                          f"(a finite number > 0), got {fixed}")
    # the planner's own checks of what every cell shares (mechanism, delta, rounds, clip)
    _check(columns[0] if vs == "privacy" else epsilon, delta, population if vs == "privacy" else columns[0],
           rounds, [], mechanism, clip)
    z_rows, ratio_rows, empty = [], [], {}
    for k in cohorts:
        z_row, ratio_row = [], []
        for c in columns:
            eps, n = (c, population) if vs == "privacy" else (epsilon, c)
            z = None
            if k > n:
                empty[f"{k},{c}"] = f"K = {k:,} is more than the population {n:,}"
            else:
                try:
                    z = noise_for(eps, delta, n, rounds, k, mechanism)
                except ConfigError:
                    empty[f"{k},{c}"] = f"eps {eps:g} is met below z = 0.001"
            z_row.append(z)
            ratio_row.append(None if z is None else z * clip / k)
        z_rows.append(z_row)
        ratio_rows.append(ratio_row)
    return {"vs": vs, "mechanism": mechanism, "delta": delta, "rounds": rounds, "clip": clip,
            "epsilon": epsilon if vs == "data" else None, "population": population if vs == "privacy" else None,
            "cohorts": cohorts, "columns": columns, "column_axis": AXES[vs], "z": z_rows, "ratio": ratio_rows,
            "empty": empty}


def _nan_array(rows) -> np.ndarray:
    """Lists of rows with None for empty cells -> a float array with NaN there."""
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def gains(ratio) -> tuple[np.ndarray, np.ndarray]:
    """(along columns, along rows): each cell's relative decrease of the ratio one grid step on, r / r' - 1.

    Cell (i, j) of the first array is r[i][j] / r[i][j+1] - 1 (the next column: more privacy budget or more
    data), of the second r[i][j] / r[i+1][j] - 1 (the next row: a larger cohort, more compute); NaN where
    either cell is empty. Both arrays have one row and one column fewer than the table, as McKenna et al.'s
    arrows stand between grid points.
    """
    r = _nan_array(ratio)
    along_columns = r[:-1, :-1] / r[:-1, 1:] - 1.0
    along_rows = r[:-1, :-1] / r[1:, :-1] - 1.0
    return along_columns, along_rows


def field(vs: str, **kwargs) -> dict:
    """``noise_batch_table`` with its gains: ``gain_column`` and ``gain_row`` (None where empty)."""
    table = noise_batch_table(vs, **kwargs)
    along_columns, along_rows = gains(table["ratio"])

    def plain(a):
        return [[None if math.isnan(v) else float(v) for v in row] for row in a]

    table["gain_column"], table["gain_row"] = plain(along_columns), plain(along_rows)
    return table


def _num(v) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def format_field(result: dict) -> str:
    """The ratio table, then each cell's two gains, the larger marked (plain text, Markdown tables)."""
    col_name = "eps" if result["vs"] == "privacy" else "N"
    fixed = (f"population {result['population']:,}" if result["vs"] == "privacy"
             else f"eps {result['epsilon']:g}")
    head = (f"{result['mechanism']}: delta {result['delta']:.3g}, {result['rounds']:,} rounds, {fixed}, "
            f"clip {result['clip']:g}")
    cols = result["columns"]
    out = [head, "", f"noise-batch ratio z*C/K (rows K, columns {col_name}; - : no such run)", "",
           "| K \\ " + col_name + " | " + " | ".join(_num(c) for c in cols) + " |",
           "|---:|" + "---:|" * len(cols)]
    for k, row in zip(result["cohorts"], result["ratio"]):
        out.append(f"| {k:,} | " + " | ".join("-" if v is None else f"{v:.3g}" for v in row) + " |")
    what = "doubling eps" if result["vs"] == "privacy" else "the next population"
    out += ["", f"the ratio's relative decrease one step on: {col_name} (→, {what}) / K (↑, the next cohort at "
                f"the same rounds); the larger gain is bold", "",
            "| K \\ " + col_name + " | " + " | ".join(_num(c) for c in cols[:-1]) + " |",
            "|---:|" + "---:|" * (len(cols) - 1)]
    for k, gc_row, gr_row in zip(result["cohorts"], result["gain_column"], result["gain_row"]):
        cells = []
        for gc, gr in zip(gc_row, gr_row):
            if gc is None or gr is None:
                cells.append("-")
                continue
            a, b = f"→{100 * gc:+.0f}%", f"↑{100 * gr:+.0f}%"
            cells.append(f"**{a}** {b}" if gc > gr else f"{a} **{b}**" if gr > gc else f"{a} {b}")
        out.append(f"| {k:,} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot_field(result: dict, path: str) -> None:
    """PNG: arrows (column gain, row gain) at each cell on log axes, coloured by which budget gains more."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gc, gr = _nan_array(result["gain_column"]), _nan_array(result["gain_row"])
    x, y = np.meshgrid(result["columns"][:-1], result["cohorts"][:-1])
    ok = ~(np.isnan(gc) | np.isnan(gr))
    color = np.clip(np.log((gc[ok] + 1) / (gr[ok] + 1)), -1, 1)
    fig, ax = plt.subplots(figsize=(6, 5))
    q = ax.quiver(x[ok], y[ok], gc[ok], gr[ok], color, units="dots", scale=0.01, cmap="viridis",
                  clim=(-1, 1), headwidth=2.5, headlength=3.5, headaxislength=3)
    fig.colorbar(q, ax=ax, label=f"log((1 + gain {result['column_axis']}) / (1 + gain cohort))")
    ax.set_xscale("log")
    ax.set_yscale("log")
    cols, rows = result["columns"], result["cohorts"]
    ax.set_xlim(cols[0] / 1.3, cols[-1] * 1.1)  # the arrows point towards the last row and column
    ax.set_ylim(rows[0] / 1.3, rows[-1] * 1.1)
    ax.set_xticks(cols, [_num(c) for c in cols], fontsize=7)
    ax.set_yticks(rows, [f"{k:,}" for k in rows], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("privacy budget (epsilon)" if result["vs"] == "privacy" else "data budget (population N)")
    ax.set_ylabel(f"compute budget (clients per round K, {result['rounds']:,} rounds)")
    fixed = (f"N {result['population']:,}" if result["vs"] == "privacy" else f"eps {result['epsilon']:g}")
    ax.set_title(f"{result['mechanism']}: noise-batch ratio gains, {fixed}, delta {result['delta']:.2g}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

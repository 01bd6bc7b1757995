"""DP-FTRL from the base model at several cohort sizes: one table and one PNG from privacy_benchmark's results.

Each cohort K is a `privacy_benchmark.py --rows base --clients-per-round K --name NAME` run (its
results in benchmarks/results/privacy/NAME.json). This lines the DP-FTRL rows up by K: recall@3 without noise,
at eps 10 and at eps 1, each DP row against the z = 0 row of the same K (same rounds, schedule, clip and
start), the noise-batch ratio, how often each speech trained (K T / N), the canaries and the wall time.

    python benchmarks/privacy/privacy_cohorts.py privacy_base_k50 privacy_base privacy_base_k300 privacy_base_k600
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.privacy.privacy_benchmark import audit_seeds  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "privacy")
ROWS = ("base_ftrl_inf", "base_ftrl_eps10", "base_ftrl_eps1")


def load(names: list[str]) -> list[dict]:
    """One entry per cohort: its DP-FTRL rows by name, and the file they came from."""
    out = []
    for name in names:
        path = os.path.join(RESULTS, f"{name}.json")
        try:
            with open(path, encoding="utf-8") as f:
                rows = {r["row"]: r for r in json.load(f)["rows"]}
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"{path}: not a privacy_benchmark result ({e})")
        done = [r for r in rows.values() if "diverged" not in r]
        if not done:
            raise SystemExit(f"{path}: no finished rows")
        out.append({"name": name, "clients_per_round": done[0]["clients_per_round"], "rows": rows,
                    "population": done[0]["population"], "rounds": done[0]["rounds"]})
    return sorted(out, key=lambda c: c["clients_per_round"])


def table(cohorts: list[dict]) -> str:
    lines = ["| K | speeches per round / epochs (K T / N) | z = 0 recall@3 | eps 10: z, z C / K, recall@3, vs z = 0 | "
             "eps 1: z, z C / K, recall@3, vs z = 0 | canaries trained, above every control (inf / 10 / 1) | "
             "minutes per row |",
             "|---|---|---|---|---|---|---|"]
    for c in cohorts:
        rows, k = c["rows"], c["clients_per_round"]
        base = rows.get("base_ftrl_inf", {}).get("recall_at_3")
        cells = []
        for name in ROWS[1:]:
            r = rows.get(name)
            if r is None:
                cells.append("not run")
            elif "diverged" in r:
                cells.append(r["diverged"])
            else:
                vs = f"{r['recall_at_3'] / base:.3f}" if base else "-"
                cells.append(f"{r['noise_multiplier']:.3g}, {r['noise_batch_ratio']:.3g}, {r['recall_at_3']:.4f}, "
                             f"**{vs}**")
        canaries = " / ".join(f"{rows[n]['canaries_trained']}, {rows[n]['trained_above_controls']}"
                              if n in rows and "diverged" not in rows[n] else "-" for n in ROWS)
        minutes = ", ".join(f"{rows[n]['seconds'] / 60:.0f}" if n in rows and rows[n].get("seconds") else "-"
                            for n in ROWS)
        lines.append(f"| {k:,} | {k / c['population']:.1%} / {k * c['rounds'] / c['population']:.2f} | "
                     f"{'-' if base is None else format(base, '.4f')} | {cells[0]} | {cells[1]} | {canaries} | "
                     f"{minutes} |")
    return "\n".join(lines)


def plot(cohorts: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, label in zip(ROWS, ("no noise (z = 0)", "eps 10", "eps 1")):
        pts = [(c["clients_per_round"], c["rows"][name]["recall_at_3"]) for c in cohorts
               if name in c["rows"] and "diverged" not in c["rows"][name]]
        ax.plot([k for k, _ in pts], [v for _, v in pts], "o-", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("clients per round K (40 rounds)")
    ax.set_ylabel("held-out recall@3")
    ax.set_title("DP-FTRL from the base model, Tiny Shakespeare speeches", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="+", help="result names in benchmarks/results (privacy_base_k50 ...)")
    p.add_argument("--out", default="privacy_base_cohorts", help="result name (privacy_base_cohorts)")
    args = p.parse_args()
    cohorts = load(args.names)
    c0 = cohorts[0]
    head = (f"DP-FTRL (clip 0.1, heavy-ball 0.9, one tree) from the base model, {c0['rounds']} rounds, "
            f"population {c0['population']:,} speeches; from {', '.join(c['name'] for c in cohorts)}.json.\n\n")
    text = head + table(cohorts) + "\n"
    rows = [r for c in cohorts for r in c["rows"].values() if "diverged" not in r]
    result_file.write(args.out, {"cohorts": cohorts}, text.rstrip("\n"), RESULTS,
                      seeds="none drawn here (deterministic: lines up the result files' rows); their runs: "
                            + audit_seeds(rows))
    plot(cohorts, os.path.join(RESULTS, f"{args.out}.png"))
    print(text, end="")


if __name__ == "__main__":
    main()

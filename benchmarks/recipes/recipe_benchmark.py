"""Recipes side by side: held-out recall@3 against wall-clock seconds and examples seen.

Runs the default centralized recipe (`keyboard-lm train --centralized`) and
federated recipes (`keyboard-lm train ...`), from random weights or from the
shipped base model (`--init-from base`), on Tiny Shakespeare by role (or any
corpus: `--data PATH --format mbox`), all
at the same time on the same machine (so each gets a share of the cores, and
the wall-clock axis is what a user sharing the machine between them would
see), then plots recall@3 against elapsed seconds and against examples seen
in one PNG, next to the Kneser-Ney 5-gram on the same split and vocabulary.

    python benchmarks/recipes/recipe_benchmark.py --data ../shared/data/tinyshakespeare/input.txt
    python benchmarks/recipes/recipe_benchmark.py --data ../shared/data/spamassassin-ham/ham.mbox --format mbox \
        --recipes "federated from base,federated (default),centralized (default)" --name base_spamassassin

``--collect NAME=RUN_DIR ...`` only reads finished (or running) run
directories made by those same commands and writes the table and PNG.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.curves import kept_within, metrics_curve  # noqa: E402
from benchmarks.common.ngram import ngram_pooled  # noqa: E402
from benchmarks.common.runs import seeds_line, trained  # noqa: E402
from keyboard_lm.models.run_dir import RunRecord  # noqa: E402
from keyboard_lm.training.config import FINE_TUNE  # noqa: E402

#: name -> train arguments (after --data/--format/--out).  The first federated one is `train`'s default.
RECIPES = {
    "centralized (default)": ["--centralized"],
    "federated (default)": [],
    "FedAvgM CIFG": ["--model", "cifg", "--server-optimizer", "nesterov", "--dropout", "0.2"],
    "FedAdam SI-CIFG": ["--model", "si-cifg", "--server-optimizer", "adam", "--server-lr", "0.01",
                        "--dropout", "0.2"],
    "federated from base": ["--init-from", "base"],
    "federated from base, base vocabulary": ["--init-from", "base", "--init-vocab", "base"],
    "centralized from base": ["--centralized", "--init-from", "base"],
    "centralized from base, from-scratch regularization": ["--centralized", "--init-from", "base",
                                                           "--dropout", "0.4", "--weight-drop", "0.5"],
    "centralized from base, no dropout": ["--centralized", "--init-from", "base", "--dropout", "0"],
    # the recipe a run from a base gets by default, from random weights instead
    "centralized from random weights, fine-tuning recipe": [
        "--centralized", *(a for k, v in FINE_TUNE.items() for a in (f"--{k.replace('_', '-')}", str(v)))],
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--format", default="shakespeare", help="--format of the corpus (shakespeare)")
    p.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated names of RECIPES")
    p.add_argument("--rounds", type=int, default=400, help="federated rounds (400)")
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--budget-minutes", type=float, default=45.0, help="the wall-clock budget reported (45)")
    p.add_argument("--work", default=os.path.join("runs", "recipe_benchmark"), help="run directories")
    p.add_argument("--collect", nargs="*", metavar="NAME=RUN_DIR", help="read these runs instead of training")
    p.add_argument("--reference", type=float, default=None, metavar="RECALL",
                   help="held-out recall@3 of the centralized recipe, when no collected run is one "
                        "(default: the kept recall@3 of the first run whose name starts with 'centralized')")
    p.add_argument("--name", default="recipe_benchmark", help="base name of the result files")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args()

    if args.collect:
        runs = dict(item.split("=", 1) for item in args.collect)
    else:
        names = [n.strip() for n in args.recipes.split(",")]
        unknown = [n for n in names if n not in RECIPES]
        if unknown:
            p.error(f"unknown recipes {unknown}; choose from {list(RECIPES)}")
        runs, procs = {}, []
        cli = [sys.executable, "-m", "keyboard_lm.cli"]
        for i, name in enumerate(names):
            run_dir = os.path.join(args.work, f"recipe{i}")
            extra = RECIPES[name] if "--centralized" in RECIPES[name] else [
                *RECIPES[name], "--rounds", str(args.rounds), "--eval-every", str(args.eval_every),
                "--checkpoint-every", str(args.eval_every), "--no-phrases"]
            cmd = [*cli, "train", "--data", args.data, "--format", args.format, "--out", run_dir, "--overwrite",
                   *extra]
            print("$", shlex.join(cmd[2:]), flush=True)
            os.makedirs(args.work, exist_ok=True)
            log = open(run_dir + ".log", "w")  # noqa: SIM115 - closed when the process ends
            procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
            runs[name] = run_dir
        for proc, log in procs:
            proc.wait()
            log.close()
    ngram = ngram_pooled(args.data, args.format)
    budget = args.budget_minutes * 60
    results = []
    for name, run_dir in runs.items():
        record = RunRecord.read(run_dir)
        curve = metrics_curve(run_dir)
        within = [c for c in curve if c["seconds"] <= budget]
        best = max(within or curve, key=lambda c: c["recall_at_3"]) if curve else None
        chosen = kept_within(curve, budget)
        kept = record.final_metrics or {}
        results.append({"name": name, "run_dir": run_dir, "command": record.command,
                        "settings": record.hyperparameters if record.trainer == "centralized"
                        else {**(record.federated or {}), **record.client_data},
                        "model": record.model["model_type"], "curve": curve,
                        "best_within_budget": best, "kept_within_budget": chosen,
                        "kept_recall_at_3": kept.get("recall_at_3"),
                        "kept_perplexity": kept.get("perplexity")})
    _plot(results, ngram, budget, os.path.join(args.out, f"{args.name}.png"), f"{args.format}: {args.data}")
    central = next((r for r in results if r["name"].startswith("centralized")), None)
    ref = args.reference if args.reference is not None else central["kept_recall_at_3"] if central else None
    lines = [f"Kneser-Ney 5-gram: recall@3 {ngram['recall_at_3']:.4f}, perplexity {ngram['perplexity']:.1f}; "
             f"budget {args.budget_minutes:g} min of wall clock.", "",
             "| recipe | model | evaluations | kept within budget: recall@3 / perplexity (step, s, examples) "
             "| highest held-out recall@3 within budget (step) | kept at the end: recall@3 / perplexity "
             "| kept within budget vs 5-gram | vs centralized |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        b, k = r["best_within_budget"], r["kept_within_budget"]
        kept_b = (f"{k['recall_at_3']:.4f} / {k['perplexity']:.1f} ({k['step']}, {k['seconds']:.0f} s, "
                  f"{k['examples']:,})" if k else "-")
        best = f"{b['recall_at_3']:.4f} ({b['step']})" if b else "-"
        kept = r["kept_recall_at_3"]
        kept_s = f"{kept:.4f} / {r['kept_perplexity']:.1f}" if kept is not None else "-"
        vs_ng = f"{(k['recall_at_3'] / ngram['recall_at_3'] - 1) * 100:+.1f}%" if k else "-"
        vs_c = f"{k['recall_at_3'] / ref * 100:.1f}%" if k and ref else "-"
        lines.append(f"| {r['name']} | {r['model']} | {len(r['curve'])} | {kept_b} | {best} | {kept_s} | {vs_ng} "
                     f"| {vs_c} |")
    note = ("\nRuns given together ran at the same time on the same machine (each with a share of the cores). "
            "'Kept within budget' is the evaluation a run stopped at the budget keeps, chosen without held-out "
            "data: the best validation recall@3 (runs with validation clients) or the last one. The highest "
            "held-out figure is shown for reference only: choosing by it would peek at the test clients.\n")
    if args.reference is not None:
        note += f"'vs centralized' divides by {args.reference:.4f}, the centralized recipe's held-out recall@3 given.\n"
    paths = result_file.write(args.name, {"ngram": ngram, "runs": results, "budget_seconds": budget,
                                      "centralized_reference": ref},
                          "\n".join(lines) + note, args.out, [trained(r["run_dir"]) for r in results],
                          seeds=seeds_line({r["name"]: r["run_dir"] for r in results},
                                           "none drawn here (the runs' curves and a 5-gram on their split)"))
    print("\n".join(lines))
    print("written:", *paths)


def _plot(results, ngram, budget, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for r in results:
        xs = [c["seconds"] / 60 for c in r["curve"]]
        a1.plot(xs, [c["recall_at_3"] for c in r["curve"]], marker=".", label=r["name"])
        a2.plot([c["examples"] for c in r["curve"]], [c["recall_at_3"] for c in r["curve"]], marker=".",
                label=r["name"])
    for ax in (a1, a2):
        ax.axhline(ngram["recall_at_3"], color="gray", linestyle="--", label="Kneser-Ney 5-gram")
        ax.grid(alpha=0.3)
    a1.axvline(budget / 60, color="red", linestyle=":", label="budget")
    a1.set_xlabel("wall-clock minutes")
    a1.set_ylabel("held-out recall@3")
    a2.set_xlabel("training examples seen")
    a1.legend(fontsize=8)
    fig.suptitle(f"{os.path.basename(title)}: held-out recall@3 of each recipe")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()

"""One remedy of `train`'s default recipe on and off, side by side.

`--compare validation` (the default): `train`'s default keeps 10% of the
training clients for validation: they pick the round the run keeps and halve
the client learning rate after an evaluation without gain.  The other arm
runs with `--validation-fraction 0 --lr-decay 1` (every training client
trains, the rate stays, the last round is kept).

`--compare average`: `train`'s default evaluates and keeps a moving average
of the global model across rounds; the other arm, `--weight-average 0`,
the server's own weights.

Each arm runs `keyboard-lm train` on the same corpus, at the same time, in
its own process.  Both report the held-out numbers of the model they keep;
held-out clients are never used for a decision.

    python benchmarks/recipes/validation_benchmark.py [--compare validation|average] [--rounds 350] [-- TRAIN_ARGS ...]

TRAIN_ARGS (e.g. `--data ../shared/data/tinyshakespeare/input.txt --format
shakespeare --partition iid --num-clients 100`) go to both runs; without
them the corpus is the embedded default.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.runs import seeds_line  # noqa: E402

COMPARISONS = {
    "validation": {"validation (train default)": [],
                   "no validation": ["--validation-fraction", "0", "--lr-decay", "1"]},
    "average": {"weight average 0.99 (train default)": [], "no weight average": ["--weight-average", "0"]},
}


def _summary(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    evals = [r for r in rows if r["recall_at_3"]]
    kept, best = info["final_metrics"], info.get("best")
    return {"kept_round": best["round"] if best else int(rows[-1]["round"]),
            "kept_recall_at_3": kept["recall_at_3"], "kept_perplexity": kept["perplexity"],
            "last_recall_at_3": float(evals[-1]["recall_at_3"]), "last_perplexity": float(evals[-1]["perplexity"]),
            "training_clients": info["data"]["train_clients"] - info["data"].get("validation_clients", 0),
            "seconds": float(rows[-1]["elapsed_seconds"]),
            "curve": [(int(r["round"]), float(r["recall_at_3"]), float(r["perplexity"])) for r in evals]}


def main():
    argv = sys.argv[1:]
    train_args = argv[argv.index("--") + 1:] if "--" in argv else []
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--compare", choices=sorted(COMPARISONS), default="validation",
                   help="the remedy turned off in the second arm (validation)")
    p.add_argument("--rounds", type=int, default=350, help="rounds per run (350, train's default)")
    p.add_argument("--work", default=os.path.join("runs", "validation_benchmark"), help="run directories")
    p.add_argument("--name", default="validation_benchmark", help="base name of the result files")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    dirs, procs = {}, []
    os.makedirs(args.work, exist_ok=True)
    arms = COMPARISONS[args.compare]
    for i, (arm, extra) in enumerate(arms.items()):
        dirs[arm] = os.path.join(args.work, f"{args.name}_{i}")
        cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", "--out", dirs[arm], "--overwrite",
               "--rounds", str(args.rounds), "--no-phrases", *train_args, *extra]
        log = open(dirs[arm] + ".log", "w")  # noqa: SIM115 - closed when the process ends
        procs.append((subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    failed = []
    for (proc, log), arm in zip(procs, arms):
        if proc.wait():
            failed.append(arm)
        log.close()
    if failed:
        sys.exit(f"{', '.join(failed)} failed; see {args.work}/*.log")
    results = {arm: _summary(d) for arm, d in dirs.items()}
    lines = [f"Corpus: `keyboard-lm train {' '.join(train_args) or '(embedded default)'}`, {args.rounds} rounds.", "",
             "| arm | training clients | kept round | kept recall@3 / perplexity | last round recall@3 / perplexity "
             "| seconds |", "|---|---|---|---|---|---|"]
    for arm, r in results.items():
        lines.append(f"| {arm} | {r['training_clients']} | {r['kept_round']} | {r['kept_recall_at_3']:.4f} / "
                     f"{r['kept_perplexity']:.1f} | {r['last_recall_at_3']:.4f} / {r['last_perplexity']:.1f} | "
                     f"{r['seconds']:.0f} |")
    note = ("\nBoth runs at the same time on the same machine. Dropout masks are drawn unseeded inside TFF's "
            "runtime, so a repeat moves the figures a little.\n")
    paths = result_file.write(args.name, {"compare": args.compare, "rounds": args.rounds, "train_args": train_args,
                                      "arms": results},
                          "\n".join(lines) + note, args.out,
                          seeds=seeds_line(dirs, "dropout masks inside TFF are not seeded"))
    print("\n".join(lines))
    print("written:", *paths)


if __name__ == "__main__":
    main()

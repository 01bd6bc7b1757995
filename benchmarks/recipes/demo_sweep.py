"""The demo's server learning rate from the base, chosen on validation clients (never on held-out ones).

    python benchmarks/recipes/demo_sweep.py --server-lrs 0.002,0.005,0.01,0.02

Each value trains the demo's recipe from the package's base (``keyboard_lm.federated.demo.demo_recipe``:
its rounds, clients, client rate and quantization-aware model) with 10% of the demo's training clients set
aside as validation clients that never train; the value whose last round scores the best validation recall@3
is the pick (the demo keeps its last round). The held-out recall@3 is printed for the record only, never
compared. One run at a time; the demo is not bit-deterministic, so a near tie is a tie.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from keyboard_lm.cli.args import comma_list, positive_magnitude  # noqa: E402

VALIDATION_FRACTION = 0.1


def last_evaluation(run_dir: str) -> dict:
    """The last evaluated round's row of the run's metrics.csv."""
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("val_recall_at_3")]
    if not rows:
        raise SystemExit(f"demo_sweep.py: {run_dir} has no validation evaluation")
    return rows[-1]


def train_one(out: str, server_lr: float, seed: int) -> dict:
    from keyboard_lm.federated.demo import train_demo
    from keyboard_lm.models.run_dir import RunRecord

    start = time.time()
    train_demo(out, seed=seed, overwrite=True,
               federated_changes={"server_lr": server_lr, "validation_fraction": VALIDATION_FRACTION})
    row = last_evaluation(out)
    return {"server_lr": server_lr, "rounds": int(row["round"]), "seconds": round(time.time() - start, 1),
            "val_recall_at_3": float(row["val_recall_at_3"]), "heldout_recall_at_3": float(row["recall_at_3"]),
            "model_type": RunRecord.read(out).model["model_type"]}


def report(rows: list[dict], pick: dict) -> str:
    lines = [f"The demo's recipe from the package's base ({rows[0]['model_type']}), {rows[0]['rounds']} rounds, "
             f"{VALIDATION_FRACTION:.0%} of its training clients as validation; the pick is the best validation "
             "recall@3 at the last round (held-out shown, never compared).", "",
             "| server lr | validation recall@3 | held-out recall@3 | seconds |", "|---:|---:|---:|---:|"]
    for r in rows:
        mark = "**" if r is pick else ""
        lines.append(f"| {mark}{r['server_lr']:g}{mark} | {mark}{r['val_recall_at_3']:.4f}{mark} | "
                     f"{r['heldout_recall_at_3']:.4f} | {r['seconds']:.0f} |")
    return "\n".join(lines + ["", f"Pick: server lr {pick['server_lr']:g}."])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server-lrs", type=comma_list(positive_magnitude), default=[0.002, 0.005, 0.01, 0.02],
                   help="server rates to try, comma-separated (0.002,0.005,0.01,0.02)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=os.path.join("runs", "demo_sweep"))
    p.add_argument("--name", default="demo_sweep")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args(argv)
    rates = args.server_lrs
    started = time.time()
    rows = []
    for rate in rates:
        rows.append(train_one(os.path.join(args.work, f"lr{rate:g}"), rate, args.seed))
        print(f"server lr {rate:g}: validation recall@3 {rows[-1]['val_recall_at_3']:.4f}", flush=True)
    pick = max(rows, key=lambda r: r["val_recall_at_3"])
    result_file.publish(args.name, {"rows": rows, "pick": pick["server_lr"]}, report(rows, pick), args.out, started,
                        seeds=f"{args.seed} (the demo's; not bit-deterministic)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

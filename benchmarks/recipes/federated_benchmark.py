"""Federated algorithms on Tiny Shakespeare by role, 10 clients per round.

FedAvg vs FedAvgM (Nesterov) vs FedAdam vs FedAtt, each with CIFG and
SI-CIFG; held-out recall@3 and perplexity against round, with the centralized
model as reference (Hard et al.: federated training matches server training).

    python benchmarks/recipes/federated_benchmark.py --data ../shared/data/tinyshakespeare/input.txt --rounds 30
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from keyboard_lm.data.corpora import load_shakespeare  # noqa: E402
from keyboard_lm.data.config import ClientDataConfig  # noqa: E402
from keyboard_lm.data.split import SplitConfig  # noqa: E402
from keyboard_lm.federated.config import FederatedConfig  # noqa: E402
from keyboard_lm.errors import TrainingDivergedError  # noqa: E402
from keyboard_lm.federated.run_start import RunOptions  # noqa: E402
from keyboard_lm.federated.trainer import train_federated  # noqa: E402
from keyboard_lm.federated.config import LoopConfig  # noqa: E402
from keyboard_lm.models.config import ModelConfig  # noqa: E402

SETTINGS = {
    "FedAvg": dict(algorithm="fedavg", server_optimizer="sgd", server_lr=1.0, client_lr=0.5),
    "FedAvgM": dict(algorithm="fedavg", server_optimizer="nesterov", server_lr=1.0, server_momentum=0.9,
                    client_lr=0.5),
    "FedAdam": dict(algorithm="fedavg", server_optimizer="adam", server_lr=0.01, client_lr=0.5),
    "FedAtt": dict(algorithm="fedatt", fedatt_eps=1.0, fedatt_p=2.0, client_lr=0.5),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--models", default="cifg,si-cifg")
    p.add_argument("--algorithms", default=",".join(SETTINGS))
    p.add_argument("--name", default="federated_benchmark", help="results file name")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args()
    corpus = load_shakespeare(args.data)
    curves, rows = {}, []
    for model_type in args.models.split(","):
        for name in args.algorithms.split(","):
            start = time.time()
            with tempfile.TemporaryDirectory() as run_dir:
                fed = FederatedConfig(clients_per_round=10, rounds=args.rounds, seed=0, dropout=0.0,  # as published
                                      weight_average=0.0, **SETTINGS[name])
                status = "ok"
                try:
                    train_federated(corpus, run_dir, ModelConfig(model_type), fed, SplitConfig(0.1, seed=0),
                                    RunOptions(log=lambda s: print(s, flush=True)), data_config=ClientDataConfig(),
                                    loop=LoopConfig(eval_every=args.eval_every, checkpoint_every=args.rounds))
                except TrainingDivergedError as e:
                    status = f"diverged: {e}".split(";")[0]
                with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
                    evals = [r for r in csv.DictReader(f) if r["recall_at_3"]]
            key = f"{name} {model_type}"
            curves[key] = [{"round": int(r["round"]), "recall_at_3": float(r["recall_at_3"]),
                            "perplexity": float(r["perplexity"])} for r in evals]
            last = curves[key][-1] if curves[key] else {"round": 0, "recall_at_3": float("nan"), "perplexity": float("nan")}
            rows.append({"run": key, "status": status, **last, "seconds": round(time.time() - start)})
            print(rows[-1], flush=True)
    _plot(curves, os.path.join(args.out, f"{args.name}.png"))
    lines = ["| algorithm, model | last eval round | held-out recall@3 | perplexity | status | seconds |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['run']} | {r['round']} | {r['recall_at_3']:.4f} | {r['perplexity']:.1f} | {r['status']} | "
              f"{r['seconds']} |" for r in rows]
    note = ("\nTiny Shakespeare by role (269 training roles, 30 held-out), paper-size models (V=10k, D=96, H=670), "
            f"10 clients per round, client SGD lr 0.5, batch 10, up to 120 batches per client, {args.rounds} rounds. "
            f"Curves: {args.name}.png.\n")
    result_file.write(args.name, {"rows": rows, "curves": curves}, "\n".join(lines) + note, args.out,
                      seeds="0 (fixed in the script: `FederatedConfig(seed=0)` and `SplitConfig(0.1, seed=0)` for "
                            "every run)")
    print("\n".join(lines))


def _plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for key, pts in curves.items():
        if pts:
            a1.plot([p["round"] for p in pts], [p["recall_at_3"] for p in pts], label=key)
            a2.plot([p["round"] for p in pts], [p["perplexity"] for p in pts], label=key)
    a1.set_xlabel("round")
    a1.set_ylabel("held-out recall@3")
    a2.set_xlabel("round")
    a2.set_ylabel("held-out perplexity")
    a2.set_yscale("log")
    a1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()

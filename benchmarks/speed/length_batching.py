"""Length-grouped batches against padded ones in `train --centralized`: the same runs' time and held-out quality.

    python benchmarks/speed/length_batching.py [--corpora shakespeare,mail] [--seeds 0,1] \
        [--recipe "--init-from base"] [--tag T] [--work runs/length_batching] [--name length_batching]

    # the pretraining regime (batch 256, sampled softmax), from random weights:
    python benchmarks/speed/length_batching.py --corpora shakespeare --tag _pretrain --name length_batching_pretrain \
        --recipe "--batch-size 256 --sampled-softmax 1024 --ngram-teacher 0 --dropout 0.1 --weight-drop 0 --lr 0.004"

For each corpus and seed, two runs of `keyboard-lm train --centralized` that differ only in ``--batching``
(``padded``: every example padded to 20 tokens, the batches of ``--batch-size`` examples; ``length``:
``data.length_batches``, similar-length examples with their trailing pads cut, about as many real targets per
batch). Reports each pair's epoch time (fit and evaluation, metrics.csv), the run's training time, and the
kept model's held-out recall@1/@3 with the paired 95% interval of length / padded over the held-out users
(``evaluation.paired_intervals``, 1,000 draws). A run already finished in ``--work`` is collected, not rerun.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.corpora import CORPORA  # noqa: E402
from benchmarks.common.curves import metrics_rows  # noqa: E402
from benchmarks.common.heldout import heldout_by_user  # noqa: E402
from benchmarks.common.runs import finished, seeds_line, train_from_base, trained  # noqa: E402

BATCHINGS = ("padded", "length")


def epoch_seconds(run_dir: str) -> list[float]:
    """Each epoch's seconds (its fit and its evaluations) as metrics.csv records them."""
    return [float(r["seconds"]) for r in metrics_rows(run_dir, evaluated=False) if r.get("epoch") and r.get("seconds")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpora", default="shakespeare,mail", help=f"from {', '.join(CORPORA)} (shakespeare,mail)")
    p.add_argument("--seeds", default="0,1", help="training seeds (0,1)")
    p.add_argument("--recipe", default="--init-from base",
                   help="the other train flags of both arms (\"--init-from base\": the fine-tuning recipe; without "
                        "--init-from base first, from random weights)")
    p.add_argument("--work", default=os.path.join("runs", "length_batching"), help="run directories")
    p.add_argument("--tag", default="", help="added to the run directories' names (a second recipe's runs)")
    p.add_argument("--name", default="length_batching")
    args = p.parse_args(argv)
    corpora = [c for c in args.corpora.split(",") if c]
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown:
        p.error(f"--corpora: unknown {', '.join(unknown)} (choose from {', '.join(CORPORA)})")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        p.error(f"--seeds: comma-separated integers, got {args.seeds!r}")
    recipe = shlex.split(args.recipe)
    init_base = recipe[:2] == ["--init-from", "base"]
    recipe = recipe[2:] if init_base else recipe

    from keyboard_lm.evaluation import paired_intervals

    rows, run_dirs = [], {}
    for corpus in corpora:
        for seed in seeds:
            pair = {}
            for batching in BATCHINGS:
                run_dir = os.path.join(args.work, f"{corpus}{args.tag}_{batching}_s{seed}")
                run_dirs[f"{corpus} {batching} s{seed}"] = run_dir
                if not finished(run_dir):
                    flags = ["--centralized", "--batching", batching, "--seed", str(seed), *recipe]
                    train_from_base(CORPORA[corpus], flags, run_dir, init_from="base" if init_base else None)
                result = heldout_by_user(run_dir, CORPORA[corpus])
                pair[batching] = {"run_dir": run_dir, "result": result, "epochs": epoch_seconds(run_dir),
                                  "trained": trained(run_dir)}
            a, b = pair["length"], pair["padded"]
            ci = paired_intervals(a["result"], b["result"])
            rows.append({
                "corpus": corpus, "seed": seed,
                **{f"{k}_{m}": pair[k]["result"]["pooled"][m] for k in BATCHINGS
                   for m in ("recall_at_1", "recall_at_3")},
                **{f"{k}_epoch_seconds": statistics.median(pair[k]["epochs"]) for k in BATCHINGS},
                **{f"{k}_training_seconds": pair[k]["trained"]["training_seconds"] for k in BATCHINGS},
                **{f"{k}_epochs": len(pair[k]["epochs"]) for k in BATCHINGS},
                "recall_at_3_ratio": a["result"]["pooled"]["recall_at_3"] / b["result"]["pooled"]["recall_at_3"],
                "recall_at_3_ratio_ci": ci["recall_at_3"], "recall_at_1_ratio_ci": ci["recall_at_1"],
                "users": len(a["result"]["clients"]),
                "trained": {k: pair[k]["trained"] for k in BATCHINGS}})
    header = ("| corpus | seed | epoch s, padded | epoch s, length | x faster | recall@3 padded | recall@3 length | "
              "length / padded [paired 95%] | held-out users |\n|---|---:|---:|---:|---:|---:|---:|---|---:|")
    lines = [f"| {r['corpus']} | {r['seed']} | {r['padded_epoch_seconds']:.0f} | {r['length_epoch_seconds']:.0f} | "
             f"{r['padded_epoch_seconds'] / r['length_epoch_seconds']:.2f} | {r['padded_recall_at_3']:.4f} | "
             f"{r['length_recall_at_3']:.4f} | {r['recall_at_3_ratio']:.3f} [{r['recall_at_3_ratio_ci'][0]:.3f}, "
             f"{r['recall_at_3_ratio_ci'][1]:.3f}] | {r['users']} |" for r in rows]
    note = (f"\nBoth arms: `keyboard-lm train --centralized {args.recipe}` with the corpus's flags, `--seed S` and "
            "`--batching padded|length`; epoch seconds are the median epoch's (fit and evaluation) in metrics.csv. The runs "
            "train one after another, so on a shared machine their time ratio carries the load's swings; "
            "`pretrain_speed.py` measures speed in interleaved rounds.")
    markdown = "\n".join([header, *lines]) + "\n" + note
    result_file.write(args.name, {"recipe": args.recipe, "rows": rows}, markdown, result_file.results_dir("speed"),
                      seeds=seeds_line(run_dirs, "paired intervals: 1,000 bootstrap draws of users, seed 0"),
                      trained=[t for r in rows for t in r["trained"].values()])
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

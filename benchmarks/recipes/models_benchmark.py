"""Models benchmark on Tiny Shakespeare by role (n-gram baselines, CIFG and SI-CIFG, plain-SGD sweep).

1. n-gram (Kneser-Ney, orders 3 and 5) vs centralized CIFG vs centralized
   SI-CIFG: recall@1/@3, in-vocabulary accuracy and perplexity on held-out roles.
2. SI-CIFG vs CIFG trained with plain SGD across a learning-rate sweep
   (Ro et al.: scale-invariant models train well with SGD).

Every neural run uses the paper sizes (V=10k, D=96, H=670, 1.41M parameters),
the same split (10% of roles held out, seed 0) and the same epochs.

    python benchmarks/recipes/models_benchmark.py --data ../shared/data/tinyshakespeare/input.txt
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from keyboard_lm.baselines.ngram import KneserNey  # noqa: E402
from keyboard_lm.data.corpora import load_shakespeare  # noqa: E402
from keyboard_lm.data.split import SplitConfig, split_clients  # noqa: E402
from keyboard_lm.evaluation import evaluate_predict_fn  # noqa: E402
from keyboard_lm.text.vocabulary import Vocabulary  # noqa: E402
from keyboard_lm.errors import TrainingDivergedError  # noqa: E402
from keyboard_lm.training.centralized import train_centralized  # noqa: E402
from keyboard_lm.models.config import ModelConfig  # noqa: E402
from keyboard_lm.training.config import CentralizedConfig, TrainOptions  # noqa: E402

KEYS = ("recall_at_1", "recall_at_3", "iv_accuracy_at_1", "iv_accuracy_at_3", "perplexity")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lrs", default="0.1,0.3,1,3")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--units", type=int, default=670)
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args()

    corpus = load_shakespeare(args.data)
    split = SplitConfig(0.1, seed=0)
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), 10_000)
    rows = []
    for order in (3, 5):
        start = time.time()
        kn = KneserNey(len(vocab), order).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
        r = evaluate_predict_fn(kn.predict_log_probs, corpus, heldout_ids, vocab, 20, batch_size=32)["pooled"]
        rows.append({"model": f"kneser-ney {order}-gram", "optimizer": "-", "lr": None, **{k: r[k] for k in KEYS},
                     "seconds": round(time.time() - start, 1)})
        print(rows[-1], flush=True)
    for model_type in ("cifg", "si-cifg"):
        for lr in [float(x) for x in args.lrs.split(",")]:
            start = time.time()
            with tempfile.TemporaryDirectory() as run_dir:
                # Plain SGD as Ro et al. compare it: no regularizer, no validation split, last epoch.
                config = CentralizedConfig(optimizer="sgd", learning_rate=lr, epochs=args.epochs,
                                           batch_size=args.batch_size, clipnorm=None, seed=0, dropout=0.0,
                                           weight_drop=0.0, weight_average=0.0, validation_fraction=0.0,
                                           ngram_teacher=0.0)
                try:
                    r = train_centralized(corpus, run_dir, ModelConfig(model_type, units=args.units), config,
                                          split, TrainOptions(log=lambda s: print(s, flush=True)))["pooled"]
                    metrics = {k: r[k] for k in KEYS}
                except TrainingDivergedError as e:
                    metrics = {k: float("nan") for k in KEYS}
                    print(e, flush=True)
            rows.append({"model": f"centralized {model_type}", "optimizer": "sgd", "lr": lr, **metrics,
                         "seconds": round(time.time() - start, 1)})
            print(rows[-1], flush=True)

    lines = ["| model | optimizer | lr | recall@1 | recall@3 | iv-acc@1 | iv-acc@3 | perplexity | seconds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['optimizer']} | {r['lr'] if r['lr'] is not None else '-'} | "
                     f"{r['recall_at_1']:.4f} | {r['recall_at_3']:.4f} | {r['iv_accuracy_at_1']:.4f} | "
                     f"{r['iv_accuracy_at_3']:.4f} | {r['perplexity']:.1f} | {r['seconds']} |")
    note = (f"\nTiny Shakespeare by role: {len(train_ids)} training roles, {len(heldout_ids)} held-out roles "
            f"(split seed 0), V={len(vocab)}, sequence length 20, batch {args.batch_size}, "
            f"{args.epochs} epochs of plain SGD without clipping for every neural run.\n")
    paths = result_file.write("models_benchmark", {"rows": rows, "epochs": args.epochs}, "\n".join(lines) + note, args.out,
                              seeds="0 (fixed in the script: the split, `SplitConfig(0.1, seed=0)`, and every "
                                    "model's training, seed=0)")
    print("\n".join(lines))
    print("written:", *paths)


if __name__ == "__main__":
    main()

"""TFF overhead: one federated round vs the same client steps in plain TensorFlow.

For K clients, each running E local epochs of SGD over its batches, the TFF
round (tff.learning FedAvg, C++ runtime) is timed against a plain TensorFlow
loop in one process that performs exactly the same steps on exactly the same
batches (reset weights per client, SGD steps, delta, weighted mean).  Both
run side by side in one process; the ratio is TFF / plain (target <= 1.5).

    python benchmarks/tff_overhead.py --data ../shared/data/tinyshakespeare/input.txt
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import _report  # noqa: E402
from keyboard_lm.data.corpora import load_default, load_shakespeare  # noqa: E402
from keyboard_lm.data.preprocessing import ClientDataConfig, encode_clients  # noqa: E402
from keyboard_lm.data.split import SplitConfig, split_clients  # noqa: E402
from keyboard_lm.federated.client_data import batched, example_client_data  # noqa: E402
from keyboard_lm.federated.process import FederatedConfig, build_process  # noqa: E402
from keyboard_lm.federated.trainer import sample_clients  # noqa: E402
from keyboard_lm.models.config import ModelConfig  # noqa: E402
from keyboard_lm.models.language_model import build_model  # noqa: E402
from keyboard_lm.models.metrics import loss_fn  # noqa: E402
from keyboard_lm.text.vocabulary import Vocabulary  # noqa: E402


class PlainFedAvg:
    """FedAvg's client work and mean in plain TF: same steps, same batches, one process."""

    def __init__(self, model, lr):
        self.model = model
        self.opt = tf.keras.optimizers.SGD(lr)
        loss = loss_fn()

        @tf.function(reduce_retracing=True)
        def step(x, y):
            with tf.GradientTape() as tape:
                value = loss(y, model(x, training=True))
            self.opt.apply_gradients(zip(tape.gradient(value, model.trainable_weights), model.trainable_weights))

        self.step = step

    def round(self, server_weights, datasets):
        total = [np.zeros_like(w) for w in server_weights]
        n_total = 0
        for ds in datasets:
            self.model.set_weights(server_weights)
            n = 0
            for x, y in ds:
                self.step(x, y)
                n += int(x.shape[0])
            for t, w0, w in zip(total, server_weights, self.model.get_weights()):
                t += n * (w - w0)
            n_total += n
        return [w0 + t / max(n_total, 1) for w0, t in zip(server_weights, total)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--clients", default="1,5,10,20")
    p.add_argument("--local-epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per setting (after one warm-up)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = p.parse_args()

    corpus = load_shakespeare(args.data) if os.path.exists(args.data) else load_default()
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig())
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), 10_000)
    model_config = ModelConfig("cifg", len(vocab))
    data_config = ClientDataConfig(epochs=args.local_epochs, max_batches=args.max_batches, shuffle_buffer=0)
    encoded = encode_clients({c: corpus.clients[c] for c in train_ids}, vocab, 20)
    trainable = [c for c in train_ids if len(encoded[c][0])]
    examples = example_client_data({c: encoded[c] for c in trainable})
    spec = (tf.TensorSpec([None, 20], tf.int32),) * 2
    rows = []
    for k in [int(x) for x in args.clients.split(",")]:
        config = FederatedConfig(clients_per_round=k, client_lr=0.5, server_lr=1.0)
        process = build_process(model_config, config, spec)
        state = process.initialize()
        plain = PlainFedAvg(build_model(model_config), 0.5)
        tff_times, plain_times, steps = [], [], []
        for r in range(args.rounds + 1):
            ids = sample_clients(trainable, k, 0, r)
            datasets = [batched(examples.create_tf_dataset_for_client(c), data_config) for c in ids]
            materialized = [list(ds) for ds in datasets]
            t0 = time.perf_counter()
            out = process.next(state, datasets)
            t1 = time.perf_counter()
            weights = [np.array(w) for w in process.get_model_weights(state).trainable]
            plain.round(weights, materialized)
            t2 = time.perf_counter()
            state = out.state
            if r > 0:  # round 0 warms up both (tracing, worker start)
                tff_times.append(t1 - t0)
                plain_times.append(t2 - t1)
                steps.append(sum(len(m) for m in materialized))
        row = {"clients_per_round": k, "steps_per_round": float(np.mean(steps)),
               "tff_seconds": float(np.median(tff_times)), "plain_seconds": float(np.median(plain_times))}
        row["ratio"] = row["tff_seconds"] / row["plain_seconds"]
        rows.append(row)
        print(row, flush=True)
    lines = ["| clients/round | steps/round | TFF round (s) | plain TF (s) | ratio TFF/plain |", "|---|---|---|---|---|"]
    lines += [f"| {r['clients_per_round']} | {r['steps_per_round']:.0f} | {r['tff_seconds']:.2f} | "
              f"{r['plain_seconds']:.2f} | {r['ratio']:.2f} |" for r in rows]
    note = (f"\nCIFG V={len(vocab)}, D=96, H=670 on {corpus.name}; client batch 10, at most {args.max_batches} "
            f"batches per client, {args.local_epochs} local epoch(s); median of {args.rounds} rounds after a warm-up. "
            "Target: ratio <= 1.5.\n")
    _report.write("tff_overhead", {"rows": rows}, "\n".join(lines) + note, args.out)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""TFF overhead: one federated round vs the same client steps in plain TensorFlow.

For K clients, each running E local epochs of SGD over its batches, the TFF
round (tff.learning FedAvg, C++ runtime) is timed against a plain TensorFlow
loop in one process that performs exactly the same steps on exactly the same
batches (reset weights per client, SGD steps, delta, zeroing of non-finite
deltas, weighted mean).  Like for like: neither side clips (TFF: ``--clip
none``, whose aggregator still zeroes non-finite updates, as the plain side
does), and the plain side computes the loss, as TFF's loss-only model does.
TFF variants: all seven Keras metrics per batch (what training computed
first), loss and counts only (TFF's dataset-reduce loop, as `train` ran
until 2026-11-24), the latter with TFF's iterator ("simulation") client loop,
and the latter with client models whose weights start at zero instead of
being drawn at random (what `keyboard-lm train` runs now: the broadcast model
overwrites them), and that with the C++ runtime running at most C client
computations at once (``max_concurrent_computation_calls``; TFF's default,
-1, runs all K at once), one local C++ context per C.  Everything runs side by side in one
process; the ratio is TFF / plain (target <= 1.5).

``--isolation`` prices the local worker's isolation: what `train` runs, on its
worker in a network namespace of its own behind a relay and a Unix socket,
against the same on TFF's own local worker (direct TCP to a worker listening
on every interface).  So that the latter opens no port to the network, the
whole benchmark then runs in a network namespace of its own (``unshare``),
whose only interface is loopback.

    python benchmarks/speed/tff_overhead.py --data ../shared/data/tinyshakespeare/input.txt
    python benchmarks/speed/tff_overhead.py --clients 10 --rounds 20 --isolation
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from keyboard_lm.data.corpora import load_default, load_shakespeare  # noqa: E402
from keyboard_lm.data.preprocessing import encode_clients  # noqa: E402
from keyboard_lm.data.config import ClientDataConfig  # noqa: E402
from keyboard_lm.data.split import SplitConfig, split_clients  # noqa: E402
from keyboard_lm.federated.client_data import batched, example_client_data  # noqa: E402
from keyboard_lm.federated.process import build_process  # noqa: E402
from keyboard_lm.federated.config import FederatedConfig  # noqa: E402
from keyboard_lm.federated import local_worker  # noqa: E402
from keyboard_lm.federated.runtime import import_tff  # noqa: E402
from keyboard_lm.federated.rounds import sample_clients  # noqa: E402
from keyboard_lm.models.config import ModelConfig  # noqa: E402
from keyboard_lm.models.language_model import build_model  # noqa: E402
from keyboard_lm.models.metrics import loss_fn  # noqa: E402
from keyboard_lm.text.vocabulary import Vocabulary  # noqa: E402

tff = import_tff()
# What `keyboard-lm train` runs.
TRAIN = "TFF, loss only, iterator loop, zero-initialized client model"
TFF_OWN = f"{TRAIN}, on TFF's own local worker (direct TCP, no isolation)"
_PRIVATE_NET = "KEYBOARD_LM_BENCH_PRIVATE_NET"


def _reexec_in_private_network() -> None:
    """Run this benchmark again in a network namespace of its own (root, or a user namespace mapping the caller
    to root), so that TFF's own worker, which listens on every interface, is reachable from nowhere."""
    import shutil

    if shutil.which("unshare") is None:
        sys.exit("tff_overhead: --isolation needs util-linux's unshare (a network namespace of its own)")
    argv = ["unshare", "--net", *([] if os.geteuid() == 0 else ["--map-root-user"]), sys.executable,
            *sys.argv]
    os.execvpe("unshare", argv, {**os.environ, _PRIVATE_NET: "1"})


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
            return value

        self.step = step

    def round(self, server_weights, datasets):
        total = [np.zeros_like(w) for w in server_weights]
        n_total = 0
        for ds in datasets:
            self.model.set_weights(server_weights)
            n = 0
            loss_sum = 0.0
            for x, y in ds:
                loss_sum += float(self.step(x, y)) * int(x.shape[0])
                n += int(x.shape[0])
            deltas = [w - w0 for w0, w in zip(server_weights, self.model.get_weights())]
            if not all(np.isfinite(d).all() for d in deltas):
                continue  # zeroed, as TFF's zeroing aggregator does
            for t, d in zip(total, deltas):
                t += n * d
            n_total += n
        return [w0 + t / max(n_total, 1) for w0, t in zip(server_weights, total)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--clients", default="10,50")
    p.add_argument("--local-epochs", type=int, default=1)
    p.add_argument("--max-batches", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per setting (after one warm-up)")
    p.add_argument("--concurrency", default="1,2,4",
                   help="comma-separated C: a loss-only variant with at most C concurrent client calls each")
    p.add_argument("--variants", default="", help="';'-separated variant names to run (default: all)")
    p.add_argument("--isolation", action="store_true",
                   help="only what `train` runs, on its isolated local worker and on TFF's own (direct TCP); "
                        "runs in a network namespace of its own")
    p.add_argument("--out", default=result_file.results_dir("speed"))
    args = p.parse_args()
    if args.isolation and os.environ.get(_PRIVATE_NET) != "1":
        _reexec_in_private_network()
    if args.isolation:
        from keyboard_lm.federated.worker_relay import loopback_up

        loopback_up()  # TFF's own worker is dialled at localhost
        args.concurrency, args.variants = "", TRAIN

    corpus = load_shakespeare(args.data) if os.path.exists(args.data) else load_default()
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig())
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), 10_000)
    model_config = ModelConfig("cifg", len(vocab))
    data_config = ClientDataConfig(epochs=args.local_epochs, max_batches=args.max_batches, shuffle_buffer=0)
    encoded = encode_clients({c: corpus.clients[c] for c in train_ids}, vocab, 20)
    trainable = [c for c in train_ids if len(encoded[c][0])]
    examples = example_client_data({c: encoded[c] for c in trainable})
    spec = (tf.TensorSpec([None, 20], tf.int32),) * 2
    # TFF's defaults first (dataset-reduce loop, client models drawn at random), then what `train` runs.
    before = {"loop": "reduce", "zero_init_clients": False}
    variants = {"TFF, 7 Keras metrics": {"metrics": True, **before},
                "TFF, loss only": {"metrics": False, **before},
                "TFF, loss only, iterator loop": {"metrics": False, "loop": "iterator", "zero_init_clients": False},
                TRAIN: {"metrics": False, "loop": "iterator", "zero_init_clients": True}}
    concurrency = {}
    for c in [int(x) for x in args.concurrency.split(",") if x]:
        name = f"{TRAIN}, at most {c} concurrent client calls"
        variants[name] = variants[TRAIN]
        concurrency[name] = local_worker.create_context(max_concurrent_calls=c)
    if args.variants:
        keep = [v.strip() for v in args.variants.split(";")]
        variants = {k: v for k, v in variants.items() if k in keep}
    if args.isolation:
        variants[TFF_OWN] = variants[TRAIN]
        concurrency[TFF_OWN] = tff.backends.native.create_sync_local_cpp_execution_context()
    rows = []
    for k in [int(x) for x in args.clients.split(",")]:
        config = FederatedConfig(clients_per_round=k, client_lr=0.5, server_optimizer="sgd", server_lr=1.0,
                                 clip="none", dropout=0.0)
        processes = {name: build_process(model_config, config, spec, **v) for name, v in variants.items()}

        def context(name):
            ctx = concurrency.get(name)
            return tff.framework.get_context_stack().install(ctx) if ctx else contextlib.nullcontext()

        states = {}
        for name, proc in processes.items():
            with context(name):
                states[name] = proc.initialize()
        plain = PlainFedAvg(build_model(model_config), 0.5)
        times = {name: [] for name in [*variants, "plain"]}
        steps = []
        for r in range(args.rounds + 1):
            ids = sample_clients(trainable, k, 0, r)
            datasets = [batched(examples.create_tf_dataset_for_client(c), data_config) for c in ids]
            materialized = [list(ds) for ds in datasets]
            # The same starting weights for every side: the first variant's.
            first = next(iter(processes))
            weights = [np.array(w) for w in processes[first].get_model_weights(states[first]).trainable]
            # Every side runs once per round; the order rotates from round to round, so that no side
            # always runs right after another (the worker frees the previous call's memory meanwhile).
            sides = [*processes, "plain"]
            for name in sides[r % len(sides):] + sides[:r % len(sides)]:
                if name == "plain":
                    t0 = time.perf_counter()
                    plain.round(weights, materialized)
                else:
                    with context(name):
                        t0 = time.perf_counter()
                        states[name] = processes[name].next(states[name], datasets).state
                if r > 0:  # round 0 warms up (tracing, worker start)
                    times[name].append(time.perf_counter() - t0)
            if r > 0:
                steps.append(sum(len(m) for m in materialized))
        plain_s = float(np.median(times["plain"]))
        for name in variants:
            tff_s = float(np.median(times[name]))
            rows.append({"clients_per_round": k, "variant": name, "steps_per_round": float(np.mean(steps)),
                         "tff_seconds": tff_s, "plain_seconds": plain_s, "ratio": tff_s / plain_s,
                         "tff_round_seconds": times[name], "plain_round_seconds": times["plain"]})
            print({k: v for k, v in rows[-1].items() if not k.endswith('round_seconds')}, flush=True)
    lines = ["| clients/round | steps/round | TFF variant | TFF round (s) | plain TF (s) | ratio TFF/plain | "
             "TFF s per step |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['clients_per_round']} | {r['steps_per_round']:.0f} | {r['variant']} | {r['tff_seconds']:.2f} | "
              f"{r['plain_seconds']:.2f} | {r['ratio']:.2f} | {r['tff_seconds'] / r['steps_per_round']:.4f} |"
              for r in rows]
    note = (f"\nCIFG V={len(vocab)}, D=96, H=670 on {corpus.name}; client batch 10, at most {args.max_batches} "
            f"batches per client, {args.local_epochs} local epoch(s); median of {args.rounds} rounds after a warm-up, "
            "the order of the sides rotating from round to round. "
            "No clipping on either side; non-finite updates zeroed on both. "
            "Target: ratio <= 1.5, and round time linear in clients per round (constant s per step).\n")
    if args.isolation:
        isolated = next(r for r in rows if r["variant"] == TRAIN)
        own = next(r for r in rows if r["variant"] == TFF_OWN)
        from scipy import stats

        ratios = np.log(np.array(isolated["tff_round_seconds"]) / np.array(own["tff_round_seconds"]))
        half = stats.t.ppf(0.975, len(ratios) - 1) * ratios.std(ddof=1) / np.sqrt(len(ratios))
        rows.append({"variant": "isolated / TFF's own, paired by round", "geometric_mean": float(np.exp(ratios.mean())),
                     "ci95": [float(np.exp(ratios.mean() - half)), float(np.exp(ratios.mean() + half))]})
        note += (f"\nIsolation: isolated / TFF's own local worker, paired round by round (geometric mean of "
                 f"{len(ratios)} rounds, 95% t-interval): {rows[-1]['geometric_mean']:.3f} "
                 f"[{rows[-1]['ci95'][0]:.3f}, {rows[-1]['ci95'][1]:.3f}]; medians "
                 f"{isolated['tff_seconds']:.2f} s vs {own['tff_seconds']:.2f} s.\n")
    name = "tff_overhead_isolation" if args.isolation else "tff_overhead"
    result_file.write(name, {"rows": rows}, "\n".join(lines) + note, args.out,
                      seeds="0 (fixed in the script: the default split and the clients sampled each round, "
                            "`sample_clients(..., seed 0, round)`)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
    # The extra C++ contexts (--concurrency) keep threads that block the interpreter's exit, and their
    # workers outlive it: stop the workers, then leave without waiting for those threads.
    from keyboard_lm.federated.runtime import stop_workers

    stop_workers()
    sys.stdout.flush()
    os._exit(0)

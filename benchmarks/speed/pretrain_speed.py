"""Pretraining throughput: training tokens per second of the paper-size CIFG, side by side in one run.

    python benchmarks/speed/pretrain_speed.py [--data build/base_corpus/corpus.jsonl --format jsonl] \
        [--variants "sampled1024:256,sampled1024:256:fused:xla"] [--seconds 60] [--rounds 6] \
        [--vocab-size 10000] [--name pretrain_speed]

Each variant is ``<softmax>:<batch size>[:option...]``: ``full`` is the V-wide
softmax, ``sampledN`` the sampled softmax of ``--sampled-softmax N``
(``training.sampled_softmax``). Options: ``unroll`` unrolls Keras's loop over
the 20 steps (``build_model(unroll=True)``); ``fused`` trains through the
cell's ``sequence`` (the inputs' share of the gates as one matrix product over
the whole batch, the steps unrolled; ``build_model(fused=True)``); ``xla``
compiles the loss and its gradients with XLA (``jit_compile``, sampled softmax
only); ``length`` batches as ``train --centralized --batching length`` does
(``data.length_batches``: similar-length examples with their trailing pads cut,
about ``batch`` x the mean length in real targets per batch, the model's time
dimension dynamic); ``packed`` lays each padded batch's examples end to end in
full rows with the state reset at each, as ``--batching packed`` does (the same
examples per step, fewer positions; ``training.packed``); ``lr=R`` sets the learning rate (reported only: throughput does not
depend on it). Every variant trains the same model (V words, D=96, H=670, Adam
with clipnorm 5, dropout 0.1 and the weight average of 0.999 as
``train --centralized`` does) from the same initialization on the same
examples (20-token examples as the trainer builds them, from ``--examples``
texts drawn at random, seed 0) through Keras ``fit``. Tokens are non-pad
targets.

The machine may be shared, so the variants are interleaved: all are built and
warmed up first, then each runs ``--seconds / --rounds`` seconds in every
round, and a float32 matrix product (2048^3, TF on all cores) measures the
machine's peak FLOP rate in the same round. A variant's ratio to the first is
the median over rounds of its tokens/s over the first's in that round; its
share of peak is its model FLOP rate (``flops_per_position``, forward and
backward, counted analytically, over the positions it computes, pads included)
over the round's matmul rate, and its useful share the same over its real
targets only.

Writes benchmarks/results/speed/NAME.{json,md} with the machine, date and command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common.result_file import write  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "speed")
OPTIONS = ("unroll", "fused", "xla", "length", "packed")
D, H = 96, 670


def parse_variant(text: str) -> dict:
    """``sampled1024:256:fused:xla`` -> {"sampled": 1024, "batch": 256, "fused": True, "xla": True, ...}."""
    softmax, _, rest = text.partition(":")
    batch, _, opts = rest.partition(":")
    if softmax == "full":
        sampled = 0
    elif softmax.startswith("sampled") and softmax[len("sampled"):].isdigit():
        sampled = int(softmax[len("sampled"):])
    else:
        raise SystemExit(f"bad variant {text!r}: <full|sampledN>:<batch size>[:option...]")
    if not batch.isdigit() or int(batch) < 1:
        raise SystemExit(f"bad variant {text!r}: the batch size after ':' must be a positive integer")
    out = {"sampled": sampled, "batch": int(batch), "lr": 0.004, **{o: False for o in OPTIONS}}
    for opt in filter(None, opts.split(":")):
        if opt in OPTIONS:
            out[opt] = True
        elif opt.startswith("lr="):
            try:
                out["lr"] = float(opt[3:])
            except ValueError:
                raise SystemExit(f"bad variant {text!r}: lr=<number>") from None
        else:
            raise SystemExit(f"bad variant {text!r}: unknown option {opt!r} (choose from {', '.join(OPTIONS)}, lr=R)")
    if out["xla"] and not sampled:
        raise SystemExit(f"bad variant {text!r}: xla compiles the sampled-softmax step only")
    return out


def flops_per_position(vocab_size: int, sampled: int) -> int:
    """Forward + backward FLOPs of one position (one input token and its target) of a training step.

    Multiply-adds (MACs) of the forward pass: the gates [x, h] W with W [D+P, 3H]
    (P = D for the tied CIFG), the projection m P with P [H, D], and the output:
    (S + 1) D for S shared samples plus the target's row, or V D for the full softmax.
    A FLOP is half a MAC; the backward pass costs two forward passes (the gradient
    with respect to each matrix product's input and its weight). The gates'
    elementwise work (about 10 FLOPs per gate unit) and the per-step optimizer and
    weight average are left out (under 1% at batch 256).
    """
    macs = (D + D) * 3 * H + H * D + ((sampled + 1) * D if sampled else vocab_size * D)
    return 2 * macs * 3


def build(spec: dict, vocab_size: int, seq_len: int):
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model
    from keyboard_lm.models.metrics import loss_fn
    from keyboard_lm.training.centralized import WeightAverage
    from keyboard_lm.training.packed import use_packed_batches
    from keyboard_lm.training.sampled_softmax import use_sampled_softmax

    tf.keras.utils.set_random_seed(0)
    model = build_model(ModelConfig("cifg", vocab_size, D, H), seq_len=seq_len, dropout=0.1, unroll=spec["unroll"],
                        fused=spec["fused"])
    model.compile(optimizer=tf.keras.optimizers.Adam(spec["lr"], clipnorm=5.0), loss=loss_fn())
    if spec["packed"]:
        use_packed_batches(model, 0.1, spec["sampled"], jit_compile=spec["xla"])
    elif spec["sampled"]:
        use_sampled_softmax(model, spec["sampled"], jit_compile=spec["xla"])
    WeightAverage(model, 0.999)
    return model


def fit_chunk(run: dict, steps: int, x, y) -> tuple[int, int]:
    """Train ``run``'s model on its next ``steps`` batches (cycling through them) with Keras ``fit``, each
    batch cut to its width; returns the real targets and the positions (pads included) it computed."""
    import tensorflow as tf

    picks = [(run["cursor"] + i) % len(run["batches"]) for i in range(steps)]
    run["cursor"] = (run["cursor"] + steps) % len(run["batches"])

    def batches():
        for i in picks:
            if run["packed"] is not None:
                yield run["packed"][i]
                continue
            index, width = run["batches"][i], run["widths"][i]
            yield x[index, :width], y[index, :width]

    width = None if run["spec"]["length"] else x.shape[1]  # a padded batch's width is fixed (unroll needs it)
    sig = (tf.TensorSpec((None, width), tf.int32), tf.TensorSpec((None, width), tf.int32))
    if run["packed"] is not None:
        sig = ((sig[0], tf.TensorSpec((None, width), tf.float32)), sig[1])
    h = run["model"].fit(tf.data.Dataset.from_generator(batches, output_signature=sig), epochs=1, verbose=0)
    run["loss"] = float(h.history["loss"][-1])
    return sum(run["tokens"][i] for i in picks), sum(run["positions"][i] for i in picks)


def peak_gflops(seconds: float) -> float:
    """float32 GFLOP/s of a 2048 x 2048 x 2048 matrix product repeated for about ``seconds``."""
    import tensorflow as tf

    n = 2048
    a, b = tf.random.normal([n, n]), tf.random.normal([n, n])
    mm = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
    mm().numpy()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mm().numpy()
        count += 1
    return 2 * n ** 3 * count / (time.perf_counter() - start) / 1e9


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="corpus (default: the embedded corpus)")
    p.add_argument("--format", default="default")
    p.add_argument("--variants", default="sampled1024:256,sampled1024:256:unroll,sampled1024:256:fused,"
                                         "sampled1024:256:fused:xla,sampled1024:512,sampled1024:1024,sampled512:256")
    p.add_argument("--seconds", type=float, default=60.0, help="timed seconds per variant, over all rounds (60)")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds (6)")
    p.add_argument("--peak-seconds", type=float, default=3.0, help="matmul seconds per round (3)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (3)")
    p.add_argument("--examples", type=int, default=20000, help="examples to cycle through (20,000)")
    p.add_argument("--texts", type=int, default=5000, help="texts drawn at random (seed 0) to make them (5,000)")
    p.add_argument("--vocab-size", type=int, default=10_000, help="V (10,000)")
    p.add_argument("--name", default="pretrain_speed")
    args = p.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.length_batches import example_lengths, length_batches, packed
    from keyboard_lm.data.preprocessing import texts_to_examples, vocab_table
    from keyboard_lm.text.vocabulary import Vocabulary

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    specs = [parse_variant(v) for v in variants]
    corpus = load_corpus(args.data, args.format)
    ids = corpus.client_ids
    vocab = Vocabulary.from_sentences(corpus.sentences(ids), args.vocab_size)
    texts = [t for cid in ids for t in corpus.clients[cid]]
    texts = [texts[i] for i in np.random.RandomState(0).permutation(len(texts))[:args.texts]]
    ds = texts_to_examples(tf.data.Dataset.from_tensor_slices(texts), vocab_table(vocab), 20).take(args.examples)
    x, y = (np.stack(a) for a in zip(*[(a.numpy(), b.numpy()) for a, b in ds]))
    lengths = example_lengths(x)
    runs = []
    for v, spec in zip(variants, specs):
        if spec["length"]:
            batches = length_batches(lengths, spec["batch"], seed=0)
        else:  # what the padded trainer runs: batch-size blocks, every example padded to 20
            n = len(x) // spec["batch"] * spec["batch"]
            batches = [np.arange(i, i + spec["batch"]) for i in range(0, n, spec["batch"])]
        widths = [int(lengths[b].max()) if spec["length"] else x.shape[1] for b in batches]
        model = build(spec, len(vocab), None if spec["length"] else x.shape[1])
        packs = [packed(x, y, lengths, b) for b in batches] if spec["packed"] else None
        run = {"variant": v, "spec": spec, "model": model, "batches": batches, "widths": widths, "cursor": 0,
               "packed": packs, "tokens": [int(lengths[b].sum()) for b in batches],
               "positions": ([p[1].size for p in packs] if packs else
                             [len(b) * w for b, w in zip(batches, widths)]),
               "steps": 0, "seconds": 0.0, "real": 0, "computed": 0, "per_round": [], "loss": None}
        started = time.perf_counter()
        fit_chunk(run, args.warmup, x, y)
        print(f"{v}: built and warmed up in {time.perf_counter() - started:.0f}s", flush=True)
        runs.append(run)
    peaks = []
    per_round_seconds = args.seconds / args.rounds
    for r in range(args.rounds):
        peaks.append(peak_gflops(args.peak_seconds))
        for run in runs:
            chunk = max(2, int(2048 / run["spec"]["batch"]))
            steps, real, computed, start = 0, 0, 0, time.perf_counter()
            while time.perf_counter() - start < per_round_seconds:
                t, c = fit_chunk(run, chunk, x, y)
                steps, real, computed = steps + chunk, real + t, computed + c
            elapsed = time.perf_counter() - start
            run["steps"] += steps
            run["seconds"] += elapsed
            run["real"] += real
            run["computed"] += computed
            run["per_round"].append((real / elapsed, computed / elapsed))
        print(f"round {r + 1}/{args.rounds}: peak {peaks[-1]:.1f} GFLOP/s, "
              + ", ".join(f"{run['variant']} {run['per_round'][-1][0]:,.0f}" for run in runs), flush=True)
    rows = []
    ref = [tok for tok, _ in runs[0]["per_round"]]
    for run in runs:
        spec = run["spec"]
        flops = flops_per_position(len(vocab), spec["sampled"])
        gflops = flops * run["computed"] / run["seconds"] / 1e9
        shares = [pos * flops / 1e9 / pk for (_, pos), pk in zip(run["per_round"], peaks)]
        useful = [tok * flops / 1e9 / pk for (tok, _), pk in zip(run["per_round"], peaks)]
        rows.append({"variant": run["variant"], "softmax": f"sampled {spec['sampled']}" if spec["sampled"] else "full",
                     "batch_size": spec["batch"], "learning_rate": spec["lr"],
                     "recurrence": "fused" if spec["fused"] else "unrolled" if spec["unroll"] else "loop",
                     "xla": spec["xla"], "batching": "length" if spec["length"] else "packed" if spec["packed"] else "padded",
                     "pad_share": round(1 - run["real"] / run["computed"], 3),
                     "steps": run["steps"], "seconds": round(run["seconds"], 2),
                     "tokens_per_second": round(run["real"] / run["seconds"]),
                     "tokens_per_second_by_round": [round(tok) for tok, _ in run["per_round"]],
                     "ratio_to_first": round(statistics.median(
                         tok / f for (tok, _), f in zip(run["per_round"], ref)), 3),
                     "flops_per_position": flops, "gflops_per_second": round(gflops, 2),
                     "share_of_peak": round(statistics.median(shares), 3),
                     "useful_share_of_peak": round(statistics.median(useful), 3),
                     "last_train_loss": round(run["loss"], 4)})
    header = ("| variant | softmax | batch | batching (pads) | recurrence | XLA | tokens/s | x first (median of rounds) "
              "| MFLOP/position | GFLOP/s | share of peak | useful share |\n"
              "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|")
    lines = [f"| {r['variant']} | {r['softmax']} | {r['batch_size']} | {r['batching']} ({r['pad_share']:.0%}) | "
             f"{r['recurrence']} | {'yes' if r['xla'] else 'no'} | {r['tokens_per_second']:,} | "
             f"{r['ratio_to_first']:.2f} | {r['flops_per_position'] / 1e6:.2f} | {r['gflops_per_second']:.1f} | "
             f"{r['share_of_peak']:.0%} | {r['useful_share_of_peak']:.0%} |" for r in rows]
    peak_line = (f"\nPeak: float32 2048^3 matmul, {statistics.median(peaks):.1f} GFLOP/s (median of {len(peaks)} "
                 f"rounds, min {min(peaks):.1f}, max {max(peaks):.1f}); V = {len(vocab):,}.")
    result = {"data": corpus.name, "examples": int(len(x)), "vocab_size": len(vocab), "rounds": args.rounds,
              "peak_gflops_by_round": [round(pk, 2) for pk in peaks], "rows": rows}
    markdown = "\n".join([header, *lines]) + "\n" + peak_line
    write(args.name, result, markdown, RESULTS,
          seeds="0 (the script's fixed `tf.keras.utils.set_random_seed(0)` before building each variant's model)")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

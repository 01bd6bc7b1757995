"""Pretraining throughput: training tokens per second of the paper-size CIFG, side by side in one run.

    python benchmarks/pretrain_speed.py [--data build/base_corpus/corpus.jsonl --format jsonl] \
        [--variants "full:64,full:256,sampled1024:64,sampled1024:256"] [--seconds 60] [--name pretrain_speed]

Each variant is ``<softmax>:<batch size>[:unroll]``: ``full`` is the V-wide
softmax that ``train --centralized`` computes by default, ``sampledN`` the
sampled softmax of ``--sampled-softmax N``
(``training.centralized.use_sampled_softmax``); ``unroll`` unrolls the 20
steps of the recurrence (``build_model(unroll=True)``) instead of Keras's loop.  Every
variant trains the same model (V=10k, D=96, H=670, Adam, the pretraining recipe's
dropout 0.1) from the same initialization on the same examples (the first
training clients' text, 20-token examples as the trainer builds them) through
Keras ``fit``, as the trainer does: a warm-up of ``--warmup`` steps (graph
building), then steps for ``--seconds`` seconds.  Tokens are non-pad targets.
The variants run one after another in one process, so their ratio is measured
on one machine state; the first variant is the reference.

Writes benchmarks/results/NAME.{json,md} with the machine, date and command.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._report import write  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_variant(text: str) -> tuple[int, int, bool]:
    """``full:64`` -> (0, 64, False); ``sampled1024:256:unroll`` -> (1024, 256, True)."""
    softmax, _, rest = text.partition(":")
    batch, _, loop = rest.partition(":")
    if loop not in ("", "unroll"):
        raise SystemExit(f"bad variant {text!r}: the third part may only be 'unroll'")
    if softmax == "full":
        sampled = 0
    elif softmax.startswith("sampled") and softmax[len("sampled"):].isdigit():
        sampled = int(softmax[len("sampled"):])
    else:
        raise SystemExit(f"bad variant {text!r}: <full|sampledN>:<batch size>")
    if not batch.isdigit() or int(batch) < 1:
        raise SystemExit(f"bad variant {text!r}: the batch size after ':' must be a positive integer")
    return sampled, int(batch), loop == "unroll"


def measure(variant: str, examples, vocab_size: int, seconds: float, warmup: int, lr: float) -> dict:
    import numpy as np
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model
    from keyboard_lm.models.metrics import loss_fn
    from keyboard_lm.training.centralized import use_sampled_softmax

    sampled, batch, unroll = parse_variant(variant)
    tf.keras.utils.set_random_seed(0)
    model = build_model(ModelConfig("cifg", vocab_size, 96, 670), seq_len=examples[0].shape[1], dropout=0.1,
                        unroll=unroll)
    model.compile(optimizer=tf.keras.optimizers.Adam(lr, clipnorm=5.0), loss=loss_fn())
    if sampled:
        use_sampled_softmax(model, sampled)
    x, y = examples
    n = len(x) // batch * batch
    data = tf.data.Dataset.from_tensor_slices((x[:n], y[:n])).batch(batch).repeat()
    model.fit(data, steps_per_epoch=warmup, epochs=1, verbose=0)
    tokens_per_batch = float(np.count_nonzero(y[:n])) / (n // batch)
    steps, start, losses = 0, time.perf_counter(), []
    chunk = max(5, int(200 / batch))
    while time.perf_counter() - start < seconds:
        h = model.fit(data, steps_per_epoch=chunk, epochs=1, verbose=0)
        losses.append(float(h.history["loss"][-1]))
        steps += chunk
    elapsed = time.perf_counter() - start
    return {"variant": variant, "softmax": f"sampled {sampled}" if sampled else "full", "batch_size": batch,
            "recurrence": "unrolled" if unroll else "loop",
            "steps": steps, "seconds": round(elapsed, 2), "tokens_per_second": round(steps * tokens_per_batch / elapsed),
            "steps_per_second": round(steps / elapsed, 3), "last_train_loss": round(losses[-1], 4)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="corpus (default: the embedded corpus)")
    p.add_argument("--format", default="default")
    p.add_argument("--variants", default="full:64,full:256,full:256:unroll,sampled1024:256,"
                                         "sampled1024:256:unroll,sampled512:256:unroll")
    p.add_argument("--seconds", type=float, default=60.0, help="timed seconds per variant (60)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first (5)")
    p.add_argument("--examples", type=int, default=20000, help="examples to cycle through (20,000)")
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--name", default="pretrain_speed")
    args = p.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.preprocessing import texts_to_examples, vocab_table
    from keyboard_lm.text.vocabulary import Vocabulary

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        parse_variant(v)
    corpus = load_corpus(args.data, args.format)
    ids = corpus.client_ids
    vocab = Vocabulary.from_sentences(corpus.sentences(ids), 10_000)
    texts = [t for cid in ids for t in corpus.clients[cid]]
    ds = texts_to_examples(tf.data.Dataset.from_tensor_slices(texts), vocab_table(vocab), 20).take(args.examples)
    x, y = (np.stack(a) for a in zip(*[(a.numpy(), b.numpy()) for a, b in ds]))
    rows = []
    for v in variants:
        rows.append(measure(v, (x, y), len(vocab), args.seconds, args.warmup, args.lr))
        print(f"{v}: {rows[-1]['tokens_per_second']:,} tokens/s", flush=True)
    ref = rows[0]["tokens_per_second"]
    for r in rows:
        r["ratio_to_first"] = round(r["tokens_per_second"] / ref, 3)
    header = ("| variant | softmax | batch | recurrence | tokens/s | x first | steps | seconds |\n"
              "|---|---|---:|---|---:|---:|---:|---:|")
    lines = [f"| {r['variant']} | {r['softmax']} | {r['batch_size']} | {r['recurrence']} | {r['tokens_per_second']:,} | "
             f"{r['ratio_to_first']:.2f} | {r['steps']} | {r['seconds']} |" for r in rows]
    result = {"data": corpus.name, "examples": int(len(x)), "vocab_size": len(vocab), "rows": rows}
    write(args.name, result, "\n".join([header, *lines]), RESULTS)
    print("\n".join([header, *lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

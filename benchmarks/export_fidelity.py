"""Exporter fidelity: int8 TFLite vs the float model on held-out clients.

Reports recall@1/@3 and perplexity of both, the absolute recall@3 gap
(target <= 0.5 points) and how often the exported model's top-3 equals the
float model's (target >= 99% of steps), plus file size against the budget.

    python benchmarks/export_fidelity.py RUN_DIR --data ../shared/data/tinyshakespeare/input.txt --format shakespeare
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks import _report  # noqa: E402
from export.budget import DEFAULT_BUDGET_BYTES  # noqa: E402
from export.tflite_export import export_run  # noqa: E402
from keyboard_lm.data.corpora import load_corpus  # noqa: E402
from keyboard_lm.data.examples import corpus_examples  # noqa: E402
from keyboard_lm.data.split import SplitConfig, split_clients  # noqa: E402
from keyboard_lm.evaluation import evaluate_predict_fn  # noqa: E402
from keyboard_lm.inference.model_file import ModelFile  # noqa: E402
from keyboard_lm.models.checkpoint import build_loaded_model, load_run  # noqa: E402
from keyboard_lm.models.language_model import assign_weights  # noqa: E402

KEYS = ("recall_at_1", "recall_at_3", "iv_accuracy_at_3", "perplexity")


def fake_quantized(run, per_channel: bool):
    """The float model with its matrices rounded to int8 (symmetric), per tensor or per output channel.

    A what-if: TF 2.14's converter quantizes FULLY_CONNECTED weights per tensor;
    this shows what per-channel scales would buy.
    """
    def q(name, w):
        if w.ndim != 2:
            return w
        axis = None if not per_channel else (1 if "embedding" in name else 0)
        s = np.abs(w).max(axis=axis, keepdims=axis is not None) / 127.0
        s = np.where(s == 0, 1.0, s)
        return (np.clip(np.round(w / s), -127, 127) * s).astype(np.float32)

    model = build_loaded_model(run)
    assign_weights(model, {k: q(k, w) for k, w in run.weights.items()})
    return model


def top3_agreement(ref_top, other_top, real):
    ordered = ((ref_top == other_top).all(-1) & real).sum() / real.sum()
    as_set = ((np.sort(ref_top, -1) == np.sort(other_top, -1)).all(-1) & real).sum() / real.sum()
    return float(ordered), float(as_set)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--data")
    p.add_argument("--format", default="default")
    p.add_argument("--name", default="export_fidelity")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = p.parse_args()
    run = load_run(args.run_dir)
    corpus = load_corpus(args.data, args.format)
    heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))[1]
    seq_len = run.info.get("hyperparameters", {}).get("seq_len", 20)
    keras_model = build_loaded_model(run)

    def float_log_probs(x):
        logits = np.asarray(keras_model(x), np.float64)
        m = logits.max(-1, keepdims=True)
        return logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.tflite")
        card = export_run(args.run_dir, path)
        model = ModelFile.load(path)
        fl = evaluate_predict_fn(float_log_probs, corpus, heldout, run.vocab, seq_len, batch_size=32)["pooled"]
        q = evaluate_predict_fn(model.predict_log_probs, corpus, heldout, run.vocab, seq_len, batch_size=32)["pooled"]
        # Top-3 agreement over every real step (non-pad inputs) of the held-out text.
        xs = np.array([x for x, _ in corpus_examples(corpus.sentences(heldout), run.vocab, seq_len)], np.int32)
        same_ordered = same_set = same_top1 = steps = 0
        for start in range(0, len(xs), 64):
            x = xs[start:start + 64]
            a, b = float_log_probs(x), model.predict_log_probs(x)
            a[..., :4] = -np.inf
            b[..., :4] = -np.inf
            ta, tb = np.argsort(-a, -1)[..., :3], np.argsort(-b, -1)[..., :3]
            real = x != 0
            steps += int(real.sum())
            same_ordered += int(((ta == tb).all(-1) & real).sum())
            same_set += int(((np.sort(ta, -1) == np.sort(tb, -1)).all(-1) & real).sum())
            same_top1 += int(((ta[..., 0] == tb[..., 0]) & real).sum())
    # What-if: simulated int8 rounding per tensor (as the converter does) vs per channel.
    what_if = {}
    for label, per_channel in (("simulated int8 per-tensor", False), ("simulated int8 per-channel", True)):
        sim = fake_quantized(run, per_channel)
        agree = [0.0, 0.0]
        total = 0
        for start in range(0, len(xs), 256):
            x = xs[start:start + 256]
            a = float_log_probs(x)
            b = np.array(sim(x), np.float64)
            a[..., :4] = -np.inf
            b[..., :4] = -np.inf
            real = x != 0
            o, s = top3_agreement(np.argsort(-a, -1)[..., :3], np.argsort(-b, -1)[..., :3], real)
            n = int(real.sum())
            agree = [agree[0] + o * n, agree[1] + s * n]
            total += n
        what_if[label] = {"top3_equal_ordered": agree[0] / total, "top3_equal_as_set": agree[1] / total}
    result = {"float": {k: fl[k] for k in KEYS}, "tflite": {k: q[k] for k in KEYS},
              "recall_at_3_gap_points": 100 * abs(fl["recall_at_3"] - q["recall_at_3"]),
              "top3_equal_ordered": same_ordered / steps, "top3_equal_as_set": same_set / steps,
              "top1_equal": same_top1 / steps, "steps": steps, "what_if": what_if,
              "size_bytes": card["size_bytes"], "budget_bytes": DEFAULT_BUDGET_BYTES,
              "size_breakdown": card["size_breakdown"], "model": run.model_config.to_dict(), "run": args.run_dir}
    md = "\n".join([
        "| model | recall@1 | recall@3 | iv-acc@3 | perplexity |", "|---|---|---|---|---|",
        *(f"| {name} | {r['recall_at_1']:.4f} | {r['recall_at_3']:.4f} | {r['iv_accuracy_at_3']:.4f} | "
          f"{r['perplexity']:.1f} |" for name, r in (("float (Keras)", result["float"]), ("int8 TFLite", result["tflite"]))),
        "",
        f"- recall@3 gap: {result['recall_at_3_gap_points']:.3f} points (target <= 0.5)",
        f"- top-3 identical, same order: {result['top3_equal_ordered']:.2%}; as a set: {result['top3_equal_as_set']:.2%} "
        f"of {steps:,} steps (target >= 99%); top-1 identical: {result['top1_equal']:.2%}",
        *(f"- what-if, {k}: top-3 identical {v['top3_equal_ordered']:.2%} (same order), "
          f"{v['top3_equal_as_set']:.2%} (as a set)" for k, v in what_if.items()),
        f"- file: {card['size_bytes']:,} bytes, budget {DEFAULT_BUDGET_BYTES:,} ({card['size_bytes'] / DEFAULT_BUDGET_BYTES:.3f} of it)",
    ])
    _report.write(args.name, result, md, args.out)
    print(md)


if __name__ == "__main__":
    main()

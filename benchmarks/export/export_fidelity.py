"""Exporter fidelity: int8 TFLite vs the float model on held-out clients.

For each export mode (dynamic-range int8, weight-only int8) it
reports recall@1/@3 and perplexity of the float (Keras) model and of the
file, the absolute recall@3 gap (target <= 0.5 points) and how often the
file's top-3 equals the float model's, in order and as a set (target >= 99%
of steps), plus file size against the budget.

    python benchmarks/export/export_fidelity.py RUN_DIR --data ../shared/data/tinyshakespeare/input.txt --format shakespeare
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.runs import seeds_line  # noqa: E402
from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES  # noqa: E402
from keyboard_lm.export.tflite_export import export_run  # noqa: E402
from keyboard_lm.data.corpora import load_corpus  # noqa: E402
from keyboard_lm.data.examples import corpus_examples  # noqa: E402
from keyboard_lm.data.split import SplitConfig, split_clients  # noqa: E402
from keyboard_lm.evaluation import evaluate_predict_fn, log_softmax  # noqa: E402
from keyboard_lm.inference.model_file import ModelFile  # noqa: E402
from keyboard_lm.models.run_dir import build_loaded_model, load_run  # noqa: E402

KEYS = ("recall_at_1", "recall_at_3", "iv_accuracy_at_3", "perplexity")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--data")
    p.add_argument("--format", default="default")
    p.add_argument("--name", default="export_fidelity")
    p.add_argument("--out", default=result_file.results_dir("export"))
    args = p.parse_args()
    run = load_run(args.run_dir)
    corpus = load_corpus(args.data, args.format)
    heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))[1]
    seq_len = run.info.get("hyperparameters", {}).get("seq_len", 20)
    keras_model = build_loaded_model(run)

    def float_log_probs(x):
        return log_softmax(keras_model(x))

    xs = np.array([x for x, _ in corpus_examples(corpus.sentences(heldout), run.vocab, seq_len)], np.int32)

    def top3(predict):
        """The 3 most likely words (special tokens excluded) at every step of ``xs``."""
        out = []
        for start in range(0, len(xs), 64):
            scores = np.array(predict(xs[start:start + 64]), np.float64)
            scores[..., :4] = -np.inf
            out.append(np.argsort(-scores, -1, kind="stable")[..., :3])
        return np.concatenate(out)

    fl = evaluate_predict_fn(float_log_probs, corpus, heldout, run.vocab, seq_len, batch_size=32)["pooled"]
    float_top = top3(float_log_probs)
    real = xs != 0
    steps = int(real.sum())
    modes = {}
    for mode in ("weight-only", "dynamic-range"):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.tflite")
            card = export_run(args.run_dir, path, quantization=mode)
            model = ModelFile.load(path)
            q = evaluate_predict_fn(model.predict_log_probs, corpus, heldout, run.vocab, seq_len, batch_size=32)["pooled"]
            top = top3(model.predict_log_probs)
        modes[mode] = {
            "metrics": {k: q[k] for k in KEYS}, "recall_at_3_gap_points": 100 * abs(fl["recall_at_3"] - q["recall_at_3"]),
            "top3_equal_ordered": float(((top == float_top).all(-1) & real).sum() / steps),
            "top3_equal_as_set": float(((np.sort(top, -1) == np.sort(float_top, -1)).all(-1) & real).sum() / steps),
            "top1_equal": float(((top[..., 0] == float_top[..., 0]) & real).sum() / steps),
            "size_bytes": card["size_bytes"], "size_breakdown": card["size_breakdown"],
            "quantization": card["quantization"]}
    result = {"float": {k: fl[k] for k in KEYS}, "modes": modes, "steps": steps, "budget_bytes": DEFAULT_BUDGET_BYTES,
              "model": run.model_config.to_dict(), "run": os.path.basename(os.path.normpath(args.run_dir))}
    def row(name, r, m=None):
        cells = [name, f"{r['recall_at_1']:.4f}", f"{r['recall_at_3']:.4f}", f"{r['iv_accuracy_at_3']:.4f}",
                 f"{r['perplexity']:.1f}"]
        if m is None:
            cells += [""] * 5
        else:
            cells += [f"{m['recall_at_3_gap_points']:.3f}", f"{m['top3_equal_ordered']:.2%}", f"{m['top3_equal_as_set']:.2%}",
                      f"{m['top1_equal']:.2%}", f"{m['size_bytes']:,}"]
        return "| " + " | ".join(cells) + " |"

    md = "\n".join([
        f"Run `{result['run']}`: {run.model_config.model_type}, trained quantization-aware for: "
        f"{run.model_config.quantization}; {steps:,} held-out steps.", "",
        "| model | recall@1 | recall@3 | iv-acc@3 | perplexity | recall@3 gap (pts) | top-3 same order "
        "| top-3 same set | top-1 same | bytes |",
        "|---|---|---|---|---|---|---|---|---|---|",
        row("float (Keras)", fl),
        *(row(f"int8 TFLite, {m}", r["metrics"], r) for m, r in modes.items()),
        "", f"Targets: recall@3 gap <= 0.5 points; top-3 equal on >= 99% of steps; file <= {DEFAULT_BUDGET_BYTES:,} bytes.",
        *(f"- {m}: exported as trained (computes what was evaluated): {r['quantization']['exact']}; weights moved by "
          f"up to {r['quantization']['max_rounding_error_steps']:.2f} quantization steps from the evaluated ones"
          for m, r in modes.items()),
    ])
    result_file.write(args.name, result, md, args.out, seeds=seeds_line(
        {result["run"]: args.run_dir}, "none drawn here (deterministic: the float and the int8 models on the run's "
                                       "held-out users; the comparison samples nothing)"))
    print(md)


if __name__ == "__main__":
    main()

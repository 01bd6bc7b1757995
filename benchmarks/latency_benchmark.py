"""Suggestion and completion latency, native x86_64 and emulated aarch64, side by side.

Runs ``keyboard_lm.inference.bench`` (tokenize + step + top-k + detokenize,
single thread) on the same model and text natively and under
qemu-aarch64-static user-mode emulation (``benchmarks/arm64_env.sh`` sets
that up from Debian's and PyPI's packages).  Gate: p99 <= 20 ms emulated
(Hard et al.'s budget); every figure is also given as a ratio to it.
Several models (e.g. the weight-only and the dynamic-range export of one
run) are measured one after the other in the same run.

    python benchmarks/latency_benchmark.py MODEL.tflite [MODEL2.tflite ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from benchmarks import _arm64, _report  # noqa: E402

RUNNER = """
import json, sys
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.bench import run
text = open(sys.argv[2], encoding="utf-8").read()
print(json.dumps(run(Predictor.load(sys.argv[1]), text, repeats=int(sys.argv[3]))))
"""
KEYS = ("suggestion", "completion", "raw_step", "context_1_words", "context_50_words")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", metavar="MODEL.tflite")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    sys.path.insert(0, REPO)
    from keyboard_lm.data.corpora import load_default

    corpus = load_default()
    text = " ".join(" ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c]).split()[:300])
    text_path = os.path.join(args.out, "latency_text.txt")
    os.makedirs(args.out, exist_ok=True)
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(text)
    aarch64_python, env = _arm64.emulated_python(REPO)
    results, lines = {}, []
    for model in args.models:
        cmd = [model, text_path, str(args.repeats)]
        native = json.loads(subprocess.run([sys.executable, "-c", RUNNER, *cmd], cwd=REPO, check=True,
                                           capture_output=True, text=True).stdout)
        emulated = json.loads(subprocess.run(
            [*aarch64_python, "-c", RUNNER, *cmd],
            cwd=REPO, env=env, check=True, capture_output=True, text=True).stdout)
        gate = emulated["suggestion"]["p99_ms"] <= 20.0 and emulated["completion"]["p99_ms"] <= 20.0
        name = os.path.basename(model)
        results[name] = {"native": native, "aarch64_qemu": emulated, "gate_pass": gate}
        lines += [f"`{name}` ({native['model_bytes']:,} bytes)", "",
                  "| measure | native p50 ms | native p99 ms | aarch64 (qemu) p50 ms | aarch64 (qemu) p99 ms | "
                  "aarch64 p99 / 20 ms |", "|---|---|---|---|---|---|"]
        for k in KEYS:
            n, e = native[k], emulated[k]
            lines.append(f"| {k} | {n['p50_ms']:.3f} | {n['p99_ms']:.3f} | {e['p50_ms']:.3f} | {e['p99_ms']:.3f} | "
                         f"{e['p99_ms'] / 20.0:.3f} |")
        lines += ["", f"- gate p99 <= 20 ms emulated: {'PASS' if gate else 'FAIL'}",
                  f"- 50-word vs 1-word context (p50): native {native['flatness_50_over_1']:.2f}x, "
                  f"emulated {emulated['flatness_50_over_1']:.2f}x",
                  f"- peak RSS of a process that loads the model and serves: native {native['peak_rss_mb']:.0f} MB, "
                  f"emulated {emulated['peak_rss_mb']:.0f} MB", ""]
    os.remove(text_path)
    _report.write("latency_benchmark", {"models": results}, "\n".join(lines), args.out)
    print("\n".join(lines))
    return 0 if all(r["gate_pass"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

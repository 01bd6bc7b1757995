"""What the user history costs per suggestion: a session with a history beside one without, in one process.

The history learns every sentence of the embedded corpus's first 2,000 clients
but the last 200 (about 1,900 distinct words, near the 2,000-word bound); then
both sessions stream the last 200 sentences' first 300 words, interleaved word
by word: ``commit_word(word)`` + ``suggestions(3)``, and, for a typing user,
``complete(word[:2], 3)``. ``--baseline REF`` times the package as it is at git
revision REF in the same run, in a second process (``git archive``; nothing in
the checkout changes), so the two can be compared side by side. ``--aarch64``
also times the package on the emulated aarch64 Python 3.11 (qemu user mode,
``benchmarks/arm64_env.sh``), where the ratio with / without the history is
what a phone's CPU would see more closely than x86 does.

    python benchmarks/latency/history_latency_benchmark.py runs/base/model.tflite [--baseline REF] [--aarch64]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def workload() -> list[list[str]]:
    """The sentences every variant learns and streams (read here, natively: the emulated Python has no yaml)."""
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.text import tokenizer

    corpus = load_default()
    return list(tokenizer.sentences(" ".join(t for c in corpus.client_ids[:2000] for t in corpus.clients[c])))


def measure(model: str, passes: int, sentences_file: str) -> dict:
    """p50/p99 ms per call of the package importable here (run in the process that measures)."""
    import numpy as np

    from keyboard_lm.inference import Predictor
    from keyboard_lm.inference.user_history import UserHistory

    predictor = Predictor.load(model)
    with open(sentences_file, encoding="utf-8") as f:
        sentences = json.load(f)
    history = UserHistory()
    for sentence in sentences[:-200]:
        history.learn(sentence)
    words = " ".join(" ".join(s) for s in sentences[-200:]).split()[:300]
    times: dict[str, list[float]] = {k: [] for k in ("suggest", "suggest_history", "complete", "complete_history")}
    for i in range(passes + 1):  # the first pass warms up, untimed
        plain, mixed = predictor.session(), predictor.session(history=history, learn=False)
        for word in words:
            for session, suffix in ((plain, ""), (mixed, "_history")):
                t0 = time.perf_counter()
                session.commit_word(word)
                session.suggestions(3)
                t1 = time.perf_counter()
                session.complete(word[:2], 3)
                t2 = time.perf_counter()
                if i:
                    times["suggest" + suffix].append((t1 - t0) * 1e3)
                    times["complete" + suffix].append((t2 - t1) * 1e3)
    out = {k: {"p50_ms": float(np.percentile(v, 50)), "p99_ms": float(np.percentile(v, 99)), "n": len(v)}
           for k, v in times.items()}
    out["history_words"] = history.num_words
    return out


def _in_subprocess(package_root: str, model: str, passes: int, sentences_file: str, python: list[str] | None = None,
                   env: dict | None = None) -> dict:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]);"
            "from history_latency_benchmark import measure;"
            "print(json.dumps(measure(sys.argv[3], int(sys.argv[4]), sys.argv[5])))")
    env = dict(env or os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([*(python or [sys.executable]), "-c", code, package_root, HERE, model, str(passes),
                           sentences_file], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    sys.path.insert(0, REPO)
    from benchmarks.common import result_file

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", metavar="MODEL.tflite")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--baseline", metavar="REF", help="also time the package at this git revision, same run")
    p.add_argument("--name", default="history_latency_benchmark", help="result file name (%(default)s)")
    p.add_argument("--aarch64", action="store_true", help="also time the package on the emulated aarch64 Python")
    p.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "results", "latency"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sentences = os.path.join(tmp, "sentences.json")
        with open(sentences, "w", encoding="utf-8") as f:
            json.dump(workload(), f)
        variants = {"now": _in_subprocess(REPO, args.model, args.passes, sentences)}
        if args.aarch64:
            from benchmarks.common import arm64

            python, env = arm64.emulated_python(REPO)
            variants["now, aarch64 (qemu)"] = _in_subprocess(REPO, os.path.abspath(args.model), args.passes,
                                                             sentences, python, env)
        if args.baseline:
            package = os.path.join(tmp, "baseline")
            os.mkdir(package)
            archive = subprocess.run(["git", "-C", REPO, "archive", args.baseline, "keyboard_lm"], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", package], input=archive, check=True)
            variants[f"at {args.baseline}"] = _in_subprocess(package, args.model, args.passes, sentences)
            variants["now (again)"] = _in_subprocess(REPO, args.model, args.passes, sentences)
    rows = [("suggestion, no history", "suggest"), ("suggestion, with the history", "suggest_history"),
            ("completion (first letters), no history", "complete"),
            ("completion (first letters), with the history", "complete_history")]
    md = [f"`{os.path.basename(args.model)}`; history of {variants['now']['history_words']:,} words; 300 words "
          f"streamed, {args.passes} timed passes, sessions interleaved word by word; variants run one after the "
          "other in separate processes.", "",
          "| call (ms) | " + " | ".join(f"{v} p50 / p99" for v in variants) + " |",
          "|---|" + "---|" * len(variants)]
    for label, key in rows:
        md.append(f"| {label} | " + " | ".join(f"{r[key]['p50_ms']:.3f} / {r[key]['p99_ms']:.3f}"
                                              for r in variants.values()) + " |")
    md.append("")
    for name, r in variants.items():
        md.append(f"- {name}: with / without the history, suggestion p50 "
                  f"{r['suggest_history']['p50_ms'] / r['suggest']['p50_ms']:.2f}x, p99 "
                  f"{r['suggest_history']['p99_ms'] / r['suggest']['p99_ms']:.2f}x")
    text = "\n".join(md)
    result_file.write(args.name, {"model": args.model, "passes": args.passes, "variants": variants}, text, args.out,
                      seeds="none (deterministic: the history learns fixed clients of the embedded corpus and times "
                            "fixed words of the others; nothing is sampled)")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Personal words on device: suggestion latency with 0 and N personal words, time to personalize, state size.

Native x86_64 and emulated aarch64 (qemu-aarch64-static user mode, set up by
``benchmarks/arm64_env.sh``), side by side in one run, on one model and its
char encoder. Each timed suggestion is what a keyboard does per word:
commit one word (tokenize + one model step) then top-3 over the vocabulary and
the personal words; a completion is top-3 among the words with the typed
prefix. Budget: p99 <= 20 ms on the phone (Hard et al.).

The personal words are the N most frequent out-of-vocabulary words of real
text (Tiny Shakespeare when --data is given, else the embedded corpus),
padded with made-up spellings if the text has fewer; ``Session.personalize``
is timed on the first 200 sentences of that text.

    python benchmarks/latency/personal_latency_benchmark.py MODEL.tflite ENCODER.tflite \\
        [--data ../shared/data/tinyshakespeare/input.txt --format shakespeare] [--words 1000]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import arm64, result_file  # noqa: E402

RUNNER = """
import json, os, sys, time
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.bench import run
model, encoder, text_path, state, sentences_path, repeats = sys.argv[1:7]
text = open(text_path, encoding="utf-8").read()
p = Predictor.load(model, char_encoder=encoder)
out = {"zero": run(p, text, repeats=int(repeats)), "personal": run(p, text, repeats=int(repeats), personal=state)}
sentences = json.load(open(sentences_path, encoding="utf-8"))
s = p.session()
t0 = time.perf_counter()
report = s.personalize_sentences(sentences)
out["personalize"] = {"seconds": time.perf_counter() - t0, "sentences": len(sentences),
                      "positions": report.get("training_positions", 0) + report.get("validation_positions", 0),
                      "words_added": len(report["words_added"]), "epochs_run": report.get("epochs_run"),
                      "kept_epoch": report.get("kept_epoch")}
print(json.dumps(out))
"""


def personal_words_and_sentences(args, vocab, limit: int, n: int):
    from keyboard_lm.data.corpora import load_corpus

    corpus = load_corpus(args.data, args.format)
    sentences = [s for s in corpus.sentences() if s]
    counts = collections.Counter(w for s in sentences for w in s
                                 if w not in vocab and len(w.encode("utf-8")) <= limit)
    words = [w for w, _ in counts.most_common(n)]
    i = 0
    while len(words) < n:  # made-up spellings when the text has fewer OOV words
        words.append(f"zq{i:04d}x")
        i += 1
    return words, sentences[:200]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", metavar="MODEL.tflite")
    p.add_argument("encoder", metavar="ENCODER.tflite")
    p.add_argument("--data", default=None)
    p.add_argument("--format", default="default")
    p.add_argument("--words", type=int, default=1000, help="personal words (1000, the cap)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--no-emulation", action="store_true", help="native only")
    p.add_argument("--out", default=result_file.results_dir("latency"))
    args = p.parse_args()
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.inference import Predictor

    predictor = Predictor.load(args.model, char_encoder=args.encoder)
    words, sentences = personal_words_and_sentences(args, predictor.vocab, predictor.char_encoder.max_bytes,
                                                    args.words)
    corpus = load_default()
    text = " ".join(" ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c]).split()[:300])
    tmp = tempfile.mkdtemp(prefix="personal_bench_")
    text_path, state_path, sentences_path = (os.path.join(tmp, n) for n in ("text.txt", "user.personal",
                                                                              "sentences.json"))
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(text)
    with open(sentences_path, "w", encoding="utf-8") as f:
        json.dump(sentences, f)
    session = predictor.session()
    session.add_personal_words(words)
    session.save_personal(state_path)
    state_bytes = os.path.getsize(state_path)
    cmd = [args.model, args.encoder, text_path, state_path, sentences_path, str(args.repeats)]
    results = {"native": json.loads(subprocess.run([sys.executable, "-c", RUNNER, *cmd], cwd=REPO, check=True,
                                                   capture_output=True, text=True).stdout)}
    if not args.no_emulation:
        aarch64_python, env = arm64.emulated_python(REPO)
        results["aarch64_qemu"] = json.loads(subprocess.run(
            [*aarch64_python, "-c", RUNNER, *cmd],
            cwd=REPO, env=env, check=True, capture_output=True, text=True).stdout)
    lines = [f"`{os.path.basename(args.model)}` ({os.path.getsize(args.model):,} bytes) + "
             f"`{os.path.basename(args.encoder)}` ({os.path.getsize(args.encoder):,} bytes); "
             f"{len(words)} personal words, state file {state_bytes:,} bytes", "",
             "| where | personal words | suggestion p50 ms | suggestion p99 ms | completion p99 ms | p99 / 20 ms |",
             "|---|---|---|---|---|---|"]
    for where, r in results.items():
        for key, n in (("zero", 0), ("personal", len(words))):
            m = r[key]
            lines.append(f"| {where} | {n} | {m['suggestion']['p50_ms']:.3f} | {m['suggestion']['p99_ms']:.3f} | "
                         f"{m['completion']['p99_ms']:.3f} | {m['suggestion']['p99_ms'] / 20.0:.3f} |")
    lines += ["", "| where | personalize: sentences | positions | new words | epochs (kept) | seconds |",
              "|---|---|---|---|---|---|"]
    for where, r in results.items():
        q = r["personalize"]
        lines.append(f"| {where} | {q['sentences']} | {q['positions']:,} | {q['words_added']} | "
                     f"{q['epochs_run']} ({q['kept_epoch']}) | {q['seconds']:.2f} |")
    gate = all(r[k]["suggestion"]["p99_ms"] <= 20.0 and r[k]["completion"]["p99_ms"] <= 20.0
               for r in results.values() for k in ("zero", "personal"))
    lines += ["", f"- gate p99 <= 20 ms everywhere measured: {'PASS' if gate else 'FAIL'}"]
    result_file.write("personal_latency_benchmark", {"results": results, "state_bytes": state_bytes,
                                                 "personal_words": len(words)}, "\n".join(lines), args.out,
                      seeds="none (deterministic: the personal words are the text's most frequent out-of-vocabulary "
                            "words; nothing is sampled)")
    print("\n".join(lines))
    return 0 if gate else 1


if __name__ == "__main__":
    sys.exit(main())

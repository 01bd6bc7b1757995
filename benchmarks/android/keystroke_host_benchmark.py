"""Key to strip on the host JVM, per keystroke: this tree's core against an earlier revision's, with and
without a history save under way, side by side in one run.

FieldKeystrokeBenchmark (android_demo/core/src/bench) types WORDS words of the embedded corpus (as
java_arm64_benchmark.py) one character at a time into a ``TextField`` with a user history, and times each
``update(textBeforeCursor, true)`` + ``slots()``: the ranking thread's work for one key. It also counts the bytes
the thread allocates per key. With a save under way, a second thread saves that history
(``UserHistory.save``: its JSON under the history's lock, then write, fsync, rename) over and over while the
keys are timed. The earlier revision (``--before``, default 1d30768, the core before InputLogic) is read with
``git archive`` (the working tree is not touched) and compiled with the same javac; the benchmark source uses
only what both cores have. Variants run interleaved, ``--processes`` fresh JVMs each (``-XX:+UseSerialGC``).

Not timed: ``InputLogic`` (the UI thread's share: the editor calls and the cached window, none of which ranks),
since it needs an editor and the earlier core has none; and the hop between the two threads.

    python benchmarks/android/keystroke_host_benchmark.py [MODEL.tflite] [--before REV] [--passes N] [--out DIR]

MODEL defaults to the demo APK's model (android_demo/app/src/main/assets/model.tflite). Writes
keystroke_host_benchmark.json and .md (machine, date, command) into --out (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.java import CORE_MAIN, JVM_FLAGS, WORDS, tree_at, typed_words  # noqa: E402

#: What the timings draw: nothing (the seeds line of the result files).
SEEDS = ("none (deterministic: timed passes over the first 300 words of the embedded default corpus; nothing is "
         "sampled)")
BENCH = REPO / "android_demo" / "core" / "src" / "bench" / "java" / "org" / "keyboardlm" / "core" / "FieldKeystrokeBenchmark.java"
DEFAULT_MODEL = REPO / "android_demo" / "app" / "src" / "main" / "assets" / "model.tflite"
VARIANTS = [("before", False), ("before", True), ("after", False), ("after", True)]


def _compile(sources: Path, classes: Path) -> None:
    files = sorted(str(p) for p in sources.rglob("*.java")) + [str(BENCH)]
    classes.mkdir(parents=True)
    r = subprocess.run(["nice", "-n", "10", "javac", "--release", "8", "-nowarn", "-encoding", "UTF-8", "-d",
                        str(classes), *files], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"javac failed for {sources}: {r.stderr[-2000:]}")


def _run(classes: Path, model: str, words_file: Path, warmup: int, passes: int, saving: bool, tmp: Path) -> dict:
    r = subprocess.run(["nice", "-n", "10", "java", *JVM_FLAGS, "-cp", str(classes),
                        "org.keyboardlm.core.FieldKeystrokeBenchmark", model, str(words_file), str(warmup), str(passes),
                        "1" if saving else "0", str(tmp / "user.history")], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"FieldKeystrokeBenchmark failed ({r.returncode}): {r.stderr[-2000:]}")
    lines = {line.split(" ", 1)[0]: line.split()[1:] for line in r.stdout.splitlines()}
    return {"us": [float(x) for x in lines["key_us"]], "bytes": [int(x) for x in lines["key_bytes"]],
            "keys": int(lines["keys"][0]), "saves": int(lines["saves"][0]), "slots": lines["slots"],
            "vm": " ".join(lines["vm"]).replace("_", " ")}


def _stats(us: np.ndarray, allocated: np.ndarray) -> dict:
    return {"n": int(us.size), "p50_ms": float(np.percentile(us, 50)) / 1000, "p99_ms": float(np.percentile(us, 99)) / 1000,
            "max_ms": float(us.max()) / 1000, "mean_ms": float(us.mean()) / 1000,
            "alloc_mean_bytes": float(allocated.mean()), "alloc_p50_bytes": float(np.percentile(allocated, 50)),
            "alloc_max_bytes": int(allocated.max())}


def _pool(runs: list[dict], is_space: np.ndarray) -> dict:
    us = np.concatenate([np.array(r["us"]) for r in runs])
    allocated = np.concatenate([np.array(r["bytes"]) for r in runs])
    space = np.tile(is_space, us.size // is_space.size)
    return {"all": _stats(us, allocated), "letter": _stats(us[~space], allocated[~space]),
            "space": _stats(us[space], allocated[space]), "saves_while_timing": sum(r["saves"] for r in runs),
            "processes": len(runs), "final_strip": runs[0]["slots"], "vm": runs[0]["vm"]}


def _name(side: str, saving: bool) -> str:
    return f"{side}, {'save under way' if saving else 'no save'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    ap.add_argument("--before", default="1d30768", help="git revision whose core is compared (default 1d30768)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed passes per process (default 2)")
    ap.add_argument("--passes", type=int, default=3, help="timed passes per process (default 3)")
    ap.add_argument("--processes", type=int, default=2, help="fresh JVMs per variant, interleaved (default 2)")
    ap.add_argument("--out", default=result_file.results_dir("android"))
    args = ap.parse_args()
    for tool in ("javac", "java", "git"):
        if not shutil.which(tool):
            sys.exit(f"keystroke_host_benchmark: {tool} not on PATH")
    if not Path(args.model).is_file():
        sys.exit(f"keystroke_host_benchmark: model {args.model} not found")

    words = typed_words()
    typed = "".join(w + " " for w in words)
    is_space = np.array([c == " " for c in typed])
    samples: dict = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="keystroke_host_") as tmp:
        tmp = Path(tmp)
        words_file = tmp / "words.txt"
        words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
        classes = {"before": tmp / "before", "after": tmp / "after"}
        _compile(tree_at(args.before, tmp / "src_before"), classes["before"])
        _compile(REPO / CORE_MAIN, classes["after"])
        t0 = time.time()
        for p in range(args.processes):
            for side, saving in VARIANTS:
                r = _run(classes[side], args.model, words_file, args.warmup, args.passes, saving, tmp)
                if r["keys"] != len(typed):
                    raise RuntimeError(f"{_name(side, saving)}: {r['keys']} keys a pass, expected {len(typed)}")
                samples[side, saving].append(r)
                print(f"process {p + 1}/{args.processes} {_name(side, saving):26s} key p50 "
                      f"{np.percentile(r['us'], 50) / 1000:.3f} ms p99 {np.percentile(r['us'], 99) / 1000:.3f} ms, "
                      f"{np.mean(r['bytes']):.0f} B/key, {r['saves']} saves", flush=True)
        seconds = time.time() - t0

    results = {_name(*v): _pool(samples[v], is_space) for v in VARIANTS}
    with zipfile.ZipFile(args.model) as z:
        meta = json.loads(z.read("keyboard_lm.json"))
    model = os.path.relpath(args.model, REPO) if Path(args.model).resolve().is_relative_to(REPO) else Path(args.model).name
    vm = results[_name("after", False)]["vm"]
    lines = [f"Key to strip on the host JVM ({vm}, {' '.join(JVM_FLAGS)}): `TextField.update(text, true)` + `slots()` "
             f"per typed character, with a user history, {len(words)} words of the embedded corpus "
             f"({len(typed)} keys a pass, {int(is_space.sum())} of them spaces); {args.warmup} untimed + "
             f"{args.passes} timed passes in each of {args.processes} JVMs per variant, interleaved "
             f"({seconds:.0f} s). Model `{model}` ({os.path.getsize(args.model):,} bytes, {meta.get('quantization')}, "
             f"vocabulary {meta.get('vocab_size')}). \"before\" is the core at `{args.before}`, \"after\" this tree's. "
             "Save under way: another thread saves the history (`UserHistory.save`) over and over while keys are "
             "timed. Allocation: bytes the timing thread allocated per key (ThreadMXBean).", "",
             "| variant | keys | p50 ms | p99 ms | max ms | letter p50 / p99 ms | space p50 / p99 ms | "
             "alloc B/key mean (p50) | saves while timing |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        a, le, sp = r["all"], r["letter"], r["space"]
        lines.append(f"| {name} | {a['n']} | {a['p50_ms']:.4f} | {a['p99_ms']:.3f} | {a['max_ms']:.2f} | "
                     f"{le['p50_ms']:.4f} / {le['p99_ms']:.3f} | {sp['p50_ms']:.3f} / {sp['p99_ms']:.3f} | "
                     f"{a['alloc_mean_bytes']:,.0f} ({a['alloc_p50_bytes']:,.0f}) | {r['saves_while_timing']} |")
    lines += ["", "| after / before | p50 | p99 | alloc mean |", "|---|---|---|---|"]
    for saving in (False, True):
        a, b = results[_name("after", saving)]["all"], results[_name("before", saving)]["all"]
        lines.append(f"| {'save under way' if saving else 'no save'} | {a['p50_ms'] / b['p50_ms']:.2f} | "
                     f"{a['p99_ms'] / b['p99_ms']:.2f} | {a['alloc_mean_bytes'] / b['alloc_mean_bytes']:.2f} |")
    lines += ["", "Final strip of the last pass (same words, both cores): "
              + "; ".join(f"{n}: {' | '.join(r['final_strip'])}" for n, r in results.items())]
    path_json, path_md = result_file.write("keystroke_host_benchmark", {
        "model": model, "model_bytes": os.path.getsize(args.model), "before": args.before, "words": WORDS,
        "keys_per_pass": len(typed), "warmup": args.warmup, "passes": args.passes, "processes": args.processes,
        "jvm_flags": JVM_FLAGS, "vm": vm, "wall_seconds": round(seconds, 1), "results": results},
        "\n".join(lines), args.out, seeds=SEEDS)
    print("\n".join(lines))
    print(f"wrote {path_json} and {path_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

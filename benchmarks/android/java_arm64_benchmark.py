"""The Android demo's Java core on an emulated aarch64 JVM, beside the host JVM and the Python predictor, in one run.

Times the keyboard's two per-word calls, interleaved word by word over the same words, on one thread:
a session's ``commit(word + " ")`` + ``suggestions(3)`` (a user who takes words from the strip), and
the stateless ``suggest(field, 3)`` with the text field one word longer each call. Four variants,
same model file, same words:

- the Java core (``Predictor``/``Session`` over ``JavaStepEngine``) on Debian bookworm's arm64
  OpenJDK 17 under qemu-aarch64-static user-mode emulation, and on the host's JVM natively; the
  Java side is ``android_demo/core/src/bench/java/org/keyboardlm/core/KeystrokeBenchmark.java``,
  compiled once with the host's javac (bytecode is portable);
- the Python predictor (TFLite runtime) natively and on the emulated aarch64 Python 3.11.

The stateless call is timed twice per word on each side: without a prefix cache (it replays the
field's current chunk, at most seq_len steps: Java's prefix cache size 0, Python's
``prefix_cache_size=0``) and with the default one (64 prefixes: one step for a field one word longer). Both JVMs run with their default (tiered C1 + C2) JIT and ``-XX:+UseSerialGC`` (one
thread, as android_engine_benchmark.py), after untimed warm-up passes that let the JIT compile.
Native variants run alternately in ``--rounds`` processes each; the emulated ones once each, with
fewer passes. Answers are compared: the session's top-3 ids per word across all four, and each
side's stateless top 3 against its session's. ``benchmarks/arm64_env.sh --java`` builds the
emulated environment (idempotent; downloads Debian packages and the aarch64 wheels the first time).

    python benchmarks/android/java_arm64_benchmark.py MODEL.tflite [--passes 3] [--rounds 2] [--emulated-passes 2] [--warmup 2]

Writes benchmarks/results/android/java_arm64_benchmark.{json,md} (machine, date, command).

With ``--input-logic``, it measures instead the keyboard's whole path per key on both JVMs
(``InputLogicBenchmark``: ``InputLogic`` over the tests' ``FakeEditor``, the ``StripRanker`` on its own thread,
from a typed character to its strip shown), with and without a history save and a weight choice under way on a
third thread; per key the editor reads and the bytes allocated (UI and ranking threads); and the model's load
time and heap, memory-mapped. Writes benchmarks/results/android/java_arm64_input_logic.{json,md}.
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
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common import arm64, result_file  # noqa: E402
from benchmarks.common.java import CORE, JAVA_ARM64, JVM_FLAGS, WORDS, typed_words  # noqa: E402

#: What the timings draw: nothing (the seeds line of the result files).
SEEDS = ("none (deterministic: timed passes over the first 300 words of the embedded default corpus; nothing is "
         "sampled)")
PY_WARMUP = 1  # the predictor has no JIT; one pass fills its caches as a JVM's warm-up would

PYTHON_RUNNER = """
import json, platform, resource, sys, time
from keyboard_lm.inference import Predictor
model, words_file, warmup, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
words = open(words_file, encoding="utf-8").read().split("\\n")[:-1]
t0 = time.perf_counter()
p = Predictor.load(model)
load_ms = (time.perf_counter() - t0) * 1000.0
uncached = Predictor.load(model, prefix_cache_size=0)
t = {"session": [], "stateless": [], "stateless_cached": []}
mismatches = 0
for r in range(warmup + passes):
    s, field, ids = p.session(), "", []
    for word in words:
        field += word + " "
        t0 = time.perf_counter()
        s.commit(word + " ")
        top = s.suggestions(3)
        t1 = time.perf_counter()
        a = uncached.suggest(field, 3)
        t2 = time.perf_counter()
        b = p.suggest(field, 3)
        t3 = time.perf_counter()
        mismatches += [w for w, _ in a] != [w for w, _ in top] or a != b
        if r >= warmup:
            t["session"].append((t1 - t0) * 1e6)
            t["stateless"].append((t2 - t1) * 1e6)
            t["stateless_cached"].append((t3 - t2) * 1e6)
        ids += [p.vocab.id_of(w) for w, _ in top] + [-1] * (3 - len(top))
print(json.dumps({"samples_us": t, "ids": ids, "mismatches": int(mismatches), "load_ms": load_ms,
                  "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                  "arch": platform.machine()}))
"""
#: The timed calls and what each row means.
CALLS = {"session": "session `commit(word + \" \")` + `suggestions(3)`",
         "stateless": "stateless `suggest(field, 3)`, the field one word longer, no prefix cache (replays its chunk)",
         "stateless_cached": "the same, with the prefix cache (default)"}
VARIANTS = {"java_aarch64_qemu": "Java, aarch64 JVM (qemu)", "java_host": "Java, host JVM",
            "python_aarch64_qemu": "Python, aarch64 (qemu)", "python_native": "Python, native"}


def _java(argv: list[str], classes: Path, model: str, words_file: Path, warmup: int, passes: int, env=None) -> dict:
    out = subprocess.run([*argv, *JVM_FLAGS, "-cp", str(classes), "org.keyboardlm.core.KeystrokeBenchmark", model,
                          str(words_file), str(warmup), str(passes)], check=True, capture_output=True, text=True,
                         env=env).stdout
    lines = {line.split(" ", 1)[0]: line.split()[1:] for line in out.splitlines()}
    return {"samples_us": {"session": [float(x) for x in lines["session_us"]],
                           "stateless": [float(x) for x in lines["stateless_us"]],
                           "stateless_cached": [float(x) for x in lines["stateless_cached_us"]]},
            "ids": [int(x) for x in lines["ids"]], "mismatches": int(lines["mismatches"][0]),
            "load_ms": float(lines["load_ms"][0]), "heap_peak_mb": float(lines["heap_peak_mb"][0]),
            "heap_after_gc_mb": float(lines["heap_after_gc_mb"][0]), "heap_max_mb": float(lines["heap_max_mb"][0]),
            "rss_peak_mb": float(lines["rss_peak_mb"][0]), "vm": " ".join(lines["vm"]).replace("_", " "),
            "vocab_size": int(lines["model"][0]), "state_size": int(lines["model"][1])}


def _python(argv: list[str], model: str, words_file: Path, warmup: int, passes: int, env=None) -> dict:
    out = subprocess.run([*argv, "-c", PYTHON_RUNNER, model, str(words_file), str(warmup), str(passes)], check=True,
                         capture_output=True, text=True, cwd=REPO, env=env).stdout
    return json.loads(out)


def _pool(runs: list[dict], seconds: float, words: int) -> dict:
    """Percentiles over the samples of every run of one variant, and p50 by pass; the rest from the first run."""
    out = {k: v for k, v in runs[0].items() if k not in ("samples_us", "ids")}
    out["processes"], out["wall_seconds"] = len(runs), round(seconds, 1)
    out["mismatches"] = sum(r["mismatches"] for r in runs)
    for key in runs[0]["samples_us"]:
        a = np.array([x for r in runs for x in r["samples_us"][key]]) / 1000.0
        out[key] = {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
                    "mean_ms": float(a.mean()), "n": int(a.size),
                    "p50_ms_by_pass": [float(np.percentile(a[i:i + words], 50)) for i in range(0, a.size, words)]}
    return out


def _table(results: dict) -> list[str]:
    names = list(VARIANTS)
    lines = ["| per word (ms) | " + " | ".join(f"{VARIANTS[n]} p50 / p99" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for key, label in CALLS.items():
        cells = [f"{results[n][key]['p50_ms']:.3f} / {results[n][key]['p99_ms']:.3f}" if key in results[n] else "-"
                 for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


IL_VARIANTS = [("java_aarch64_qemu", False), ("java_aarch64_qemu", True), ("java_host", False), ("java_host", True)]


def _input_logic_run(argv: list[str], classes: Path, model: str, words_file: Path, warmup: int, passes: int,
                     pending: bool, tmp: Path, env=None) -> dict:
    work = Path(tempfile.mkdtemp(dir=tmp))
    out = subprocess.run([*argv, *JVM_FLAGS, "-cp", str(classes), "org.keyboardlm.core.InputLogicBenchmark", model,
                          str(words_file), str(warmup), str(passes), "1" if pending else "0", str(work)],
                         check=True, capture_output=True, text=True, env=env).stdout
    lines = {line.split(" ", 1)[0]: line.split()[1:] for line in out.splitlines()}
    return {"us": [float(x) for x in lines["key_us"]], "reads": [int(x) for x in lines["key_reads"]],
            "bytes": [int(x) for x in lines["key_bytes"]], "keys": int(lines["keys"][0]),
            "saves": int(lines["saves"][0]), "choices": int(lines["choices"][0]),
            "save_bytes": int(lines["save_bytes"][0]), "load_ms": float(lines["load_ms"][0]),
            "heap_before_mb": float(lines["heap_before_mb"][0]), "heap_model_mb": float(lines["heap_model_mb"][0]),
            "heap_after_mb": float(lines["heap_after_mb"][0]), "vm": " ".join(lines["vm"]).replace("_", " ")}


def _input_logic(args, model: str, aarch64_java: list[str], java_env: dict) -> int:
    """The --input-logic measurement (see the module docstring)."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        classes = tmp / "classes"
        sources = sorted(str(f) for d in ("main", "bench") for f in (CORE / d).rglob("*.java"))
        sources.append(str(CORE / "test" / "java" / "org" / "keyboardlm" / "core" / "FakeEditor.java"))
        subprocess.run(["javac", "--release", "8", "-nowarn", "-d", str(classes), *sources], check=True)
        words = typed_words()
        words_file = tmp / "words.txt"
        words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
        for name, pending in IL_VARIANTS:
            emulated = name == "java_aarch64_qemu"
            t0 = time.perf_counter()
            r = _input_logic_run(aarch64_java if emulated else ["java"], classes, model, words_file,
                                 1 if emulated else args.warmup, args.emulated_passes if emulated else args.passes,
                                 pending, tmp, java_env if emulated else None)
            us, reads, allocated = np.array(r.pop("us")) / 1000.0, np.array(r.pop("reads")), np.array(r.pop("bytes"))
            r.update({"wall_seconds": round(time.perf_counter() - t0, 1), "n": int(us.size),
                      "p50_ms": float(np.percentile(us, 50)), "p99_ms": float(np.percentile(us, 99)),
                      "max_ms": float(us.max()), "reads_per_key_mean": float(reads.mean()), "reads_max": int(reads.max()),
                      "alloc_mean_bytes": float(allocated.mean()), "alloc_p50_bytes": float(np.percentile(allocated, 50))})
            key = f"{name}, {'save + weight choice under way' if pending else 'idle'}"
            results[key] = r
            print(f"{key}: p50 {r['p50_ms']:.3f} ms p99 {r['p99_ms']:.3f} ms, {r['reads_per_key_mean']:.3f} reads/key, "
                  f"{r['alloc_mean_bytes']:.0f} B/key, {r['saves']} saves, {r['choices']} choices, "
                  f"{r['wall_seconds']} s", flush=True)
    name = os.path.basename(model)
    lines = [f"Key to strip through `InputLogic` (`{name}`, {os.path.getsize(model):,} bytes, memory-mapped): "
             f"{len(words)} words of the embedded corpus typed one character at a time ({results[next(iter(results))]['keys']} "
             f"keys a pass) into a multi-line text field with a user history, the editor the JUnit tests' `FakeEditor` "
             f"(reads counted, no IPC), the `StripRanker` on its own thread; time from `InputLogic.type` to "
             f"`InputLogic.onStrip` of that text. {args.warmup} untimed + {args.passes} timed passes on the host JVM, "
             f"1 + {args.emulated_passes} on the emulated one, `{' '.join(JVM_FLAGS)}`. Under way: a third thread "
             "saving the history (`HistoryStore.save`: journal appends, and compactions when due) and choosing its "
             "weight (`chooseHistoryWeight` on 20 sentences), one after the other, all the time keys are timed.", "",
             "| variant | keys | p50 ms | p99 ms | max ms | editor reads per key (max) | allocated per key, both threads, mean (p50) | saves / choices while timing | bytes per save |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, r in results.items():
        per_save = f"{r['save_bytes'] / r['saves']:.0f}" if r["saves"] else "-"
        lines.append(f"| {key} | {r['n']} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.1f} | "
                     f"{r['reads_per_key_mean']:.3f} ({r['reads_max']}) | {r['alloc_mean_bytes']:,.0f} "
                     f"({r['alloc_p50_bytes']:,.0f}) | {r['saves']} / {r['choices']} | {per_save} |")
    q, h = results["java_aarch64_qemu, idle"], results["java_host, idle"]
    qp, hp = results["java_aarch64_qemu, save + weight choice under way"], results["java_host, save + weight choice under way"]
    lines += ["", f"- ratio p50 / p99, under way over idle: emulated {qp['p50_ms'] / q['p50_ms']:.2f} / "
              f"{qp['p99_ms'] / q['p99_ms']:.2f}, host {hp['p50_ms'] / h['p50_ms']:.2f} / {hp['p99_ms'] / h['p99_ms']:.2f}; "
              f"emulated over host (idle) {q['p50_ms'] / h['p50_ms']:.1f} / {q['p99_ms'] / h['p99_ms']:.1f}",
              f"- model load, memory-mapped (`ModelFile.load`): {q['load_ms']:.0f} ms emulated, {h['load_ms']:.0f} ms "
              f"host; heap used after a full GC: {q['heap_before_mb']:.1f} MB before loading, {q['heap_model_mb']:.1f} MB "
              f"after (emulated; host {h['heap_before_mb']:.1f} -> {h['heap_model_mb']:.1f} MB), "
              f"{q['heap_after_mb']:.1f} MB after typing (host {h['heap_after_mb']:.1f} MB)",
              f"- JVMs: {q['vm']} (emulated), {h['vm']} (host)",
              "", "Caveats: a shared, loaded 2-core machine (qemu's emulation and the pending thread compete with the "
              "key's two threads for 2 cores); HotSpot under qemu, not ART on a phone; the editor is in-process."]
    md = "\n".join(lines)
    result_file.write("java_arm64_input_logic", {"model": name, "model_bytes": os.path.getsize(model), "words": WORDS,
                                             "warmup": args.warmup, "passes": args.passes,
                                             "emulated_passes": args.emulated_passes, "jvm_flags": JVM_FLAGS,
                                             "variants": results}, md, args.out,
                      seeds=SEEDS)
    print(md)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", metavar="MODEL.tflite")
    p.add_argument("--warmup", type=int, default=2, help="untimed passes first in each JVM (JIT warm-up)")
    p.add_argument("--passes", type=int, default=3, help="timed passes in each native process")
    p.add_argument("--rounds", type=int, default=2, help="native processes per variant, run alternately")
    p.add_argument("--emulated-passes", type=int, default=2, help="timed passes in each emulated process")
    p.add_argument("--note", default="", help="where the model came from, written into the markdown")
    p.add_argument("--out", default=result_file.results_dir("android"))
    p.add_argument("--input-logic", action="store_true",
                   help="measure key to strip through InputLogic (save and weight choice pending), load and heap instead")
    args = p.parse_args()
    if min(args.passes, args.rounds, args.emulated_passes) < 1 or args.warmup < 0:
        p.error("--passes, --rounds and --emulated-passes must be >= 1, --warmup >= 0")
    if not os.path.isfile(args.model):
        p.error(f"no model file at {args.model}")
    if not shutil.which("javac") or not shutil.which("java"):
        p.error("needs a JDK (javac, java) on PATH")
    model = os.path.abspath(args.model)
    env_dir = Path(subprocess.run(["bash", arm64.ENV_SCRIPT, "--java"], check=True, capture_output=True,
                                  text=True).stdout.strip().splitlines()[-1])
    java_env = dict(os.environ, QEMU_LD_PREFIX=str(env_dir / "java-root"))
    aarch64_java = ["qemu-aarch64-static", str(env_dir / JAVA_ARM64)]
    if args.input_logic:
        return _input_logic(args, model, aarch64_java, java_env)
    aarch64_python, python_env = arm64.emulated_python(str(REPO))
    samples: dict[str, list[dict]] = {n: [] for n in VARIANTS}
    seconds = dict.fromkeys(VARIANTS, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        classes = tmp / "classes"
        sources = sorted(str(f) for d in ("main", "bench") for f in (CORE / d).rglob("*.java"))
        subprocess.run(["javac", "--release", "8", "-nowarn", "-d", str(classes), *sources], check=True)
        words = typed_words()
        words_file = tmp / "words.txt"
        words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
        runs = {"java_host": lambda: _java(["java"], classes, model, words_file, args.warmup, args.passes),
                "python_native": lambda: _python([sys.executable], model, words_file, PY_WARMUP, args.passes),
                "java_aarch64_qemu": lambda: _java(aarch64_java, classes, model, words_file, args.warmup,
                                                   args.emulated_passes, java_env),
                "python_aarch64_qemu": lambda: _python(aarch64_python, model, words_file, PY_WARMUP,
                                                       args.emulated_passes, python_env)}
        order = []
        for r in range(args.rounds):  # native variants alternately (ABBA...), so drift hits both alike
            order += ["java_host", "python_native"][:: 1 if r % 2 == 0 else -1]
        order += ["java_aarch64_qemu", "python_aarch64_qemu"]
        for name in order:
            t0 = time.perf_counter()
            samples[name].append(runs[name]())
            seconds[name] += time.perf_counter() - t0
            print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    results = {n: _pool(samples[n], seconds[n], len(words)) for n in VARIANTS}
    reference = samples["python_native"][0]["ids"]
    agreement = {n: int(sum(a == b for a, b in zip(np.reshape(samples[n][0]["ids"], (-1, 3)).tolist(),
                                                  np.reshape(reference, (-1, 3)).tolist()))) for n in VARIANTS}
    jq, jh = results["java_aarch64_qemu"], results["java_host"]
    pq, pn = results["python_aarch64_qemu"], results["python_native"]
    ratios = {"java_emulated_over_native": {k: jq[k]["p50_ms"] / jh[k]["p50_ms"] for k in CALLS},
              "python_emulated_over_native": {k: pq[k]["p50_ms"] / pn[k]["p50_ms"] for k in CALLS},
              "java_over_python_emulated": {k: jq[k]["p50_ms"] / pq[k]["p50_ms"] for k in CALLS},
              "java_over_python_native": {k: jh[k]["p50_ms"] / pn[k]["p50_ms"] for k in CALLS}}
    name = os.path.basename(args.model)
    lines = [f"`{name}` ({os.path.getsize(model):,} bytes, vocabulary {jh['vocab_size']:,}, state "
             f"{jh['state_size']}); {WORDS} words of the embedded corpus, interleaved word by word; untimed "
             f"warm-up passes first ({args.warmup} on the JVMs, {PY_WARMUP} in Python), then {args.passes} timed "
             f"passes in each of {args.rounds} native processes per variant (run alternately) and "
             f"{args.emulated_passes} in one emulated process per variant.", "",
             *_table(results), "",
             f"- ratio p50, emulated / native: Java session "
             f"{ratios['java_emulated_over_native']['session']:.1f}x, stateless "
             f"{ratios['java_emulated_over_native']['stateless']:.1f}x, cached "
             f"{ratios['java_emulated_over_native']['stateless_cached']:.1f}x; Python session "
             f"{ratios['python_emulated_over_native']['session']:.1f}x, stateless "
             f"{ratios['python_emulated_over_native']['stateless']:.1f}x, cached "
             f"{ratios['python_emulated_over_native']['stateless_cached']:.1f}x",
             f"- ratio p50, Java / Python (TFLite): emulated aarch64 session "
             f"{ratios['java_over_python_emulated']['session']:.2f}x, stateless "
             f"{ratios['java_over_python_emulated']['stateless']:.2f}x, cached "
             f"{ratios['java_over_python_emulated']['stateless_cached']:.2f}x; native session "
             f"{ratios['java_over_python_native']['session']:.2f}x, stateless "
             f"{ratios['java_over_python_native']['stateless']:.2f}x, cached "
             f"{ratios['java_over_python_native']['stateless_cached']:.2f}x",
             f"- ratio p50, no cache / cache: Java {jq['stateless']['p50_ms'] / jq['stateless_cached']['p50_ms']:.1f}x "
             f"emulated, {jh['stateless']['p50_ms'] / jh['stateless_cached']['p50_ms']:.1f}x host; Python "
             f"{pq['stateless']['p50_ms'] / pq['stateless_cached']['p50_ms']:.1f}x emulated, "
             f"{pn['stateless']['p50_ms'] / pn['stateless_cached']['p50_ms']:.1f}x native",
             f"- JVM heap (`-XX:+UseSerialGC`, default maximum {jq['heap_max_mb']:.0f} MB): "
             f"{jq['heap_after_gc_mb']:.1f} MB kept after a full GC with the two predictors (one model, the "
             f"full prefix cache) loaded (host "
             f"{jh['heap_after_gc_mb']:.1f} MB); peak use {jq['heap_peak_mb']:.0f} MB (host "
             f"{jh['heap_peak_mb']:.0f} MB), mostly garbage a young collection had not yet freed",
             f"- peak RSS: Java {jq['rss_peak_mb']:.0f} MB emulated (qemu included), {jh['rss_peak_mb']:.0f} MB "
             f"host; Python {pq['rss_peak_mb']:.0f} MB emulated, {pn['rss_peak_mb']:.0f} MB native",
             f"- model load: Java {jq['load_ms']:.0f} ms emulated, {jh['load_ms']:.0f} ms host; Python "
             f"{pq['load_ms']:.0f} ms emulated, {pn['load_ms']:.0f} ms native",
             f"- agreement, session top-3 ids equal to native Python's (of {len(words)} words): "
             + "; ".join(f"{VARIANTS[n]} {agreement[n]}" for n in VARIANTS if n != "python_native")
             + ". Words where a stateless answer differs from the session's top 3, or the cached answer from "
             "the uncached one (Java: ids and log-prob bits; Python: words and probabilities): "
             + "; ".join(f"{VARIANTS[n]} {results[n]['mismatches']}" for n in VARIANTS),
             "- session p50 by timed pass (ms), after the warm-up: Java aarch64 (qemu) "
             + ", ".join(f"{x:.3f}" for x in jq["session"]["p50_ms_by_pass"]) + "; Java host "
             + ", ".join(f"{x:.3f}" for x in jh["session"]["p50_ms_by_pass"]),
             f"- JVMs: {jq['vm']} (emulated), {jh['vm']} (host); wall seconds per variant: "
             + "; ".join(f"{VARIANTS[n]} {results[n]['wall_seconds']}" for n in VARIANTS),
             "", "Caveats: a shared, loaded 2-core machine (wall-clock tails include time descheduled; only the "
             "ratios in one run mean much). The emulated Java / Python ratio says more about qemu than about a "
             "phone: qemu runs TFLite's NEON kernels through vector helpers (the likely reason the Python "
             "predictor slows 2x more than the JVM's JIT code under emulation), and on a phone the Java core "
             "runs on ART, not HotSpot. Not measured on a device."]
    if args.note:
        lines += ["", f"Model: {args.note}"]
    md = "\n".join(lines)
    result_file.write("java_arm64_benchmark", {"model": name, "model_bytes": os.path.getsize(model), "words": WORDS,
                                           "warmup": args.warmup, "passes": args.passes, "rounds": args.rounds,
                                           "emulated_passes": args.emulated_passes, "note": args.note,
                                           "variants": results, "top3_ids_equal_to_python_native": agreement,
                                           "ratios_p50": ratios}, md, args.out,
                      seeds=SEEDS)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The phrase table's cost in the Android demo's Java core: the same file with its table and with it set aside, in one run.

A model file may carry a phrase table that every strip merges in (``Ranker``: the table's lookup at the position,
then the merge of its next words with the model's top k). This times what it adds, on the host JVM and, unless
``--host-only``, on Debian's arm64 OpenJDK 17 under qemu-aarch64-static (``arm64_env.sh --java``), as the p50 and
p99 with the table over without (the budget: 1.10x on p99). Set aside means the same loaded model built again from
its parts without the table; nothing else differs. ``PhraseTableBenchmark`` (android_demo/core/src/bench) runs both
variants in one JVM, their calls alternating word by word and key by key, so a shared machine's preemptions hit
both alike; over the same words of the embedded corpus (as java_arm64_benchmark.py):

- per word: a session's ``commit(word + " ")`` + ``suggestions(3)``, the stateless ``suggest(field, 3)`` without a
  prefix cache and with it;
- per key: a ``TextField`` with a user history, ``update(text, true)`` + ``slots()`` per typed character (the
  ranking thread's work, as keystroke_host_benchmark.py), so the letters' completions meet the table too.

    python benchmarks/java_phrase_table.py MODEL.tflite [--host-only] [--jvms 4] [--passes 3] [--name NAME]

Writes ``--name`` (default java_phrase_table_host with --host-only, else java_phrase_table_arm64) .json and .md
(machine, date, command) into --out (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import _report  # noqa: E402
from benchmarks.java_arm64_benchmark import CORE, JAVA_ARM64, JVM_FLAGS, _words  # noqa: E402

PLATFORMS = {"host": "host JVM", "aarch64": "aarch64 JVM (qemu)"}
#: Every timed call and what its row means.
ROWS = {"session": "per word: session `commit(word + \" \")` + `suggestions(3)` (tapping from the strip)",
        "stateless": "per word: stateless `suggest(field, 3)`, no prefix cache",
        "cached": "per word: stateless `suggest(field, 3)`, prefix cache",
        "key": "per key: `TextField.update` + `slots()`, every key (with a user history)",
        "letter": "per key: letters (completions)", "space": "per key: spaces (the word committed, next-word strip)"}


def _jvm(java: list[str], env, classes: Path, model: str, words_file: Path, warmup: int, passes: int) -> dict:
    """One JVM's PhraseTableBenchmark output, both variants."""
    out = subprocess.run([*java, *JVM_FLAGS, "-cp", str(classes), "org.keyboardlm.core.PhraseTableBenchmark", model,
                          str(words_file), str(warmup), str(passes)], check=True, capture_output=True, text=True,
                         env=env, timeout=3600).stdout
    lines = {line.split(" ", 1)[0]: line.split()[1:] for line in out.splitlines()}
    return {"samples_us": {(t, c, clock): [float(x) for x in lines[f"{t}_{c}{suffix}_us"]] for t in ("on", "off")
                           for c in ("session", "stateless", "cached", "key")
                           for clock, suffix in (("wall", ""), ("cpu", "_cpu"))},
            **{k: int(lines[k][0]) for k in ("keys", "phrases", "changed", "mismatches")},
            "vm": " ".join(lines["vm"]).replace("_", " ")}


def _stats(a: np.ndarray) -> dict:
    return {"n": int(a.size), "p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "max_ms": float(a.max()), "mean_ms": float(a.mean())}


def _pool(runs: list[dict], is_space: np.ndarray) -> dict:
    """Per variant, clock (wall, cpu) and row, the percentiles over every JVM's samples (ms); the rest from the
    JVMs' outputs."""
    out = {}
    for t in ("on", "off"):
        for clock in ("wall", "cpu"):
            cat = {c: np.concatenate([np.array(r["samples_us"][t, c, clock]) for r in runs]) / 1000.0
                   for c in ("session", "stateless", "cached", "key")}
            space = np.tile(is_space, cat["key"].size // is_space.size)
            cat["letter"], cat["space"] = cat["key"][~space], cat["key"][space]
            out[t if clock == "wall" else f"{t}_cpu"] = {c: _stats(a) for c, a in cat.items()}
    out.update(jvms=len(runs), vm=runs[0]["vm"], phrases=runs[0]["phrases"], changed=runs[0]["changed"],
               mismatches=sum(r["mismatches"] for r in runs))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", metavar="MODEL.tflite")
    p.add_argument("--host-only", action="store_true", help="skip the emulated aarch64 JVM")
    p.add_argument("--warmup", type=int, default=2, help="untimed passes first in each JVM (JIT warm-up)")
    p.add_argument("--passes", type=int, default=3, help="timed passes in each host JVM")
    p.add_argument("--emulated-passes", type=int, default=1, help="timed passes in each emulated JVM")
    p.add_argument("--jvms", type=int, default=4, help="JVMs per platform (each runs both variants)")
    p.add_argument("--name", help="result file name (default java_phrase_table_host or java_phrase_table_arm64)")
    p.add_argument("--out", default=str(HERE / "results"))
    args = p.parse_args()
    if min(args.passes, args.emulated_passes, args.jvms) < 1 or args.warmup < 0:
        p.error("--passes, --emulated-passes and --jvms must be >= 1, --warmup >= 0")
    if not os.path.isfile(args.model):
        p.error(f"no model file at {args.model}")
    if not shutil.which("javac") or not shutil.which("java"):
        p.error("needs a JDK (javac, java) on PATH")
    model = os.path.abspath(args.model)
    platforms = {"host": (["java"], None, args.passes)}
    if not args.host_only:
        env_dir = Path(subprocess.run(["bash", str(HERE / "arm64_env.sh"), "--java"], check=True,
                                      capture_output=True, text=True).stdout.strip().splitlines()[-1])
        platforms["aarch64"] = (["qemu-aarch64-static", str(env_dir / JAVA_ARM64)],
                                dict(os.environ, QEMU_LD_PREFIX=str(env_dir / "java-root")), args.emulated_passes)
    words = _words()
    is_space = np.array([c == " " for c in "".join(w + " " for w in words)])
    results, seconds = {}, {}
    with tempfile.TemporaryDirectory(prefix="java_phrase_table_") as tmp:
        tmp = Path(tmp)
        classes = tmp / "classes"
        sources = [str(f) for d in ("main", "bench") for f in sorted((CORE / d).rglob("*.java"))
                   if f.name != "InputLogicBenchmark.java"]  # that one needs the tests' FakeEditor
        subprocess.run(["javac", "--release", "8", "-nowarn", "-d", str(classes), *sources], check=True)
        words_file = tmp / "words.txt"
        words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
        for pl, (java, env, passes) in platforms.items():
            t0, runs = time.perf_counter(), []
            for i in range(args.jvms):
                runs.append(_jvm(java, env, classes, model, words_file, args.warmup, passes))
                if runs[-1]["keys"] != is_space.size:
                    raise RuntimeError(f"{pl}: {runs[-1]['keys']} keys a pass, expected {is_space.size}")
                print(f"{pl} JVM {i + 1}/{args.jvms}: {time.perf_counter() - t0:.0f} s", flush=True)
            seconds[pl] = round(time.perf_counter() - t0, 1)
            results[pl] = _pool(runs, is_space)
    ratios = {pl: {c: {f"{q}{clock}": r[f"on{clock}"][c][q] / r[f"off{clock}"][c][q] for q in ("p50_ms", "p99_ms")
                       for clock in ("", "_cpu")} for c in ROWS} for pl, r in results.items()}
    return _write(args, model, words, is_space, results, ratios, seconds)


def _write(args, model: str, words: list[str], is_space: np.ndarray, results: dict, ratios: dict,
           seconds: dict) -> int:
    """The markdown and JSON (see the module docstring)."""
    h = results["host"]
    lines = [f"`{os.path.basename(model)}` ({os.path.getsize(model):,} bytes, a phrase table of {h['phrases']:,} "
             f"contexts) with its table and with the table set aside (the same loaded model without it), both in "
             f"each JVM, their calls alternating word by word and key by key; {len(words)} words of the embedded "
             f"corpus ({is_space.size} keys a pass); {args.warmup} untimed warm-up passes, then {args.passes} timed "
             f"passes per host JVM and {args.emulated_passes} per emulated one, {args.jvms} JVMs per platform "
             f"(`{' '.join(JVM_FLAGS)}`; wall seconds: "
             + ", ".join(f"{PLATFORMS[pl]} {s}" for pl, s in seconds.items()) + ").", "",
             "| call (ms) | " + " | ".join(f"{PLATFORMS[pl]}, table {t} p50 / p99" for pl in results
                                           for t in ("on", "off")) + " |",
             "|---|" + "---|" * (2 * len(results))]
    for c, label in ROWS.items():
        lines.append(f"| {label} | " + " | ".join(f"{results[pl][t][c]['p50_ms']:.3f} / {results[pl][t][c]['p99_ms']:.3f}"
                                                    for pl in results for t in ("on", "off")) + " |")
    lines += ["", "With the phrase table / with it set aside (budget 1.10x on p99), wall-clock and the timing thread's "
              "CPU time (the work alone: a preemption by another process adds wall time, not CPU time):", "",
              "| call | " + " | ".join(f"{PLATFORMS[pl]} {q}" for pl in results
                                      for q in ("p50", "p99", "CPU p50", "CPU p99")) + " |",
              "|---|" + "---|---|---|---|" * len(results)]
    for c, label in ROWS.items():
        lines.append(f"| {label} | " + " | ".join(f"{ratios[pl][c][q]:.2f}x" for pl in results
                                                    for q in ("p50_ms", "p99_ms", "p50_ms_cpu", "p99_ms_cpu")) + " |")
    lines += ["", f"- words of a pass whose session top 3 the table changes (of {len(words)}): "
              + "; ".join(f"{PLATFORMS[pl]} {r['changed']}" for pl, r in results.items())
              + "; words where a stateless answer differs from its session's top 3, or the cached one from the "
              "uncached one: " + "; ".join(f"{PLATFORMS[pl]} {r['mismatches']}" for pl, r in results.items()),
              "- JVMs: " + "; ".join(r["vm"] for r in results.values()), "",
              "Caveats: a shared, loaded 2-core machine (wall-clock tails include time descheduled; only the ratios "
              "in one run mean much); HotSpot under qemu, not ART on a phone."]
    md = "\n".join(lines)
    name = args.name or ("java_phrase_table_host" if args.host_only else "java_phrase_table_arm64")
    _report.write(name, {"model": os.path.basename(model), "model_bytes": os.path.getsize(model),
                         "words": len(words), "keys_per_pass": int(is_space.size), "warmup": args.warmup,
                         "passes": args.passes, "emulated_passes": args.emulated_passes, "jvms": args.jvms,
                         "jvm_flags": JVM_FLAGS, "wall_seconds": seconds, "ratios_with_over_without": ratios,
                         "results": results}, md, args.out)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

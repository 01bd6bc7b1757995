"""The phrase table's cost per keystroke: a file with its table and with it set aside, in one process, call by call.

A model file may carry a phrase table that every strip merges in (the ranker looks the position's context up and
merges its next words with the model's; in Python a position the table matches is stepped in full, since the merge
reads the model's probability of the table's words). This times what it adds, as the p50 and p99 with the table
over without (the budget: 1.10x on p99), for the Python predictor (natively and on the emulated aarch64 Python)
and the Android demo's Java core (host JVM and Debian's arm64 OpenJDK 17), both emulated under qemu-aarch64-static
(``arm64_env.sh --java``). One process holds both variants (set aside: in Python the predictor's ranker without the
table, as ``eval --stack`` does; in Java the same loaded model built again from its parts without it) and their
calls alternate word by word (and key by key), which goes first alternating too, so the drift and preemptions of
a shared machine hit both alike. Each call is timed twice: wall-clock, and the calling thread's CPU time (the work
alone: a preemption by another process adds wall time, not CPU time; the TFLite interpreter runs on that one
thread). Over the first 300 words of the embedded corpus (as latency_benchmark.py and java_arm64_benchmark.py):

- Python: a session's ``commit(word + " ")`` + ``suggestions(3)`` for a user who taps words from the strip, the
  same for one who types (then ``complete(word[:2], 3)`` and ``complete(word[:3], 3)``, timed apart), and the
  stateless ``suggest(field, 3)`` with the prefix cache (the field one word longer each call);
- Java (``PhraseTableBenchmark``, android_demo/core/src/bench): the session's strip, the stateless ``suggest``
  without a prefix cache and with it, and a ``TextField`` with a user history, ``update(text, true)`` +
  ``slots()`` per typed character (the ranking thread's work per key: letters complete, a space commits).

    python benchmarks/latency/phrase_table_latency.py MODEL.tflite [--native-only] [--processes 4] [--name NAME]

Writes ``--name`` (default phrase_table_latency) .json and .md (machine, date, command) into --out.

``--parts`` instead times the Python strip's parts apart, on the same inputs at every position of a tapping
session (natively, and emulated unless --native-only): the graph's top-K step and the full step, the table's
lookup, the top 3 over the whole vocabulary and from the graph's top K, and the merge; split by whether the table
matched there. It reads two private fields of the session (its last step's input and the table's context), so it
follows ``Session``'s code, not its API. Writes phrase_table_parts (or --name).
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
#: What the timings draw: nothing (the seeds line of their result files).
TIMED = "none (deterministic: timed calls over the first 300 words of the embedded corpus; nothing is sampled)"
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common import arm64, result_file  # noqa: E402
from benchmarks.common.java import CORE, JAVA_ARM64, JVM_FLAGS, typed_words  # noqa: E402

PY_RUNNER = """
import json, sys, time
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.ranker import Ranker
model, words_file, warmup, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
words = open(words_file, encoding="utf-8").read().split()
off = Predictor.load(model)
off.ranker = Ranker(off.vocab)  # the table set aside: the model alone (suggestion_evaluation.table_set_aside)
both = {"on": Predictor.load(model), "off": off}
calls = ("session", "typing", "completion_first", "completion_next", "cached")
out = {f"{v}_{c}_{clock}": [] for v in both for c in calls for clock in ("us", "cpu_us")}
wall, cpu, changed, turn, mismatches = time.perf_counter, time.thread_time, 0, 0, 0
for r in range(warmup + passes):
    tapped = {v: p.session() for v, p in both.items()}
    typing = {v: p.session() for v, p in both.items()}
    field, changed = "", 0
    for word in words:
        field += word + " "
        tops = {}
        for v in (("on", "off") if turn % 2 == 0 else ("off", "on")):
            t = [(wall(), cpu())]
            tapped[v].commit(word + " ")
            tops[v] = tapped[v].suggestions(3)
            t.append((wall(), cpu()))
            typing[v].commit(word + " ")
            typing[v].suggestions(3)
            t.append((wall(), cpu()))
            typing[v].complete(word[:2], 3)
            t.append((wall(), cpu()))
            typing[v].complete(word[:3], 3)
            t.append((wall(), cpu()))
            cached = both[v].suggest(field, 3)
            t.append((wall(), cpu()))
            if r >= warmup:
                for i, c in enumerate(calls):
                    out[f"{v}_{c}_us"].append((t[i + 1][0] - t[i][0]) * 1e6)
                    out[f"{v}_{c}_cpu_us"].append((t[i + 1][1] - t[i][1]) * 1e6)
            mismatches += [w for w, _ in cached] != [w for w, _ in tops[v]]  # stateless and session agree
        turn += 1
        changed += [w for w, _ in tops["on"]] != [w for w, _ in tops["off"]]
out["changed"], out["mismatches"], out["vm"] = changed, mismatches, "CPython " + sys.version.split()[0]
print(json.dumps(out))
"""
PARTS_RUNNER = """
import itertools, json, sys, time
import numpy as np
from keyboard_lm.inference import Predictor
model, words_file, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
words = open(words_file, encoding="utf-8").read().split()
p = Predictor.load(model)
vocab, never, pc = p.ranker.vocab, p.ranker.never, time.perf_counter
out = {k: [] for k in ("step", "step_full", "lookup", "top_all", "graph_top", "merge", "matched")}
for r in range(1 + passes):  # the first pass warms up
    s = p.session()
    for word in words:
        s.commit(word + " ")
        token, _, state = s._last_input  # the position's input and the state before it
        t0 = pc(); ids, log_probs, _ = p.model.step(token, state)
        t1 = pc(); full, _ = p.model.step_full(token, state)
        t2 = pc(); match = p.ranker.phrase_match(list(s._context))
        t3 = pc(); top = p.ranker.top_all(full, 3)
        t4 = pc(); graph = list(itertools.islice(((vocab.token_of(i), float(np.exp(lp)))  # as Session does
                                                   for i, lp in zip(ids.tolist(), log_probs) if not never[i]), 3))
        t5 = pc()
        if match is not None:
            p.ranker.merge(top, 3, phrase=match, model_probability=lambda w: float(np.exp(full[vocab.id_of(w)])))
        t6 = pc()
        if r:
            for k, a, b in (("step", t0, t1), ("step_full", t1, t2), ("lookup", t2, t3), ("top_all", t3, t4),
                            ("graph_top", t4, t5), ("merge", t5, t6)):
                out[k].append((b - a) * 1000.0)
            out["matched"].append(match is not None)
print(json.dumps(out))
"""
PY_CALLS = ("session", "typing", "completion_first", "completion_next", "cached")
JAVA_CALLS = ("session", "stateless", "cached", "key")
#: Every timed call and what its row means.
ROWS = {"session": "session `commit(word + \" \")` + `suggestions(3)`, words tapped from the strip",
        "typing": "the same, a user typing letters (completions follow)",
        "completion_first": "completion, first at a position", "completion_next": "completion, next letter",
        "stateless": "stateless `suggest(field, 3)`, no prefix cache",
        "cached": "stateless `suggest(field, 3)`, prefix cache",
        "key": "`TextField.update` + `slots()` per key (with a user history)",
        "letter": "the same, letters (completions)", "space": "the same, spaces (the word committed, next-word strip)"}
PLATFORMS = {"python_native": "Python, native", "python_aarch64": "Python, aarch64 (qemu)",
             "java_host": "Java, host JVM", "java_aarch64": "Java, aarch64 JVM (qemu)"}


def _parse_java(stdout: str) -> dict:
    lines = {line.split(" ", 1)[0]: line.split()[1:] for line in stdout.splitlines()}
    out = {k: [float(x) for x in v] for k, v in lines.items() if k.endswith("_us")}
    out.update({k: int(lines[k][0]) for k in ("keys", "changed", "mismatches")})
    out["vm"] = " ".join(lines["vm"]).replace("_", " ")
    return out


def _run(platform: str, argv: list[str], env, files: dict, warmup: int, passes: int) -> dict:
    """One process's samples of both variants ({"on_session_us": [...], "on_session_cpu_us": ...})."""
    if platform.startswith("python"):
        done = subprocess.run([*argv, "-c", PY_RUNNER, files["model"], files["words"], str(warmup), str(passes)],
                              cwd=REPO, env=env, check=True, capture_output=True, text=True, timeout=3600)
        return json.loads(done.stdout)
    done = subprocess.run([*argv, *JVM_FLAGS, "-cp", files["classes"], "org.keyboardlm.core.PhraseTableBenchmark",
                           files["model"], files["words"], str(warmup), str(passes)], env=env, check=True,
                          capture_output=True, text=True, timeout=3600)
    return _parse_java(done.stdout)


def _stats(a: np.ndarray) -> dict:
    return {"n": int(a.size), "p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "mean_ms": float(a.mean()), "max_ms": float(a.max())}


def _pool(runs: list[dict], calls: tuple, is_space: np.ndarray) -> dict:
    """{"on": {call: stats}, "on_cpu": ..., "off": ..., "off_cpu": ...} over every process's samples (ms)."""
    out = {}
    for v in ("on", "off"):
        for clock, suffix in (("", "us"), ("_cpu", "cpu_us")):
            cat = {c: np.concatenate([r[f"{v}_{c}_{suffix}"] for r in runs]) / 1000.0 for c in calls}
            if "key" in cat:
                space = np.tile(is_space, cat["key"].size // is_space.size)
                cat["letter"], cat["space"] = cat["key"][~space], cat["key"][space]
            out[v + clock] = {c: _stats(a) for c, a in cat.items()}
    out.update(changed_top3=runs[0]["changed"], mismatches=sum(r["mismatches"] for r in runs), vm=runs[0]["vm"])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", metavar="MODEL.tflite")
    p.add_argument("--native-only", action="store_true", help="skip the emulated aarch64 Python and JVM")
    p.add_argument("--processes", type=int, default=4, help="processes per platform, each running both variants")
    p.add_argument("--warmup", type=int, default=1, help="untimed passes first (JIT, caches); the JVMs take one more")
    p.add_argument("--passes", type=int, default=2, help="timed passes per native process")
    p.add_argument("--emulated-passes", type=int, default=1, help="timed passes per emulated process")
    p.add_argument("--parts", action="store_true", help="time the Python strip's parts apart instead")
    p.add_argument("--name", help="result file name (default phrase_table_latency, or phrase_table_parts)")
    p.add_argument("--out", default=result_file.results_dir("latency"))
    args = p.parse_args()
    if min(args.passes, args.emulated_passes, args.processes) < 1 or args.warmup < 0:
        p.error("--passes, --emulated-passes and --processes must be >= 1, --warmup >= 0")
    if not os.path.isfile(args.model):
        p.error(f"no model file at {args.model}")
    if not shutil.which("javac") or not shutil.which("java"):
        p.error("needs a JDK (javac, java) on PATH")
    platforms = {"python_native": ([sys.executable], None, args.passes),
                 "java_host": (["java"], None, args.passes)}
    if not args.native_only:
        env_dir = Path(subprocess.run(["bash", arm64.ENV_SCRIPT, "--java"], check=True,
                                      capture_output=True, text=True).stdout.strip().splitlines()[-1])
        python, python_env = arm64.emulated_python(str(REPO))
        platforms["python_aarch64"] = (python, python_env, args.emulated_passes)
        platforms["java_aarch64"] = (["qemu-aarch64-static", str(env_dir / JAVA_ARM64)],
                                     dict(os.environ, QEMU_LD_PREFIX=str(env_dir / "java-root")), args.emulated_passes)
    words = typed_words()
    if args.parts:
        return _parts(args, words, {k: v for k, v in platforms.items() if k.startswith("python")})
    is_space = np.array([c == " " for c in "".join(w + " " for w in words)])
    results, seconds = {}, {}
    with tempfile.TemporaryDirectory(prefix="phrase_table_latency_") as tmp:
        classes = os.path.join(tmp, "classes")
        sources = [str(f) for d in ("main", "bench") for f in sorted((CORE / d).rglob("*.java"))
                   if f.name != "InputLogicBenchmark.java"]  # that one needs the tests' FakeEditor
        subprocess.run(["javac", "--release", "8", "-nowarn", "-d", classes, *sources], check=True)
        files = {"model": os.path.abspath(args.model), "words": os.path.join(tmp, "words.txt"), "classes": classes}
        Path(files["words"]).write_text("\n".join(words) + "\n", encoding="utf-8")
        for name, (argv, env, passes) in platforms.items():
            t0, runs = time.perf_counter(), []
            warmup = args.warmup + (1 if name.startswith("java") else 0)
            for i in range(args.processes):
                runs.append(_run(name, argv, env, files, warmup, passes))
                if name.startswith("java") and runs[-1]["keys"] != is_space.size:
                    raise RuntimeError(f"{name}: {runs[-1]['keys']} keys a pass, expected {is_space.size}")
                print(f"{name} process {i + 1}/{args.processes}: {time.perf_counter() - t0:.0f} s", flush=True)
            seconds[name] = round(time.perf_counter() - t0, 1)
            results[name] = _pool(runs, PY_CALLS if name.startswith("python") else JAVA_CALLS, is_space)
    return _write(args, words, is_space, results, seconds)


def _write(args, words: list[str], is_space: np.ndarray, results: dict, seconds: dict) -> int:
    """The markdown and JSON (see the module docstring)."""
    ratios = {pl: {c: {f"{q}{clock}": r[f"on{clock}"][c][q] / r[f"off{clock}"][c][q] for q in ("p50_ms", "p99_ms")
                       for clock in ("", "_cpu")} for c in r["on"]} for pl, r in results.items()}
    passes = f"{args.passes} timed passes per native process, {args.emulated_passes} per emulated one"
    lines = [f"`{os.path.basename(args.model)}` ({os.path.getsize(args.model):,} bytes) with its phrase table and "
             f"with the table set aside, both in each process, their calls alternating word by word (key by key); "
             f"{len(words)} words of the embedded corpus ({is_space.size} keys a pass); {args.warmup} untimed "
             f"warm-up pass ({args.warmup + 1} in a JVM, `{' '.join(JVM_FLAGS)}`), then {passes}, {args.processes} "
             "processes per platform (wall seconds: " + ", ".join(f"{PLATFORMS[pl]} {s}" for pl, s in seconds.items())
             + ").", "", "With the phrase table / with it set aside, wall-clock and the calling thread's CPU time "
             "(budget 1.10x on p99):", "",
             "| call | platform | p50 | p99 | CPU p50 | CPU p99 | p50 / p99 ms with | p50 / p99 ms without |",
             "|---|---|---|---|---|---|---|---|"]
    for c, label in ROWS.items():
        for pl, r in results.items():
            if c in ratios[pl]:
                x, on, off = ratios[pl][c], r["on"][c], r["off"][c]
                lines.append(f"| {label} | {PLATFORMS[pl]} | {x['p50_ms']:.2f}x | {x['p99_ms']:.2f}x | "
                             f"{x['p50_ms_cpu']:.2f}x | {x['p99_ms_cpu']:.2f}x | {on['p50_ms']:.3f} / "
                             f"{on['p99_ms']:.3f} | {off['p50_ms']:.3f} / {off['p99_ms']:.3f} |")
    lines += ["", f"- words of a pass whose tapping session's top 3 the table changes (of {len(words)}): "
              + "; ".join(f"{PLATFORMS[pl]} {r['changed_top3']}" for pl, r in results.items())
              + "; words where a stateless answer differs from the session's: "
              + "; ".join(f"{PLATFORMS[pl]} {r['mismatches']}" for pl, r in results.items()),
              "- runtimes: " + "; ".join(f"{PLATFORMS[pl]} {r['vm']}" for pl, r in results.items()), "",
              "Caveats: a shared, loaded 2-core machine (wall-clock tails include time descheduled, which is why "
              "the CPU time is given too; only the ratios in one run mean much); qemu's speed, not a phone's, and "
              "HotSpot, not ART."]
    md = "\n".join(lines)
    result_file.write(args.name or "phrase_table_latency", {
        "model": os.path.basename(args.model), "model_bytes": os.path.getsize(args.model), "words": len(words),
        "keys_per_pass": int(is_space.size), "warmup": args.warmup, "passes": args.passes,
        "emulated_passes": args.emulated_passes, "processes": args.processes, "jvm_flags": JVM_FLAGS,
        "wall_seconds": seconds, "ratios_with_over_without": ratios, "results": results}, md, args.out, seeds=TIMED)
    print(md)
    return 0



def _parts(args, words: list[str], platforms: dict) -> int:
    """The --parts measurement (see the module docstring): one process per platform."""
    results, lines = {}, []
    with tempfile.TemporaryDirectory(prefix="phrase_table_parts_") as tmp:
        words_file = os.path.join(tmp, "words.txt")
        Path(words_file).write_text("\n".join(words) + "\n", encoding="utf-8")
        for name, (argv, env, passes) in platforms.items():
            t0 = time.perf_counter()
            done = subprocess.run([*argv, "-c", PARTS_RUNNER, os.path.abspath(args.model), words_file, str(passes)],
                                  cwd=REPO, env=env, check=True, capture_output=True, text=True, timeout=3600)
            raw = json.loads(done.stdout)
            matched = np.array(raw.pop("matched"))
            results[name] = {"positions": int(matched.size), "matched": int(matched.sum()),
                             "wall_seconds": round(time.perf_counter() - t0, 1)}
            for part, ms in raw.items():
                ms = np.array(ms)
                results[name][part] = {g: _stats(x) for g, x in (("all", ms), ("matched", ms[matched]),
                                                                   ("unmatched", ms[~matched]))}
    lines = [f"`{os.path.basename(args.model)}`: a tapping session's strip taken apart, on the same inputs at each "
             f"position ({len(words)} words of the embedded corpus, one warm-up pass, then {args.passes} passes "
             f"natively and {args.emulated_passes} emulated); p50 ms (p99), at the positions the table matched "
             "and at the others.", "",
             "| part | " + " | ".join(f"{PLATFORMS[pl]}, {g}" for pl in results for g in ("matched", "unmatched"))
             + " |", "|---|" + "---|---|" * len(results)]
    labels = {"step": "the graph's top-K step (`step`)", "step_full": "the full step (`step_full`)",
              "lookup": "the table's lookup (`phrase_match`)", "top_all": "top 3 over the vocabulary (`top_all`)",
              "graph_top": "top 3 from the graph's top K", "merge": "the merge (`Ranker.merge`)"}
    for part, label in labels.items():
        lines.append(f"| {label} | " + " | ".join(
            f"{r[part][g]['p50_ms']:.3f} ({r[part][g]['p99_ms']:.3f})" for r in results.values()
            for g in ("matched", "unmatched")) + " |")
    lines += ["", "- positions the table matched: " + "; ".join(
        f"{PLATFORMS[pl]} {r['matched']} of {r['positions']}" for pl, r in results.items()),
        "- with the table a matched position takes the full step, the lookup, the top 3 over the vocabulary and "
        "the merge; another the top-K step, the lookup and the graph's top 3. Without it: the top-K step and the "
        "graph's top 3. Wall-clock, a shared machine: the p50s are what to read."]
    md = "\n".join(lines)
    result_file.write(args.name or "phrase_table_parts", {"model": os.path.basename(args.model), "words": len(words),
                                                      "passes": args.passes, "emulated_passes": args.emulated_passes,
                                                      "results": results}, md, args.out, seeds=TIMED)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

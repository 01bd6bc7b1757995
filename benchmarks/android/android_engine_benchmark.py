"""The Android keyboard's pure-Java step engine vs the TFLite interpreter, same model, one thread.

Times what a keyboard does per word, as ``keyboard_lm/inference/bench.py`` defines it: a
suggestion is ``commit(word + " ")`` (tokenize + one ``step_full``) then ``suggestions(3)``;
a completion is ``complete(first two characters, 3)``; a raw step is one ``step_full``.
The Python side is ``keyboard_lm.inference.Predictor`` over the TFLite runtime
(``tflite-runtime`` or ``ai-edge-litert``, ``num_threads=1``); the Java side is the core of
android_demo/ (``Predictor``/``Session`` over ``JavaStepEngine``) in one JVM, driven pass by
pass over stdin by ``android_demo/core/src/bench/java/org/keyboardlm/core/EngineBenchmark.java``.
Passes alternate between the two in one run (after one warm-up pass each, which lets the JIT
compile), so drift on a shared machine hits both; the result is the ratio Java / TFLite.
A suggestion's thread CPU time is recorded too: on a busy machine, wall-clock tails (p99)
mostly measure time the process spent descheduled, which CPU time leaves out.
Both sides must also agree: the top-3 ids of every suggestion are compared.

    python benchmarks/android/android_engine_benchmark.py MODEL.tflite [MODEL2.tflite ...] [--passes 5] [--per-op]

``--per-op`` (opt-in) also times each operator of the Java engine's ``step_full`` on its own
(EngineBenchmark's ``ops`` command, after the timed passes, so it does not slow them):
microseconds per step by operator and by builtin. The TFLite Python interpreter has no
per-operator timer, so only its whole ``step_full`` is shown beside them.

Writes benchmarks/results/android/android_engine_benchmark.{json,md} (machine, date, command).
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
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common import result_file  # noqa: E402

#: What the timings draw: nothing (the seeds line of the result files).
SEEDS = ("none (deterministic: timed passes over the first 300 words of the embedded default corpus; nothing is "
         "sampled)")
CORE = REPO / "android_demo" / "core" / "src"
WORDS = 300
RAW_STEPS = 300
OP_STEPS = 300
OP_ROUNDS = 3


def _pcts(us: list[float]) -> dict:
    a = np.asarray(us, float) / 1000.0
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "mean_ms": float(a.mean()), "n": int(a.size)}


def _words() -> list[str]:
    from keyboard_lm.data.corpora import load_default

    corpus = load_default()
    return " ".join(" ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c]).split()[:WORDS]).split()


class JavaSide:
    """One JVM running EngineBenchmark on the model; each call is one pass."""

    def __init__(self, classes: Path, model: str, words_file: Path):
        self.proc = subprocess.Popen(["java", "-XX:+UseSerialGC", "-cp", str(classes), "org.keyboardlm.core.EngineBenchmark",
                                      model, str(words_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="utf-8")
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            raise RuntimeError(f"the Java benchmark did not start: {ready}")

    def _ask(self, command: str, lines: int) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        out = {}
        for _ in range(lines):
            key, *values = self.proc.stdout.readline().split()
            out[key] = values
        return out

    def run_pass(self) -> dict:
        r = self._ask("pass", 5)
        return {"suggest_us": [float(x) for x in r["suggest_us"]], "complete_us": [float(x) for x in r["complete_us"]],
                "suggest_cpu_us": [float(x) for x in r["suggest_cpu_us"]],
                "ids": np.array([int(x) for x in r["ids"]]).reshape(-1, 3),
                "log_probs": np.array([float(x) for x in r["logprobs"]]).reshape(-1, 3)}

    def raw(self, n: int) -> list[float]:
        return [float(x) for x in self._ask(f"raw {n}", 1)["raw_us"]]

    def ops(self, n: int) -> dict:
        """Mean microseconds per step_full call and per operator (label -> us), over n calls."""
        self.proc.stdin.write(f"ops {n}\n")
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().split()
        if not head or head[0] != "ops":
            raise RuntimeError(f"the Java benchmark answered {head} to ops")
        ops = {}
        for _ in range(int(head[1])):
            _, us, label = self.proc.stdout.readline().rstrip("\n").split(" ", 2)
            ops[label] = float(us)
        return {"step_us": float(head[2]), "ops": ops}

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def python_pass(predictor, words: list[str], record: bool = False) -> dict:
    suggest, complete, cpu, ids, log_probs = [], [], [], [], []
    session = predictor.session()
    for word in words:
        c0 = time.thread_time_ns()
        t0 = time.perf_counter()
        session.commit(word + " ")
        session.suggestions(3)
        t1 = time.perf_counter()
        c1 = time.thread_time_ns()
        session.complete(word[:2], 3)
        t2 = time.perf_counter()
        suggest.append((t1 - t0) * 1e6)
        complete.append((t2 - t1) * 1e6)
        cpu.append((c1 - c0) / 1e3)
        if record:  # outside the timing: the fixture's ranking (log-prob descending, ties by id)
            cand = session._all_ids
            order = cand[np.lexsort((cand, -session._log_probs[cand]))][:3]
            ids.append(order.tolist())
            log_probs.append([float(session._log_probs[i]) for i in order])
    return {"suggest_us": suggest, "complete_us": complete, "suggest_cpu_us": cpu, "ids": np.array(ids),
            "log_probs": np.array(log_probs)}


def python_raw(model, n: int) -> list[float]:
    out, state = [], model.initial_state()
    for _ in range(n):
        t0 = time.perf_counter()
        _, state = model.step_full(5, state)
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def per_op(java: JavaSide) -> dict:
    """The Java engine's step_full by operator: the median over OP_ROUNDS rounds of OP_STEPS calls (one warm-up round)."""
    java.ops(OP_STEPS)
    rounds = [java.ops(OP_STEPS) for _ in range(OP_ROUNDS)]
    labels = list(rounds[0]["ops"])
    ops = [{"operator": label, "us": float(np.median([r["ops"][label] for r in rounds]))} for label in labels]
    by_builtin: dict[str, float] = {}
    for op in ops:
        name = op["operator"].split(" ")[1]
        by_builtin[name] = by_builtin.get(name, 0.0) + op["us"]
    step = float(np.median([r["step_us"] for r in rounds]))
    return {"steps_per_round": OP_STEPS, "rounds": OP_ROUNDS, "step_us": step,
            "outside_operators_us": step - sum(op["us"] for op in ops), "operators": ops,
            "by_builtin": dict(sorted(by_builtin.items(), key=lambda kv: -kv[1]))}


def bench_model(model_path: str, classes: Path, words: list[str], words_file: Path, passes: int,
                with_ops: bool = False) -> dict:
    from keyboard_lm.inference import Predictor
    from keyboard_lm.inference.runtime import interpreter_class

    predictor = Predictor.load(model_path)
    java = JavaSide(classes, model_path, words_file)
    try:
        py_first, java_first = python_pass(predictor, words, record=True), java.run_pass()  # warm-up (JIT), and the agreement check
        python_raw(predictor.model, RAW_STEPS), java.raw(RAW_STEPS)
        samples = {side: {"suggestion": [], "suggestion_cpu": [], "completion": [], "raw_step": []} for side in ("java", "tflite")}
        for i in range(passes):
            order = ("tflite", "java") if i % 2 == 0 else ("java", "tflite")
            for side in order:
                r = python_pass(predictor, words) if side == "tflite" else java.run_pass()
                raw = python_raw(predictor.model, RAW_STEPS) if side == "tflite" else java.raw(RAW_STEPS)
                samples[side]["suggestion"] += r["suggest_us"]
                samples[side]["suggestion_cpu"] += r["suggest_cpu_us"]
                samples[side]["completion"] += r["complete_us"]
                samples[side]["raw_step"] += raw
        ops = per_op(java) if with_ops else None
    finally:
        java.close()
    same_ids = (py_first["ids"] == java_first["ids"]).all(axis=1)
    diff = np.abs(py_first["log_probs"] - java_first["log_probs"]).max(axis=1)
    result = {"model": os.path.relpath(model_path, REPO) if model_path.startswith(str(REPO)) else model_path,
              "model_bytes": os.path.getsize(model_path), "vocab_size": len(predictor.vocab),
              "state_size": predictor.model.state_size, "quantization": predictor.model.meta.get("quantization"),
              "model_config": predictor.model.meta.get("model"), "tflite_runtime": interpreter_class().__module__,
              "suggestions_compared": int(same_ids.size), "top3_ids_equal": int(same_ids.sum()),
              "max_abs_log_prob_diff_where_equal": float(diff[same_ids].max()) if same_ids.any() else None,
              "suggestions_with_log_prob_diff_over_1e-4": int((diff[same_ids] > 1e-4).sum()),
              "first_word_with_diff_over_1e-4": int(np.argmax(diff > 1e-4)) if (diff > 1e-4).any() else None}
    for side in ("java", "tflite"):
        result[side] = {k: _pcts(v) for k, v in samples[side].items()}
    if ops is not None:
        result["java_step_full_per_operator"] = ops
    result["ratio_java_over_tflite"] = {k: {p: result["java"][k][p] / result["tflite"][k][p] for p in ("p50_ms", "mean_ms", "p99_ms")}
                                        for k in ("suggestion", "suggestion_cpu", "completion", "raw_step")}
    return result


def compile_java(out: Path) -> Path:
    if not shutil.which("javac") or not shutil.which("java"):
        sys.exit("android_engine_benchmark: needs a JDK (javac, java) on PATH")
    classes = out / "classes"
    sources = sorted(str(p) for d in ("main", "bench") for p in (CORE / d).rglob("*.java"))
    subprocess.run(["javac", "--release", "8", "-nowarn", "-d", str(classes), *sources], check=True)
    return classes


def markdown(results: dict, passes: int) -> str:
    lines = [f"Per word: {WORDS} words of the embedded default corpus, {passes} timed passes per side after one "
             f"warm-up pass each, passes alternating between the sides; raw step: {RAW_STEPS} `step_full` calls "
             f"per pass. Single thread on both sides. Ratio > 1: the Java engine is slower.", ""]
    for name, r in results.items():
        cfg = r["model_config"] or {}
        lines += [f"## `{name}`", "",
                  f"{r['model_bytes']:,} bytes, {cfg.get('model_type')} vocab {r['vocab_size']:,}, embedding "
                  f"{cfg.get('embedding_dim')}, units {cfg.get('units')}, state {r['state_size']}, quantization "
                  f"{r['quantization']}; Python runtime: {r['tflite_runtime']}", "",
                  "| per word | TFLite p50 ms | Java p50 ms | ratio p50 | TFLite mean ms | Java mean ms | ratio mean | "
                  "TFLite p99 ms | Java p99 ms | ratio p99 |", "|---|---|---|---|---|---|---|---|---|---|"]
        for k in ("suggestion", "suggestion_cpu", "completion", "raw_step"):
            t, j, q = r["tflite"][k], r["java"][k], r["ratio_java_over_tflite"][k]
            label = {"suggestion_cpu": "suggestion, thread CPU time"}.get(k, k)
            lines.append(f"| {label} | {t['p50_ms']:.3f} | {j['p50_ms']:.3f} | {q['p50_ms']:.2f} | {t['mean_ms']:.3f} | "
                         f"{j['mean_ms']:.3f} | {q['mean_ms']:.2f} | {t['p99_ms']:.3f} | {j['p99_ms']:.3f} | {q['p99_ms']:.2f} |")
        diff = r["max_abs_log_prob_diff_where_equal"]
        ops = r.get("java_step_full_per_operator")
        if ops:
            total = ops["step_us"]
            lines += ["", f"Java `step_full` per operator (`--per-op`: each operator timed on its own, median of "
                          f"{ops['rounds']} rounds of {ops['steps_per_round']} steps; the timer itself adds a little): "
                          f"{total:.1f} us per step, beside TFLite's whole raw step p50 "
                          f"{r['tflite']['raw_step']['p50_ms'] * 1000:.1f} us (its interpreter has no per-operator timer).",
                      "", "| builtin | Java us/step | share |", "|---|---|---|"]
            for name, us in ops["by_builtin"].items():
                lines.append(f"| {name} | {us:.1f} | {us / total:.0%} |")
            lines.append(f"| (outside the operators: state copy, value array) | {ops['outside_operators_us']:.1f} | "
                         f"{ops['outside_operators_us'] / total:.0%} |")
            top = sorted(ops["operators"], key=lambda o: -o["us"])[:8]
            lines += ["", "| slowest operators (file position, builtin, output shape) | Java us/step |", "|---|---|"]
            lines += [f"| `{o['operator']}` | {o['us']:.1f} |" for o in top]
        lines += ["", f"- agreement: top-3 ids equal for {r['top3_ids_equal']} of {r['suggestions_compared']} suggestions"
                      + (f"; max |log-prob diff| where equal {diff:.2e}; suggestions with a diff > 1e-4: "
                         f"{r['suggestions_with_log_prob_diff_over_1e-4']}" if diff is not None else ""), ""]
    lines += ["Caveats: x86-64 desktop JVM (HotSpot JIT) vs the TFLite C++ interpreter (x86 SIMD kernels) on a "
              "shared, loaded machine; only the ratio is meaningful. On a phone the Java engine runs on ART, whose "
              "JIT/AOT code and the phone's TFLite (NEON kernels) may give another ratio; not measured here "
              "(no device or emulator)."]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", metavar="MODEL.tflite",
                   default=[str(REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite")])
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--out", default=result_file.results_dir("android"))
    p.add_argument("--name", default="android_engine_benchmark", help="results file name (without .json/.md)")
    p.add_argument("--note", default="", help="where the models came from, written into the markdown")
    p.add_argument("--per-op", action="store_true", help="also time each operator of the Java engine's step_full")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        classes = compile_java(tmp)
        words = _words()
        words_file = tmp / "words.txt"
        words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
        results = {}
        for model in args.models:
            name = os.path.basename(model)
            results[name] = bench_model(model, classes, words, words_file, args.passes, args.per_op)
            q = results[name]["ratio_java_over_tflite"]
            print(f"{name}: Java / TFLite p50 suggestion {q['suggestion']['p50_ms']:.2f}, "
                  f"raw step {q['raw_step']['p50_ms']:.2f}", flush=True)
    md = markdown(results, args.passes) + (f"\n\nModels: {args.note}" if args.note else "")
    result_file.write(args.name, {"passes": args.passes, "words": WORDS, "note": args.note, "models": results},
                  md, args.out, seeds=SEEDS)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Suggestion and completion latency, native x86_64 and emulated aarch64, side by side.

Runs ``keyboard_lm.inference.bench`` (tokenize + step + top-k + detokenize,
single thread) on the same model and text natively and under
qemu-aarch64-static user-mode emulation (``benchmarks/arm64_env.sh`` sets
that up from Debian's and PyPI's packages).  Gate: p99 <= 20 ms emulated
(Hard et al.'s budget); every figure is also given as a ratio to it.
Several models (e.g. the weight-only and the dynamic-range export of one
run) are measured one after the other in the same run.

The per-keystroke calls are also timed interleaved, word by word of the same
text, so machine drift hits them alike: a session's ``commit(word + " ")`` +
``suggestions(3)``; the stateless ``Predictor.suggest(field, 3)`` with the
text field growing one word at a time (the common integration), by a
predictor without its prefix cache (``prefix_cache_size=0``: each call
replays the current chunk of the field) and with it; the session's first
completion at a position (``complete(word[:2], 3)``: it computes the full
distribution) and the next one there (``complete(word[:3], 3)``).
``--baseline REF`` also runs the same measurements on the package as it is
at git revision REF (``git archive``), in the same run, for a before/after;
``--native-only`` skips the emulated aarch64 run. ``--table-off-too`` also measures each file with its
phrase table set aside; a file's two variants (and the baseline's) then run process by process alternately,
natively and emulated (``--emulated-rounds`` emulated processes of each), so the machine's drift hits both alike.

    python benchmarks/latency/latency_benchmark.py MODEL.tflite [MODEL2.tflite ...] [--native-only] [--baseline REF]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import arm64, result_file  # noqa: E402
from benchmarks.common.baseline import package_at, resolve  # noqa: E402

RUNNER = """
import json, sys, time
import numpy as np
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.bench import run
text = open(sys.argv[2], encoding="utf-8").read()
repeats = int(sys.argv[3])
table_off = len(sys.argv) > 4 and sys.argv[4] == "off"


def load(**kw):
    p = Predictor.load(sys.argv[1], **kw)
    if table_off:  # the same file with its phrase table set aside: the model alone
        from keyboard_lm.inference.ranker import Ranker
        p.ranker = Ranker(p.vocab)
    return p


out = run(load(), text, repeats=repeats)

# Per-keystroke calls, interleaved word by word. A package without the prefix cache (a baseline) has
# one stateless path: the uncached one.
session_p = load()
try:
    uncached, cached = load(prefix_cache_size=0), load()
except TypeError:
    uncached, cached = load(), None
words = text.split()
t = {k: [] for k in ("session_tapped", "session_suggestion", "stateless_uncached", "stateless_cached",
                     "completion_first", "completion_next")}
for r in range(repeats):
    s, field = session_p.session(), []
    tapped = session_p.session()  # a user who takes words from the strip: no completions
    for word in words:
        t0 = time.perf_counter()
        tapped.commit(word + " ")
        tapped.suggestions(3)
        t["session_tapped"].append(time.perf_counter() - t0)
        field.append(word)
        context = " ".join(field) + " "
        t0 = time.perf_counter()
        s.commit(word + " ")
        s.suggestions(3)
        t1 = time.perf_counter()
        s.complete(word[:2], 3)
        t2 = time.perf_counter()
        s.complete(word[:3], 3)
        t3 = time.perf_counter()
        a = uncached.suggest(context, 3)
        t4 = time.perf_counter()
        if cached is not None:
            b = cached.suggest(context, 3)
            t5 = time.perf_counter()
            assert a == b, context  # the cache changes the cost, never the answer
            t["stateless_cached"].append(t5 - t4)
        t["session_suggestion"].append(t1 - t0)
        t["completion_first"].append(t2 - t1)
        t["completion_next"].append(t3 - t2)
        t["stateless_uncached"].append(t4 - t3)
out["keystroke_samples_ms"] = {k: [x * 1000.0 for x in v] for k, v in t.items() if v}
print(json.dumps(out))
"""
KEYS = ("suggestion", "completion", "raw_step", "context_1_words", "context_50_words")
#: The interleaved per-keystroke calls (RUNNER) and what each row means.
KEYSTROKE = {"session_tapped": "session commit(word) + suggestions(3), no completions (words tapped from the strip)",
             "session_suggestion": "session commit(word) + suggestions(3), then completions (a user typing letters)",
             "stateless_uncached": "stateless suggest(field), no prefix cache",
             "stateless_cached": "stateless suggest(field), prefix cache",
             "completion_first": "completion, first at a position",
             "completion_next": "completion, next letter"}


def _measure(python: list[str], model: str, text_path: str, repeats: int, cwd: str, env=None) -> dict:
    """One process's figures; ``model`` may end in ``#table-off``: the file with its phrase table set aside."""
    path, _, variant = model.partition("#")
    done = subprocess.run([*python, "-c", RUNNER, os.path.abspath(path), text_path, str(repeats),
                           "off" if variant == "table-off" else "on"], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def _pool(runs: list[dict]) -> dict:
    """The first run's figures, with the per-keystroke percentiles over the samples of every run."""
    out = {k: v for k, v in runs[0].items() if k != "keystroke_samples_ms"}
    for key in runs[0]["keystroke_samples_ms"]:
        a = np.array([x for r in runs for x in r["keystroke_samples_ms"][key]])
        out[key] = {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
                    "mean_ms": float(a.mean()), "n": len(a)}
    return out


def _keystroke_table(columns: dict) -> list[str]:
    """Rows of the per-keystroke calls, one p50/p99 column pair per measured variant."""
    head = "| call | " + " | ".join(f"{name} p50 ms | {name} p99 ms" for name in columns) + " |"
    lines = [head, "|---|" + "---|---|" * len(columns)]
    for key, label in KEYSTROKE.items():
        cells = []
        for r in columns.values():
            cells += [f"{r[key]['p50_ms']:.3f}", f"{r[key]['p99_ms']:.3f}"] if key in r else ["-", "-"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _table_ratios(results: dict) -> list[str]:
    """p99 of each per-keystroke call with the phrase table / with it set aside, per model and platform."""
    lines = ["With the phrase table / with it set aside, per-keystroke p99 (the same file; budget 1.10x):", "",
             "| model | platform | " + " | ".join(KEYSTROKE) + " |", "|---|---|" + "---|" * len(KEYSTROKE)]
    for name, on in results.items():
        off = results.get(f"{name} (phrase table set aside)")
        if off is None:
            continue
        for platform in ("native", "aarch64_qemu"):
            if platform in on and platform in off:
                cells = [f"{on[platform][k]['p99_ms'] / off[platform][k]['p99_ms']:.2f}x"
                         if k in on[platform] and k in off[platform] else "" for k in KEYSTROKE]
                lines.append(f"| {name} | {platform} | " + " | ".join(cells) + " |")
    return lines + [""]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", metavar="MODEL.tflite")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2, help="native processes per variant, run alternately")
    p.add_argument("--emulated-rounds", type=int, default=1, help="emulated processes per variant, run alternately")
    p.add_argument("--native-only", action="store_true", help="skip the emulated aarch64 run")
    p.add_argument("--baseline", metavar="REF", help="also measure the package at this git revision "
                                                     "(natively, and emulated unless --native-only)")
    p.add_argument("--table-off-too", action="store_true",
                   help="also measure each model with its phrase table set aside (the model alone), after it")
    p.add_argument("--name", help="result file name (default: latency_benchmark[_native])")
    p.add_argument("--out", default=result_file.results_dir("latency"))
    args = p.parse_args()
    if min(args.repeats, args.rounds, args.emulated_rounds) < 1:
        p.error(f"--repeats, --rounds and --emulated-rounds must be >= 1, got {args.repeats}, {args.rounds} and "
                f"{args.emulated_rounds}")
    if args.baseline:  # a commit id, so the result says what was measured
        found = resolve(args.baseline)
        if found is None:
            p.error(f"--baseline {args.baseline}: not a git revision of this repository")
        args.baseline = found
    for model in args.models:
        if not os.path.isfile(model):
            p.error(f"no model file at {model}")
    # Measured together, alternately: a file and, with --table-off-too, the same file with its table set aside.
    groups = [[model, model + "#table-off"] if args.table_off_too else [model] for model in args.models]
    sys.path.insert(0, REPO)
    from keyboard_lm.data.corpora import load_default

    corpus = load_default()
    text = " ".join(" ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c]).split()[:300])
    text_path = os.path.join(args.out, "latency_text.txt")
    os.makedirs(args.out, exist_ok=True)
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(text)
    text_path = os.path.abspath(text_path)
    if not args.native_only:
        aarch64_python, env = arm64.emulated_python(REPO)
    results, lines = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        baseline_dir = package_at(args.baseline, tmp) if args.baseline else None
        trees = [("current", REPO)] + ([("baseline", baseline_dir)] if baseline_dir else [])
        runs = {}
        for group in groups:
            jobs = [(model, tree, where) for model in group for tree, where in trees]
            for job in jobs:
                runs[job[:2]], runs[job[0], "emulated_" + job[1]] = [], []
            for r in range(args.rounds):  # alternating (ABBA...), so a drift of the shared machine hits all alike
                for model, tree, where in (jobs if r % 2 else jobs[::-1]):
                    runs[model, tree].append(_measure([sys.executable], model, text_path, args.repeats, where))
            for r in range(0 if args.native_only else args.emulated_rounds):
                for model, tree, where in (jobs if r % 2 else jobs[::-1]):
                    runs[model, "emulated_" + tree].append(_measure(aarch64_python, model, text_path, args.repeats,
                                                                    where, env))
        for model in [m for group in groups for m in group]:
            name = os.path.basename(model).replace("#table-off", " (phrase table set aside)")
            result, current, baseline = {}, runs[model, "current"], runs.get((model, "baseline"))
            if baseline_dir:
                result["baseline_native"] = _pool(baseline)
            native = result["native"] = _pool(current)
            lines += [f"`{name}` ({native['model_bytes']:,} bytes)", ""]
            if args.native_only:
                lines += ["| measure | native p50 ms | native p99 ms | native p99 / 20 ms |", "|---|---|---|---|"]
                for k in KEYS:
                    n = native[k]
                    lines.append(f"| {k} | {n['p50_ms']:.3f} | {n['p99_ms']:.3f} | {n['p99_ms'] / 20.0:.3f} |")
                lines += ["", f"- 50-word vs 1-word context (p50): native {native['flatness_50_over_1']:.2f}x",
                          f"- peak RSS of a process that loads the model and serves: native "
                          f"{native['peak_rss_mb']:.0f} MB", ""]
            else:
                emulated = result["aarch64_qemu"] = _pool(runs[model, "emulated_current"])
                if baseline_dir:  # the emulator's speed differs between machines and days: compare in one run
                    result["baseline_aarch64_qemu"] = _pool(runs[model, "emulated_baseline"])
                result["gate_pass"] = emulated["suggestion"]["p99_ms"] <= 20.0 and \
                    emulated["completion"]["p99_ms"] <= 20.0
                lines += ["| measure | native p50 ms | native p99 ms | aarch64 (qemu) p50 ms | "
                          "aarch64 (qemu) p99 ms | aarch64 p99 / 20 ms |", "|---|---|---|---|---|---|"]
                for k in KEYS:
                    n, e = native[k], emulated[k]
                    lines.append(f"| {k} | {n['p50_ms']:.3f} | {n['p99_ms']:.3f} | {e['p50_ms']:.3f} | "
                                 f"{e['p99_ms']:.3f} | {e['p99_ms'] / 20.0:.3f} |")
                lines += ["", f"- gate p99 <= 20 ms emulated: {'PASS' if result['gate_pass'] else 'FAIL'}",
                          f"- 50-word vs 1-word context (p50): native {native['flatness_50_over_1']:.2f}x, "
                          f"emulated {emulated['flatness_50_over_1']:.2f}x",
                          f"- peak RSS of a process that loads the model and serves: native "
                          f"{native['peak_rss_mb']:.0f} MB, emulated {emulated['peak_rss_mb']:.0f} MB", ""]
            columns = {}
            if baseline_dir:
                columns[f"native at {args.baseline}"] = result["baseline_native"]
            columns["native"] = native
            if "baseline_aarch64_qemu" in result:
                columns[f"aarch64 (qemu) at {args.baseline}"] = result["baseline_aarch64_qemu"]
            if "aarch64_qemu" in result:
                columns["aarch64 (qemu)"] = result["aarch64_qemu"]
            n = native
            emulated_note = "" if args.native_only else f"; emulated, {args.emulated_rounds}"
            lines += [f"Per keystroke, interleaved word by word over the same {len(text.split())} words "
                      f"({args.repeats} passes in each of {args.rounds} processes per variant{emulated_note}, "
                      "run alternately):", "", *_keystroke_table(columns), "",
                      f"- stateless suggest, prefix cache vs none (p50, native): "
                      f"{n['stateless_uncached']['p50_ms'] / n['stateless_cached']['p50_ms']:.2f}x faster; "
                      f"cached stateless / session (p99, native): "
                      f"{n['stateless_cached']['p99_ms'] / n['session_tapped']['p99_ms']:.2f}x the tapping session"]
            if baseline_dir:
                b = result["baseline_native"]
                lines.append(f"- session suggestion p50, {args.baseline} / now: tapping "
                             f"{b['session_tapped']['p50_ms'] / n['session_tapped']['p50_ms']:.2f}x, typing "
                             f"{b['session_suggestion']['p50_ms'] / n['session_suggestion']['p50_ms']:.2f}x; "
                             f"stateless suggest p50, {args.baseline} / now (cached): "
                             f"{b['stateless_uncached']['p50_ms'] / n['stateless_cached']['p50_ms']:.2f}x")
                lines.append(f"- peak RSS of the measuring process, native: {b['peak_rss_mb']:.0f} MB at "
                             f"{args.baseline}, {n['peak_rss_mb']:.0f} MB now")
            lines.append("")
            results[name] = result
    os.remove(text_path)
    if args.table_off_too:
        lines += _table_ratios(results)
    name = args.name or ("latency_benchmark_native" if args.native_only else "latency_benchmark")
    result_file.write(name, {"models": results, "baseline": args.baseline}, "\n".join(lines), args.out,
                      seeds="none (deterministic: timed calls over the first 300 words of the embedded corpus; nothing "
                            "is sampled)")
    print("\n".join(lines))
    return 0 if all(r.get("gate_pass", True) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

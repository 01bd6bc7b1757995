"""Java heap of a loaded model, this tree's core against an earlier revision's, side by side in one run.

For each model and each way of loading it (``ModelFile.load`` of a path, ``fromBytes`` of an array the caller
drops, ``fromBuffer`` of a mapped file, ``fromStream``), HeapBenchmark (android_demo/core/src/bench) runs in a fresh JVM
(``-XX:+UseSerialGC``) and reports the used heap after full GCs before loading and with the model, a Predictor
and a session that ranked one strip held. With ``--peak`` it also measures the heap the load needs at its
peak, copies of the file included: in a fixed heap (``-Xmx{PEAK_XMX_MB}m -Xmn1m``: nearly all of it can hold old
objects), the largest array kept live beside the run (bisected to {STEP_KB} KB; -Xmx itself is rounded to
2 MB, too coarse) is subtracted from the largest one an empty JVM (mode ``none``) holds. Objects in the young
generation at the peak escape it (up to 1 MB), so it compares loads rather than giving absolute sizes. The earlier
revision (``--before``, default HEAD) is read with ``git archive`` (nothing in the working tree changes) and
compiled, as is this tree, with the same javac.

    python benchmarks/android/android_heap_benchmark.py MODEL.tflite [...] [--peak [--peak-from-bytes N]] [--out DIR]

Writes NAME.json and .md (machine, date, command; --name, default android_heap_benchmark) into --out (default
benchmarks/results).
With ``--arm64`` the JVM is the emulated aarch64 one of ``benchmarks/arm64_env.sh --java`` (in
KEYBOARD_LM_ARM64_ENV, default benchmarks/.arm64), which this script never builds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.java import CORE_MAIN, JAVA_ARM64, JVM_FLAGS, tree_at  # noqa: E402

BENCH_CLASS = REPO / "android_demo" / "core" / "src" / "bench" / "java" / "org" / "keyboardlm" / "core" / "HeapBenchmark.java"
#: How HeapBenchmark loads a model -> the ModelFile entry point it calls; a core without one is not run in that mode.
MODES = {"path": "load(", "bytes": "fromBytes(", "buffer": "fromBuffer(", "stream": "fromStream("}
MB = 1024 * 1024
PEAK_XMX_MB = 96
STEP_KB = 64
__doc__ = __doc__.replace("{PEAK_XMX_MB}", str(PEAK_XMX_MB)).replace("{STEP_KB}", str(STEP_KB))


def _compile(sources: Path, classes: Path) -> None:
    files = sorted(str(p) for p in sources.rglob("*.java")) + [str(BENCH_CLASS)]
    classes.mkdir(parents=True)
    subprocess.run(["nice", "-n", "10", "javac", "--release", "8", "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                    *files], check=True, capture_output=True, text=True)


def _modes(sources: Path) -> list[str]:
    """The load modes a core's sources offer (an earlier revision may lack ``fromBuffer`` or ``fromStream``)."""
    text = (sources / "org" / "keyboardlm" / "core" / "ModelFile.java").read_text(encoding="utf-8")
    return [mode for mode, call in MODES.items() if f"public static ModelFile {call}" in text]


def _run(java: list[str], classes: Path, mode: str, model: str, ballast_kb: int | None = None, env=None) -> dict:
    flags = [*JVM_FLAGS] + ([f"-Xmx{PEAK_XMX_MB}m", "-Xmn1m"] if ballast_kb is not None else [])
    extra = [str(ballast_kb)] if ballast_kb is not None else []
    r = subprocess.run(["nice", "-n", "10", *java, *flags, "-cp", str(classes), "org.keyboardlm.core.HeapBenchmark",
                        mode, model, *extra], capture_output=True, text=True, env=env, timeout=900)
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    if r.returncode in (0, 3, 4) and line.startswith("{"):
        return json.loads(line)
    if ballast_kb is not None and "OutOfMemoryError" in r.stderr:  # out of memory outside the measured part
        return {"mode": mode, "ok": False, "error": "OutOfMemoryError"}
    raise RuntimeError(f"HeapBenchmark {mode} {model} failed ({r.returncode}): {r.stderr[-2000:]}")


def _largest_ballast_kb(java, classes, mode, model, env=None) -> int:
    """The largest live array (KB, to STEP_KB) beside which the run completes in the fixed heap."""
    lo, hi = 0, PEAK_XMX_MB * 1024
    if not _run(java, classes, mode, model, lo, env).get("ok"):
        raise RuntimeError(f"{mode} {model} does not fit in {PEAK_XMX_MB} MB")
    while hi - lo > STEP_KB:
        mid = (lo + hi) // 2 // STEP_KB * STEP_KB
        if _run(java, classes, mode, model, mid, env).get("ok"):
            lo = mid
        else:
            hi = mid
    return lo


def _describe(model: str) -> dict:
    with zipfile.ZipFile(model) as z:
        meta = json.loads(z.read("keyboard_lm.json"))
    return {"file_bytes": os.path.getsize(model), "quantization": meta.get("quantization"),
            "vocab_size": meta.get("vocab_size"), "state_size": meta.get("state_size")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--before", default="HEAD", help="git revision whose core is compared (default HEAD)")
    ap.add_argument("--peak", action="store_true", help="also measure the heap each load needs at its peak (slow)")
    ap.add_argument("--peak-from-bytes", type=int, default=0,
                    help="measure the peak only for models of at least this file size (default: all)")
    ap.add_argument("--arm64", action="store_true", help="run on the emulated aarch64 JVM (must exist)")
    ap.add_argument("--out", default=result_file.results_dir("android"))
    ap.add_argument("--name", default="android_heap_benchmark", help="the result files' name (default %(default)s)")
    args = ap.parse_args()
    for tool in ("javac", "java", "git"):
        if not shutil.which(tool):
            sys.exit(f"heap_benchmark: {tool} not on PATH")
    java, env = ["java"], None
    if args.arm64:
        root = Path(os.environ.get("KEYBOARD_LM_ARM64_ENV", REPO / "benchmarks" / ".arm64")) / "java-root"
        qemu = shutil.which("qemu-aarch64-static")
        if not qemu or not (root.parent / JAVA_ARM64).exists():
            sys.exit(f"heap_benchmark: no emulated aarch64 JVM under {root} (bash benchmarks/arm64_env.sh --java builds it)")
        java, env = [qemu, str(root.parent / JAVA_ARM64)], {**os.environ, "QEMU_LD_PREFIX": str(root)}

    with tempfile.TemporaryDirectory(prefix="heap_benchmark_") as tmp:
        tmp = Path(tmp)
        classes = {"before": tmp / "before", "after": tmp / "after"}
        sources = {"before": tree_at(args.before, tmp / "src_before"), "after": REPO / CORE_MAIN}
        modes = {side: _modes(src) for side, src in sources.items()}
        for side, src in sources.items():
            _compile(src, classes[side])
        floor = {side: _run(java, classes[side], "none", args.models[0], env=env) for side in classes}
        floor_kb = ({side: _largest_ballast_kb(java, classes[side], "none", args.models[0], env) for side in classes}
                    if args.peak else {})
        results = []
        for model in args.models:
            entry = {"model": os.path.relpath(model, REPO) if Path(model).resolve().is_relative_to(REPO) else Path(model).name,
                     **_describe(model), "runs": []}
            for side in classes:
                for mode in modes[side]:
                    r = _run(java, classes[side], mode, model, env=env)
                    r["code"] = side
                    if args.peak and entry["file_bytes"] >= args.peak_from_bytes:
                        kb = _largest_ballast_kb(java, classes[side], mode, model, env)
                        r["largest_ballast_kb"] = kb
                        r["peak_kb"] = floor_kb[side] - kb
                    entry["runs"].append(r)
                    print(f"{entry['model']} {side:6s} {mode:6s} retained {r['retained_bytes'] / MB:7.2f} MB"
                          + (f", peak {r['peak_kb'] / 1024:.2f} MB" if "peak_kb" in r else ""), flush=True)
            results.append(entry)

    vm = floor["after"]["vm"]
    lines = [f"Java heap held by a loaded model, a Predictor and one session after a strip ({vm}, "
             f"{' '.join(JVM_FLAGS)}): used heap after full GCs, minus the same before loading. "
             f"\"before\" is the core at `{args.before}`, \"after\" this tree's, run one after the other in this run.",
             ""]
    header = "| model | file | load | before: retained MB | after: retained MB | after / before |"
    sep = "|---|---|---|---|---|---|"
    if args.peak:
        header += " before: peak MB | after: peak MB |"
        sep += "---|---|"
    lines += [header, sep]
    for e in results:
        by = {(r["code"], r["mode"]): r for r in e["runs"]}
        for mode in modes["after"]:
            a, b = by[("after", mode)], by.get(("before", mode))
            row = (f"| {e['model']} | {e['file_bytes'] / MB:.2f} MB {e['quantization']} | `{mode}` | "
                   f"{b['retained_bytes'] / MB:.2f} |" if b else f"| {e['model']} | {e['file_bytes'] / MB:.2f} MB "
                   f"{e['quantization']} | `{mode}` | (no such entry point) |")
            row += f" {a['retained_bytes'] / MB:.2f} | " + (f"{a['retained_bytes'] / b['retained_bytes']:.2f} |" if b else "- |")
            if args.peak:
                for r in (b, a):
                    row += f" {r['peak_kb'] / 1024:.2f} |" if r and "peak_kb" in r else " - |"
            lines.append(row)
    if args.peak:
        lines += ["", f"Peak: the heap the load and the first strip need at their peak, file copies included: in "
                      f"`-Xmx{PEAK_XMX_MB}m -Xmn1m`, the largest live array an empty JVM holds "
                      f"({floor_kb['before'] / 1024:.2f} MB before, {floor_kb['after'] / 1024:.2f} MB after) minus the "
                      f"largest one the run completes beside (bisected to {STEP_KB} KB). Objects still in the 1 MB "
                      f"young generation at the peak are not counted, so it can read up to 1 MB below the retained "
                      f"heap; it compares loads with each other."]
    path_json, path_md = result_file.write(args.name, {"before": args.before, "jvm_flags": JVM_FLAGS, "vm": vm,
                                                          "floor": floor, "floor_largest_ballast_kb": floor_kb,
                                                          "results": results}, "\n".join(lines), args.out,
                                           seeds="none (deterministic: heap held after loading fixed models and "
                                                 "one strip; nothing is sampled)")
    print("\n".join(lines))
    print(f"wrote {path_json} and {path_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

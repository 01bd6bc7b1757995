"""Corrupted model files against the model loaders: this tree's against an earlier revision's, in one run.

Variants of the golden models (tests/golden/models), each sealed as the exporter seals them first:
bytes flipped anywhere, bytes flipped or 32-bit words overwritten in the flatbuffer's structure (its
tables, vtables, offsets, shapes and indices, not the weights), the archive damaged, truncations,
chunks copied in from elsewhere in the file or another model, inserted or deleted. Each variant is
tried twice: ``raw`` (the checksum as the damage left it: accidental corruption) and ``resealed`` (the
checksum recomputed, so the damage reaches the structural checks: a crafted file).

Every load runs in a worker subprocess that answers one line per file; a worker that dies is a crash
and one that does not answer within --timeout seconds a hang (it is killed), and a new worker goes on
with the next file. A load is ``ModelFile.load`` and one ``step`` and ``step_full`` (a file that loads
serves suggestions). Outcomes:

* ``loaded``: the file loaded and stepped;
* ``refused``: ModelFileError (Python) or ModelFileException (Java), one line naming the file;
* ``uncaught``: any other exception or error (what it was is counted by type);
* ``crash``: the process died (SIGSEGV, SIGABRT, ...); ``hang``: no answer in time.

Both revisions (``--before``, ``--after``) are read with ``git archive`` into a temporary directory (the
working tree, where others may be editing, is neither read nor touched); the earlier loader sees the raw
variants (it ignores the checksum comment, so resealing changes nothing for it). With ``--java`` the Java
core of both revisions (compiled with the host javac, plus android_demo/core/src/bench/.../
ModelFuzzWorker.java) is tried on the same files. Last, each loader's median load time of an unchanged
golden model and of the demo asset (paper size): what the checks cost.

    python benchmarks/export/model_fuzz.py [--variants N] [--seed S] [--before REV] [--after REV] [--java] [--out DIR]

Writes model_fuzz.json and model_fuzz.md (machine, date, command) into --out (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.baseline import tree_at  # noqa: E402
from keyboard_lm.inference.model_file import end_record, seal  # noqa: E402
from keyboard_lm.inference.tflite_flatbuffer import read_model  # noqa: E402

GOLDEN = REPO / "tests" / "golden" / "models"
OUTCOMES = ("loaded", "refused", "uncaught", "crash", "hang")
KINDS = ("flip", "structure", "word", "archive", "truncate", "splice", "insert", "delete")

#: A worker: reads file paths on stdin, answers one outcome line per path (run with the tree's root as argv[1]).
PYTHON_WORKER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from keyboard_lm.inference.model_file import ModelFile, ModelFileError
print("ready", flush=True)
for line in sys.stdin:
    path = line.rstrip("\n")
    if path.startswith("time "):  # "time N PATH": median milliseconds of N loads
        import time
        _, n, path = path.split(" ", 2)
        times = []
        for _ in range(int(n)):
            t = time.perf_counter()
            ModelFile.load(path)
            times.append((time.perf_counter() - t) * 1e3)
        print("time", sorted(times)[len(times) // 2], flush=True)
        continue
    try:
        m = ModelFile.load(path)
        m.step(2, m.initial_state())
        m.step_full(2, m.initial_state())
        out = "loaded"
    except ModelFileError as e:
        msg = str(e)
        out = "refused" if "\n" not in msg and path in msg else "uncaught ModelFileError-not-one-line"
    except BaseException as e:
        out = "uncaught " + type(e).__name__
    print(out, flush=True)
"""


class Golden:
    """One golden model, sealed, and where its flatbuffer's structure lies (outside the constant buffers)."""

    def __init__(self, path: Path):
        self.name = path.name
        self.data = seal(path.read_bytes())
        with zipfile.ZipFile(path) as z:
            self.flatbuffer_end = min(i.header_offset for i in z.infolist())
        weights = [r for r in read_model(self.data, self.flatbuffer_end).buffers if r is not None and r[1] >= 64]
        inside = bytearray(self.flatbuffer_end)
        for start, n in weights:
            inside[start:start + n] = b"\1" * n
        self.structure = [i for i in range(8, self.flatbuffer_end) if not inside[i]]


def golden_models(directory: Path = GOLDEN) -> list[Golden]:
    return [Golden(p) for p in sorted(directory.glob("*.tflite"))]


_WORDS = (0, 1, 2, 3, 4, 7, 8, 16, 255, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x10000)


def mutate(g: Golden, kind: str, rng: random.Random, others: list[Golden]) -> bytes:
    """One corrupted copy of ``g`` (sealed bytes) of the given kind."""
    d = bytearray(g.data)
    n = len(d)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            d[rng.randrange(n)] ^= rng.randint(1, 255)
    elif kind == "structure":
        for _ in range(rng.randint(1, 4)):
            d[rng.choice(g.structure)] ^= rng.randint(1, 255)
    elif kind == "word":
        at = rng.choice(g.structure) & ~3
        old = int.from_bytes(d[at:at + 4], "little")
        new = rng.choice([*_WORDS, old + 1, old - 1, old + 4, old - 4, old + 16, old * 2, g.flatbuffer_end,
                          n, rng.getrandbits(32)]) & 0xFFFFFFFF
        d[at:at + 4] = new.to_bytes(4, "little")
    elif kind == "archive":
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(g.flatbuffer_end, n)] ^= rng.randint(1, 255)
    elif kind == "truncate":
        del d[rng.randrange(n):]
    elif kind == "splice":
        src = rng.choice(others).data
        size = rng.randint(1, 256)
        a, b = rng.randrange(len(src) - size), rng.randrange(n - size)
        d[b:b + size] = src[a:a + size]
    elif kind == "insert":
        at = rng.randrange(n)
        d[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
    elif kind == "delete":
        at = rng.randrange(n)
        del d[at:at + rng.randint(1, 16)]
    out = bytes(d)
    return out if out != g.data else bytes(d[:-1])


def reseal(data: bytes) -> bytes:
    """``data`` with its checksum recomputed where the archive's end record survived."""
    return seal(data) if end_record(data) is not None else data


def variants(models: list[Golden], count: int, seed: int):
    """``count`` (model name, kind, bytes) variants, kinds in turn, reproducible from ``seed``."""
    rng = random.Random(seed)
    for i in range(count):
        g = models[i % len(models)]
        kind = KINDS[(i // len(models)) % len(KINDS)]
        yield g.name, kind, mutate(g, kind, rng, models)


class Worker:
    """A loader subprocess fed one path at a time, restarted after a crash or a hang."""

    def __init__(self, argv: list[str], timeout: float, env=None):
        self.argv, self.timeout, self.env = argv, timeout, env
        self.proc = None
        self.restarts = 0

    def _start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1, env=self.env)
        first = self._line(120)
        if first != "ready":
            raise RuntimeError(f"the worker {self.argv[:3]} did not start: {first!r}")

    def _line(self, timeout: float) -> str | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().rstrip("\n")

    def _stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.proc.stdin.close()
            self.proc = None

    def load(self, path: str, timeout: float | None = None) -> tuple[str, str]:
        """(outcome, detail) of loading ``path`` (or of another request line the worker answers)."""
        if self.proc is None:
            self._start()
        try:
            self.proc.stdin.write(path + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._line(self.timeout if timeout is None else timeout)
        if line is None:
            self._stop()
            self.restarts += 1
            return "hang", f"no answer in {self.timeout if timeout is None else timeout:g} s"
        if line == "":
            code = self.proc.wait()
            self.proc.stdout.close()
            self.proc.stdin.close()
            self.proc = None
            self.restarts += 1
            return "crash", f"exit {code}" + (f" (signal {-code})" if code < 0 else "")
        outcome, _, detail = line.partition(" ")
        return outcome, detail

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc.stdout.close()
            self.proc = None


def python_worker(root: Path, timeout: float) -> Worker:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return Worker([sys.executable, "-c", PYTHON_WORKER, str(root)], timeout, env)


JAVA_MAIN = "android_demo/core/src/main/java"
JAVA_WORKER = REPO / "android_demo" / "core" / "src" / "bench" / "java" / "org" / "keyboardlm" / "core" / "ModelFuzzWorker.java"


def java_worker(sources: Path, classes: Path, timeout: float) -> Worker:
    """The Java core in ``sources`` (a main source tree) compiled with the fuzz worker, as a Worker."""
    files = sorted(str(p) for p in sources.rglob("*.java")) + [str(JAVA_WORKER)]
    classes.mkdir(parents=True)
    subprocess.run(["javac", "--release", "8", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), *files],
                   check=True, capture_output=True, text=True)
    return Worker(["java", "-Xmx256m", "-Xss1m", "-cp", str(classes), "org.keyboardlm.core.ModelFuzzWorker"], timeout)


def run(workers: dict[str, Worker], models: list[Golden], count: int, seed: int, tmp: Path) -> dict:
    """Counts per loader and mode, per kind, and the first few examples of each bad outcome."""
    counts = {name: collections.Counter() for name in workers}
    by_kind = {name: collections.defaultdict(collections.Counter) for name in workers}
    uncaught = {name: collections.Counter() for name in workers}
    examples = {name: [] for name in workers}
    for i, (model, kind, data) in enumerate(variants(models, count, seed)):
        sealed = reseal(data)
        for name, worker in workers.items():
            mode = name.rsplit(" ", 1)[1]
            blob = sealed if mode == "resealed" else data
            path = tmp / f"{i:05d}-{kind}.tflite"
            path.write_bytes(blob)
            outcome, detail = worker.load(str(path))
            path.unlink()
            counts[name][outcome] += 1
            by_kind[name][kind][outcome] += 1
            if outcome == "uncaught":
                uncaught[name][detail] += 1
            if outcome in ("uncaught", "crash", "hang") and len(examples[name]) < 10:
                examples[name].append({"variant": i, "model": model, "kind": kind, "outcome": outcome,
                                       "detail": detail})
        if (i + 1) % 200 == 0:
            print(f"{i + 1}/{count}: " + "; ".join(f"{n}: {dict(c)}" for n, c in counts.items()), flush=True)
    return {"counts": {n: {o: c[o] for o in OUTCOMES} for n, c in counts.items()},
            "by_kind": {n: {k: {o: c[o] for o in OUTCOMES} for k, c in kinds.items()} for n, kinds in by_kind.items()},
            "uncaught_types": {n: dict(c) for n, c in uncaught.items()},
            "restarts": {n: w.restarts for n, w in workers.items()}, "examples": examples}


def _table(result: dict, count: int) -> str:
    lines = [f"{count} variants of the {len(result['models'])} golden models ({', '.join(KINDS)} in turn); "
             "raw: the checksum as the damage left it; resealed: recomputed (a crafted file).", "",
             "| loader | files | " + " | ".join(OUTCOMES) + " |", "|---|---|" + "---|" * len(OUTCOMES)]
    for name, c in result["counts"].items():
        lines.append(f"| {name} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in OUTCOMES) + " |")
    lines += ["", "Uncaught exceptions by type:", ""]
    for name, c in result["uncaught_types"].items():
        if c:
            lines.append(f"- {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda x: -x[1])))
    lines += ["", "By kind (loaded / refused / uncaught / crash / hang):", "",
              "| kind | " + " | ".join(result["counts"]) + " |", "|---|" + "---|" * len(result["counts"])]
    for kind in KINDS:
        cells = []
        for name in result["counts"]:
            c = result["by_kind"][name].get(kind, {})
            cells.append(" / ".join(str(c.get(o, 0)) for o in OUTCOMES))
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_times(workers: dict[str, Worker], files: dict[str, Path], repeats: int) -> dict:
    """Median milliseconds of ``repeats`` loads of each file (an unchanged model) by each worker."""
    out = {}
    for name, worker in workers.items():
        for label, path in files.items():
            outcome, detail = worker.load(f"time {repeats} {path}", timeout=600)
            out.setdefault(name, {})[label] = round(float(detail), 2) if outcome == "time" else None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--before", default="HEAD~1", help="the earlier revision whose loaders are compared")
    ap.add_argument("--after", default="HEAD", help="the revision compared with it (its golden models are fuzzed)")
    ap.add_argument("--java", action="store_true", help="also the Java core of both revisions (needs javac)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds a load may take before it counts as a hang")
    ap.add_argument("--repeats", type=int, default=20, help="loads of an unchanged model timed per loader")
    ap.add_argument("--out", default=result_file.results_dir("export"))
    args = ap.parse_args()
    started = time.time()
    asset = "android_demo/app/src/main/assets/model.tflite"
    with tempfile.TemporaryDirectory(prefix="model_fuzz-") as tmp_dir:
        tmp = Path(tmp_dir)
        # Both revisions from git (the working tree, where others may be editing, is not read).
        before = tree_at(args.before, tmp / "before", ["keyboard_lm", JAVA_MAIN])
        after = tree_at(args.after, tmp / "after", ["keyboard_lm", JAVA_MAIN, "tests/golden/models", asset])
        models = golden_models(after / "tests" / "golden" / "models")
        b, a = (subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev], check=True, capture_output=True,
                               text=True).stdout.strip() for rev in (args.before, args.after))
        workers = {f"python {b} raw": python_worker(before, args.timeout),
                   f"python {a} raw": python_worker(after, args.timeout),
                   f"python {a} resealed": python_worker(after, args.timeout)}
        if args.java:
            if not shutil.which("javac") or not shutil.which("java"):
                raise SystemExit("--java needs javac and java on PATH")
            workers[f"java {b} raw"] = java_worker(before / JAVA_MAIN, tmp / "classes-before", args.timeout)
            workers[f"java {a} raw"] = java_worker(after / JAVA_MAIN, tmp / "classes-after", args.timeout)
            workers[f"java {a} resealed"] = workers[f"java {a} raw"]
        files = tmp / "files"
        files.mkdir()
        try:
            result = run(workers, models, args.variants, args.seed, files)
            timed = {n: w for n, w in workers.items() if n.endswith(" raw")}
            times = load_times(timed, {"golden cifg_dynamic-range": after / "tests/golden/models/cifg_dynamic-range.tflite",
                                       "demo asset": after / asset}, args.repeats)
        finally:
            for w in {id(w): w for w in workers.values()}.values():
                w.close()
        sizes = {"golden cifg_dynamic-range": (after / "tests/golden/models/cifg_dynamic-range.tflite").stat().st_size,
                 "demo asset": (after / asset).stat().st_size}
    result = {"variants": args.variants, "seed": args.seed, "before": b, "after": a,
              "timeout_s": args.timeout, "models": [g.name for g in models], **result,
              "load_ms_median": times, "load_repeats": args.repeats, "file_bytes": sizes,
              "seconds": round(time.time() - started, 1)}
    markdown = (_table(result, args.variants) + "\n\n" + _times_table(result)
                + f"\n\nTook {result['seconds']} s.")
    paths = result_file.write("model_fuzz", result, markdown, args.out,
                              seeds=f"{args.seed} (--seed: it draws the damaged variants)")
    print(markdown)
    print("written:", *paths)
    return 0


def _times_table(result: dict) -> str:
    lines = [f"Load time of an unchanged model, median of {result['load_repeats']} loads (ms; `ModelFile.load`, "
             "the checks included; one worker process each, the same machine at the same time):", "",
             "| loader | " + " | ".join(f"{k} ({result['file_bytes'][k]:,} bytes)" for k in result["file_bytes"]) + " |",
             "|---|" + "---|" * len(result["file_bytes"])]
    for name, row in result["load_ms_median"].items():
        lines.append(f"| {name.rsplit(' ', 1)[0]} | " + " | ".join(str(row.get(k)) for k in result["file_bytes"]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

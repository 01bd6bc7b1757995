"""The README's main job, measured: `keyboard-lm demo` end to end (and `--scratch`), wall time and what it reaches.

    python benchmarks/recipes/demo_benchmark.py                 # the default demo (from the shipped base)
    python benchmarks/recipes/demo_benchmark.py --scratch       # and the recipe from random weights, one after the other

Each variant runs as a user runs it (a fresh process, its own run directory under --work); the wall time is
the whole command's, and the held-out recall@3 and perplexity are those run.json keeps (the demo's split of
the embedded corpus). One run at a time, so the times are the machine's own. ``--repeats N`` runs each
variant N times (the demo is not bit-deterministic: dropout and TFF's thread order are not seeded) and reports
mean and spread, and each run's 95% interval of recall@3 over the held-out users.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402


def run_demo(out: str, scratch: bool) -> dict:
    cmd = [sys.executable, "-m", "keyboard_lm.cli", "demo", "--out", out, "--overwrite"] + (["--scratch"] if scratch else [])
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.time() - start
    if done.returncode:
        raise SystemExit(f"{shlex.join(['keyboard-lm', *cmd[3:]])} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    from keyboard_lm.models.run_dir import RunRecord

    record = RunRecord.read(out)
    kept = record.final_metrics or {}
    strips = [line.strip() for line in done.stdout.splitlines() if " -> " in line]
    return {"command": shlex.join(["keyboard-lm", *cmd[3:]]), "seconds": round(seconds, 1),
            "rounds": record.rounds_done, "recall_at_3": kept.get("recall_at_3"),
            "perplexity": kept.get("perplexity"), "strips": strips}


def heldout_interval(out: str) -> list[float]:
    """The kept model's recall@3 interval over the demo's held-out users (``evaluation.intervals``)."""
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_model, intervals
    from keyboard_lm.models.run_dir import build_loaded_model, load_run

    run = load_run(out)
    corpus = load_default()
    heldout = split_clients(corpus.client_ids, SplitConfig(**run.record.split))[1]
    result = evaluate_model(build_loaded_model(run), corpus, heldout, run.vocab, run.record.seq_len)
    return list(intervals(result, ("recall_at_3",))["recall_at_3"])


def _spread(values, digits: int = 4):
    import statistics

    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{statistics.fmean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scratch", action="store_true", help="also run `demo --scratch` (from random weights)")
    p.add_argument("--repeats", type=int, default=1, help="runs of each variant (1)")
    p.add_argument("--work", default=os.path.join("runs", "demo_benchmark"))
    p.add_argument("--name", default="demo")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args(argv)
    variants = {"from the base (default)": False} | ({"from random weights (--scratch)": True} if args.scratch else {})
    runs = {}
    for i in range(args.repeats):
        for name, scratch in variants.items():
            out = os.path.join(args.work, ("scratch" if scratch else "base") + (f"_{i}" if args.repeats > 1 else ""))
            r = run_demo(out, scratch)
            r["interval_recall_at_3"] = heldout_interval(out) if args.repeats > 1 else None
            runs.setdefault(name, []).append(r)
    results = {name: rs[0] for name, rs in runs.items()}
    lines = ["`keyboard-lm demo` end to end, one variant after the other; held-out recall@3 and perplexity of the "
             "round run.json keeps." + (f" {args.repeats} runs of each, alternating." if args.repeats > 1 else ""),
             "", "| demo | wall s | rounds | held-out recall@3 | perplexity |", "|---|---:|---:|---:|---:|"]
    for name, rs in runs.items():
        lines.append(f"| {name} | {_spread([r['seconds'] for r in rs], 0)} | {rs[0]['rounds']} | "
                     f"{_spread([r['recall_at_3'] for r in rs])} | {_spread([r['perplexity'] for r in rs], 1)} |")
    if args.repeats > 1:
        lines += ["", "Each run's held-out recall@3 with its 95% interval over the held-out users:", ""]
        for name, rs in runs.items():
            lines.append(f"- {name}: " + "; ".join(f"{r['recall_at_3']:.4f} [{r['interval_recall_at_3'][0]:.4f}, "
                                                   f"{r['interval_recall_at_3'][1]:.4f}]" for r in rs))
    for name, r in results.items():
        lines += ["", f"{name}, `{r['command']}`:", ""] + [f"- {s}" for s in r["strips"]]
    text = "\n".join(lines) + "\n"
    paths = result_file.write(args.name, {"variants": results, "runs": runs, "repeats": args.repeats}, text, args.out,
                              seeds="0 (`keyboard-lm demo`'s default; the demo is not bit-deterministic: dropout "
                                    "and TFF's thread order are not seeded)")
    print(text)
    print("written:", *paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())

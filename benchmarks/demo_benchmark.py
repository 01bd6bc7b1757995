"""The README's main job, measured: `keyboard-lm demo` end to end (and `--scratch`), wall time and what it reaches.

    python benchmarks/demo_benchmark.py                 # the default demo (from the shipped base)
    python benchmarks/demo_benchmark.py --scratch       # and the recipe from random weights, one after the other

Each variant runs as a user runs it (a fresh process, its own run directory under --work); the wall time is
the whole command's, and the held-out recall@3 and perplexity are those run.json keeps (the demo's split of
the embedded corpus). One run at a time, so the times are the machine's own.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import _report  # noqa: E402


def run_demo(out: str, scratch: bool) -> dict:
    cmd = [sys.executable, "-m", "keyboard_lm.cli", "demo", "--out", out, "--overwrite"] + (["--scratch"] if scratch else [])
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.time() - start
    if done.returncode:
        raise SystemExit(f"{shlex.join(['keyboard-lm', *cmd[3:]])} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    kept = info.get("final_metrics") or {}
    strips = [line.strip() for line in done.stdout.splitlines() if " -> " in line]
    return {"command": shlex.join(["keyboard-lm", *cmd[3:]]), "seconds": round(seconds, 1),
            "rounds": info.get("rounds_done"), "recall_at_3": kept.get("recall_at_3"),
            "perplexity": kept.get("perplexity"), "strips": strips}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scratch", action="store_true", help="also run `demo --scratch` (from random weights)")
    p.add_argument("--work", default=os.path.join("runs", "demo_benchmark"))
    p.add_argument("--name", default="demo")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = p.parse_args(argv)
    variants = {"from the base (default)": False} | ({"from random weights (--scratch)": True} if args.scratch else {})
    results = {name: run_demo(os.path.join(args.work, "scratch" if scratch else "base"), scratch)
               for name, scratch in variants.items()}
    lines = ["`keyboard-lm demo` end to end, one variant after the other; held-out recall@3 and perplexity of the "
             "round run.json keeps.", "", "| demo | wall s | rounds | held-out recall@3 | perplexity |",
             "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['seconds']:.0f} | {r['rounds']} | {r['recall_at_3']:.4f} | {r['perplexity']:.1f} |")
    for name, r in results.items():
        lines += ["", f"{name}, `{r['command']}`:", ""] + [f"- {s}" for s in r["strips"]]
    text = "\n".join(lines) + "\n"
    paths = _report.write(args.name, {"variants": results}, text, args.out)
    print(text)
    print("written:", *paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seconds per federated round: TFF's local context vs 1 and 2 `keyboard-lm worker`s, side by side (issue 15).

Each configuration is one `keyboard-lm train` run (paper-size CIFG, Tiny
Shakespeare by role, FedAvg) of --rounds rounds; the figure is the median of
the per-round `seconds` in metrics.csv after the first round (which traces and
compiles). Workers run on this machine, so 2 workers share its cores with the
driver: the comparison shows the runtime's overhead, not a speed-up.

    python benchmarks/workers_benchmark.py --data ../shared/data/tinyshakespeare/input.txt
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from benchmarks import _report  # noqa: E402


def run(out: str, args, clients: int, workers: str | None) -> dict:
    cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", "--out", out, "--data", args.data, "--format",
           args.format, "--clients-per-round", str(clients), "--rounds", str(args.rounds),
           "--eval-every", str(10 * args.rounds), "--dropout", "0"]
    if workers:
        cmd += ["--workers", workers]
    t0 = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
        seconds = [float(r["seconds"]) for r in csv.DictReader(f)]
    return {"round_seconds": seconds, "median_after_first": statistics.median(seconds[1:]),
            "wall_seconds": time.time() - t0}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--format", default="shakespeare")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--clients", type=int, nargs="+", default=[10, 50])
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    from keyboard_lm.federated import remote

    ports = [remote.free_port(), remote.free_port()]
    procs = [remote.start_worker(port) for port in ports]
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="workers_bench_") as tmp:
            for k in args.clients:
                for name, workers in (("local context", None), ("1 worker", f"127.0.0.1:{ports[0]}"),
                                      ("2 workers", ",".join(f"127.0.0.1:{p}" for p in ports))):
                    results[f"{k}/{name}"] = run(os.path.join(tmp, f"{k}_{len(results)}"), args, k, workers)
                    print(f"K={k} {name}: {results[f'{k}/{name}']['median_after_first']:.2f} s/round", flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    lines = ["| clients per round | local context s/round | 1 worker s/round | 2 workers s/round | "
             "1 worker / local | 2 workers / local |", "|---|---|---|---|---|---|"]
    for k in args.clients:
        a, b, c = (results[f"{k}/{n}"]["median_after_first"] for n in ("local context", "1 worker", "2 workers"))
        lines.append(f"| {k} | {a:.2f} | {b:.2f} | {c:.2f} | {b / a:.2f} | {c / a:.2f} |")
    lines += ["", f"Paper-size CIFG, FedAvg, Tiny Shakespeare by role, median of rounds 2-{args.rounds}; "
              "workers on this machine (they share its cores with the driver)."]
    _report.write("workers_benchmark", {"results": results, "rounds": args.rounds}, "\n".join(lines), args.out)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

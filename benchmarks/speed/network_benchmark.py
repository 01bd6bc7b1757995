"""Seconds and bytes per federated round across a shaped network, against the cost model for N machines.

The driver and two `keyboard-lm worker`s run on three hosts that are network
namespaces on this machine, joined by a bridge (`netns.py`); every link is
limited by a tbf qdisc in each direction, at each bandwidth of --rates. For
each bandwidth, one `keyboard-lm train --workers` run with plain uploads and
one with `--compression`, train's defaults otherwise (the embedded corpus,
10 clients per round, FedAvgM). Round times come from metrics.csv; the bytes
of a round from the switch port counters of each link (both directions),
read when each round's metrics row appears. Each figure is the median over
rounds 2 to R-1: the first round traces, the last evaluates.

Delay cannot be added: the kernel here has no netem qdisc, so the round trip
is that of a veth pair (tens of microseconds), and only bandwidth is shaped.
All three hosts share this machine's cores, so client training on the two
workers is not parallel as on two machines.

The prediction is docs/distributed.md's cost model,
T = t_driver + c * ceil(K / N) + N * (m + b / B), with c and b scaled from
the paper-size model's 1.4M parameters to this run's, as the model says.

    python benchmarks/speed/network_benchmark.py     # as root: it makes network namespaces
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import netns, result_file  # noqa: E402
from keyboard_lm.federated import worker_relay  # noqa: E402

PORT = 8001
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
CLI = [sys.executable, "-m", "keyboard_lm.cli"]

#: docs/distributed.md, "Cost model for N machines", fitted at paper size (1.4M parameters, 11.3 MB state).
MODEL = {"t_driver": 1.0, "c": 0.44, "m": 0.6, "b": 23e6, "params": 1.4e6}


def predict(params: int, clients: int, workers: int, rate_mbit: float) -> dict:
    """The cost model's seconds and driver-link bytes per round; c and b scale with the parameters."""
    scale = params / MODEL["params"]
    c, b = MODEL["c"] * scale, MODEL["b"] * scale
    bandwidth = rate_mbit * 1e6 / 8
    seconds = MODEL["t_driver"] + c * math.ceil(clients / workers) + workers * (MODEL["m"] + b / bandwidth)
    return {"seconds": seconds, "bytes": workers * b, "c": c, "b": b, "b_over_B": b / bandwidth}


def _rows(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def train(net: netns.Network, out: str, flag: str, args, extra: list[str]) -> dict:
    """One `train` run in the driver's namespace; the link counters when each metrics row appeared."""
    cmd = [*CLI, "train", "--out", out, "--rounds", str(args.rounds), "--clients-per-round", str(args.clients),
           "--eval-every", str(10 * args.rounds), "--workers", flag, "--no-phrases", *extra]
    proc = subprocess.Popen(net.command(0, cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=ENV)
    metrics = os.path.join(out, "metrics.csv")
    marks = [(0, time.time(), net.counters())]
    try:
        while proc.poll() is None:
            rows = len(_rows(metrics))
            if rows > marks[-1][0]:
                marks.append((rows, time.time(), net.counters()))
            time.sleep(0.1)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    rows = _rows(metrics)
    # Bytes of round r: from the moment row r-1 appeared to the moment row r did (rounds 2 .. R-1).
    per_round = []
    for (r0, _, c0), (r1, _, c1) in zip(marks, marks[1:]):
        if r1 == r0 + 1 and 2 <= r1 < args.rounds:
            per_round.append({"round": r1, **{str(h): [c1[h][0] - c0[h][0], c1[h][1] - c0[h][1]] for h in c1}})
    seconds = [float(r["seconds"]) for r in rows]
    return {"round_seconds": seconds, "seconds": statistics.median(seconds[1:-1]),
            "bytes_per_round": per_round, "driver_bytes": statistics.median(sum(r["0"]) for r in per_round),
            "driver_sent": statistics.median(r["0"][0] for r in per_round),
            "driver_received": statistics.median(r["0"][1] for r in per_round),
            "upload_bytes_per_client": float(rows[-1]["upload_bytes_per_client"] or "nan"),
            "train_loss": [float(r["train_loss"]) for r in rows]}


def parameters(run_dir: str) -> int:
    import numpy as np

    with np.load(os.path.join(run_dir, "weights.npz")) as weights:
        return int(sum(weights[k].size for k in weights.files))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rates", type=float, nargs="+", default=[100.0, 1000.0], help="Mbit/s per link")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--out", default=result_file.results_dir("speed"))
    args = p.parse_args()
    why = netns.unavailable()
    if why is not None:
        raise SystemExit(f"network_benchmark: {why}")
    import platform

    variants = (("plain", []), ("compression", ["--compression"]))
    results, params = {}, None
    with netns.Network(3) as net, tempfile.TemporaryDirectory(prefix="network_bench_") as tmp:
        workers = []
        try:
            for i in (1, 2):
                argv = [*CLI, "worker", "--bind", net.address(i), "--port", str(PORT), "--insecure"]
                workers.append(subprocess.Popen(net.command(i, argv), stdout=subprocess.PIPE,
                                                stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=ENV))
            for w in workers:
                if "TFF worker on" not in w.stdout.readline():
                    raise SystemExit("network_benchmark: a worker did not start")
            flag = ",".join(f"{net.address(i)}:{PORT}" for i in (1, 2))
            for rate in args.rates:
                net.shape(rate)
                for name, extra in variants:
                    out = os.path.join(tmp, f"{rate:g}_{name}")
                    r = results[f"{rate:g}/{name}"] = train(net, out, flag, args, extra)
                    params = params or parameters(out)
                    r.update(rate_mbit=rate, uploads=name, model=predict(params, args.clients, 2, rate))
                    print(f"{rate:g} Mbit/s {name}: {r['seconds']:.2f} s/round (model {r['model']['seconds']:.2f}), "
                          f"{r['driver_bytes'] / 1e6:.2f} MB/round at the driver "
                          f"(model {r['model']['bytes'] / 1e6:.2f})", flush=True)
        finally:
            for w in workers:
                worker_relay.stop_process(w, timeout=20)
    lines = ["| bandwidth per link | RTT | clients per round | workers | uploads | s per round | model s | "
             "measured / model | MB per round at the driver (both directions) | model MB | measured / model |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        m = r["model"]
        lines.append(f"| {r['rate_mbit']:g} Mbit/s | not shaped | {args.clients} | 2 | {r['uploads']} | "
                     f"{r['seconds']:.2f} | {m['seconds']:.2f} | {r['seconds'] / m['seconds']:.2f} | "
                     f"{r['driver_bytes'] / 1e6:.2f} | {m['bytes'] / 1e6:.2f} | {r['driver_bytes'] / m['bytes']:.2f} |")
    low, high = min(args.rates), max(args.rates)
    # Each round TFF merges the partial aggregates on one of the workers (the one that finished last).
    lines += ["", f"Where the bytes go, plain uploads at {high:g} Mbit/s, MB received / sent by each host:", "",
              "| round | driver | worker 1 | worker 2 |", "|---|---|---|---|"]
    for r in results[f"{high:g}/plain"]["bytes_per_round"]:
        cells = [f"{r[h][1] / 1e6:.2f} / {r[h][0] / 1e6:.2f}" for h in "012"]
        lines.append(f"| {r['round']} | " + " | ".join(cells) + " |")
    slower = results[f"{low:g}/plain"]["seconds"] - results[f"{high:g}/plain"]["seconds"]
    moved = results[f"{low:g}/plain"]["driver_bytes"] * (8 / (low * 1e6) - 8 / (high * 1e6))
    lines += ["", f"Plain uploads, {low:g} against {high:g} Mbit/s: {slower:.2f} s more per round; the measured "
              f"bytes at the driver through its link at each rate, one direction after the other, account for "
              f"{moved:.2f} s."]
    ratios = {f"{rate:g}": results[f"{rate:g}/compression"]["driver_bytes"] / results[f"{rate:g}/plain"]["driver_bytes"]
              for rate in args.rates}
    upload = {name: results[f"{high:g}/{name}"]["upload_bytes_per_client"] for name, _ in variants}
    lines += ["", "Compressed / plain bytes per round at the driver: "
              + ", ".join(f"{v:.3f} at {k} Mbit/s" for k, v in ratios.items())
              + f"; a client's upload to its worker (metrics.csv, inside the worker's host): "
              f"{upload['compression']:,.0f} / {upload['plain']:,.0f} B = "
              f"{upload['compression'] / upload['plain']:.3f}.", "",
              f"train's defaults on the embedded corpus ({params:,} parameters), {args.rounds} rounds per run, "
              f"medians of rounds 2-{args.rounds - 1}. Three namespaces on one machine ({os.cpu_count()} cores, "
              f"{platform.machine()}) joined by a bridge; each link shaped by tbf in each direction; RTT not "
              f"shaped (no netem qdisc in this kernel). Model: docs/distributed.md, c and b scaled by "
              f"{params:,} / 1.4M parameters."]
    result_file.write("network_benchmark", {"parameters": params, "rounds": args.rounds, "clients": args.clients,
                                        "workers": 2, "cost_model": MODEL, "results": results,
                                        "compressed_over_plain_bytes": ratios, "slower_seconds": slower,
                                        "bytes_over_bandwidth_seconds": moved}, "\n".join(lines), args.out,
                      seeds="0 (every run is `keyboard-lm train --workers` with train's defaults, seed 0)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

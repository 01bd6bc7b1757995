"""Seconds per federated round on TFF workers, side by side.

Part 1, rounds: each configuration is one `keyboard-lm train` run
(paper-size CIFG, Tiny Shakespeare by role, FedAvgM: train's default) of --rounds rounds: TFF's
local context, 1 and 2 `keyboard-lm worker`s, each with the clients' data sent
by the driver every round and with `--worker-data` (the workers read it
themselves). The figure is the median of the per-round `seconds` in
metrics.csv after the first round (which traces and compiles).

Part 2, transport: in one process per configuration, a round's `next` and a
round that moves the same arguments and results but trains nothing (state
and client data in, the model broadcast to every client and its mean back),
alternated over the same sampled clients. Their ratio is the share of a
round spent on serialization, transport and TFF's dispatch.

Workers run on this machine, so 2 workers share its cores with the driver:
the comparison shows the runtime's overhead, not a speed-up. The cost model
for N machines in docs/distributed.md is fitted to these numbers.

    python benchmarks/speed/workers_benchmark.py --data ../shared/data/tinyshakespeare/input.txt
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
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import result_file  # noqa: E402


def run(out: str, args, clients: int, workers: str | None, worker_data: str | None) -> dict:
    cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", "--out", out, "--data", args.data, "--format",
           args.format, "--clients-per-round", str(clients), "--rounds", str(args.rounds),
           "--eval-every", str(10 * args.rounds), "--dropout", "0", "--no-phrases"]
    if workers:
        cmd += ["--workers", workers]
    if worker_data:
        cmd += ["--worker-data", worker_data]
    t0 = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
        seconds = [float(r["seconds"]) for r in csv.DictReader(f)]
    return {"round_seconds": seconds, "median_after_first": statistics.median(seconds[1:]),
            "wall_seconds": time.time() - t0}


def probe(args) -> int:
    """Part 2 in this process (the execution context is process-wide): prints one JSON line."""
    import json

    import numpy as np
    import tensorflow as tf

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.preprocessing import encode_clients
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.federated.distributed import remote
    from keyboard_lm.federated.distributed import worker_data as wd
    from keyboard_lm.federated.client_data import example_client_data
    from keyboard_lm.federated.process import build_process
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.runtime import import_tff
    from keyboard_lm.federated.rounds import dataset_seed, round_datasets, sample_clients
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.text.vocabulary import Vocabulary

    tff = import_tff()
    corpus = load_corpus(args.data, args.format)
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig())
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), 10_000)
    data_config = ClientDataConfig()
    encoded = encode_clients({c: corpus.clients[c] for c in train_ids}, vocab, data_config.max_seq_len)
    trainable = [c for c in train_ids if len(encoded[c][0])]
    examples = example_client_data({c: encoded[c] for c in trainable})
    spec = (tf.TensorSpec([None, data_config.max_seq_len], tf.int32),) * 2
    config = FederatedConfig(clients_per_round=args.probe_clients, dropout=0.0, weight_average=0.0)
    process = build_process(ModelConfig("cifg", len(vocab)), config, spec, metrics=False)
    manifest = None
    if args.worker_data:
        manifest = wd.write_shards(args.worker_data, {c: encoded[c] for c in trainable}, vocab.fingerprint(),
                                   data_config.max_seq_len, corpus.fingerprint(), log=lambda *_: None)
        process = wd.compose(process, data_config)
    remote.set_remote_context(remote.parse_workers(args.probe))
    state_type, data_type = process.next.type_signature.parameter
    weights_type = process.get_model_weights.type_signature.result

    @tff.tensorflow.computation(weights_type, data_type.member)
    def client_echo(weights, data):
        return weights.trainable  # the client's data arrives and is not read

    @tff.federated_computation(state_type, data_type)
    def move_only(state, data):
        weights = tff.federated_map(process.get_model_weights, state)
        return tff.federated_mean(tff.federated_map(client_echo, (tff.federated_broadcast(weights), data)))

    state = process.initialize()
    times = {"next": [], "move": []}
    arg_bytes = None
    for r in range(args.probe_rounds + 1):
        sampled = sample_clients(trainable, args.probe_clients, 0, r + 1)
        if manifest is not None:
            data = wd.round_arguments(manifest, os.path.abspath(args.worker_data), sampled,
                                      [dataset_seed(0, r + 1, i) for i in range(len(sampled))])
        else:
            data, _ = round_datasets(examples, sampled, data_config, 0, r + 1, log=lambda *_: None)
        if arg_bytes is None:
            arg_bytes = sum(tff.framework.serialize_value(d, data_type.member)[0].ByteSize() for d in data)
        t0 = time.perf_counter()
        move_only(state, data)
        t1 = time.perf_counter()
        state = process.next(state, data).state
        t2 = time.perf_counter()
        if r:  # round 0 traces and compiles
            times["move"].append(t1 - t0)
            times["next"].append(t2 - t1)
    state_bytes = tff.framework.serialize_value(state, state_type.member)[0].ByteSize()
    print(json.dumps({"next": float(np.median(times["next"])), "move": float(np.median(times["move"])),
                      "times": times, "client_data_bytes": arg_bytes, "state_bytes": state_bytes}))
    return 0


def run_probe(args, clients: int, workers: str, worker_data: str | None) -> dict:
    import json

    cmd = [sys.executable, os.path.abspath(__file__), "--data", args.data, "--format", args.format,
           "--probe", workers, "--probe-clients", str(clients), "--probe-rounds", str(args.probe_rounds)]
    if worker_data:
        cmd += ["--worker-data", worker_data]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


CONFIGS = (("local context", 0, False), ("local context, worker data", 0, True), ("1 worker", 1, False),
           ("1 worker, worker data", 1, True), ("2 workers", 2, False), ("2 workers, worker data", 2, True))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--format", default="shakespeare")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--clients", type=int, nargs="+", default=[10, 50])
    p.add_argument("--probe-rounds", type=int, default=3)
    p.add_argument("--out", default=result_file.results_dir("speed"))
    p.add_argument("--probe", help=argparse.SUPPRESS)  # internal: run part 2 on these workers
    p.add_argument("--probe-clients", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-data", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.probe:
        return probe(args)
    import platform

    from keyboard_lm.federated import worker_process
    from keyboard_lm.federated.distributed import remote

    ports = [worker_process.free_port(), worker_process.free_port()]
    procs = [remote.start_worker(port) for port in ports]
    names = {1: f"127.0.0.1:{ports[0]}", 2: ",".join(f"127.0.0.1:{p}" for p in ports)}
    results, transport = {}, {}
    try:
        with tempfile.TemporaryDirectory(prefix="workers_bench_") as tmp:
            shards = os.path.join(tmp, "shards")
            for k in args.clients:
                for name, n, local_data in CONFIGS:
                    key = f"{k}/{name}"
                    results[key] = run(os.path.join(tmp, f"{k}_{len(results)}"), args, k, names.get(n),
                                       shards if local_data else None)
                    print(f"K={k} {name}: {results[key]['median_after_first']:.2f} s/round", flush=True)
            for k in args.clients:
                for name, n, local_data in CONFIGS:
                    if n:
                        key = f"{k}/{name}"
                        transport[key] = run_probe(args, k, names[n], shards if local_data else None)
                        t = transport[key]
                        print(f"K={k} {name}: next {t['next']:.2f} s, moving only {t['move']:.2f} s "
                              f"({t['move'] / t['next']:.0%}); client data {t['client_data_bytes'] / 1e6:.2f} MB",
                              flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    lines = ["### Seconds per round", "",
             "| clients per round | " + " | ".join(name for name, _, _ in CONFIGS) + " |",
             "|---|" + "---|" * len(CONFIGS)]
    for k in args.clients:
        base = results[f"{k}/local context"]["median_after_first"]
        cells = [f"{results[f'{k}/{name}']['median_after_first']:.2f}"
                 + ("" if name == "local context" else f" ({results[f'{k}/{name}']['median_after_first'] / base:.2f}x)")
                 for name, _, _ in CONFIGS]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "### Share of a round spent moving its arguments and results", "",
              "| clients per round | configuration | round s | moving only s | share | client data sent per round |",
              "|---|---|---|---|---|---|"]
    for key, t in transport.items():
        k, name = key.split("/", 1)
        lines.append(f"| {k} | {name} | {t['next']:.2f} | {t['move']:.2f} | {t['move'] / t['next']:.0%} | "
                     f"{t['client_data_bytes'] / 1e6:.2f} MB |")
    state_mb = next(iter(transport.values()))["state_bytes"] / 1e6 if transport else float("nan")
    lines += ["", f"Paper-size CIFG (server state {state_mb:.1f} MB serialized), FedAvgM (train's default), Tiny Shakespeare by "
              f"role; rounds: median of rounds 2-{args.rounds}; transport: median of {args.probe_rounds} rounds. "
              f"Workers on this machine ({os.cpu_count()} cores, {platform.machine()}), sharing its cores with "
              f"the driver; {time.strftime('%Y-%m-%d')}."]
    result_file.write("workers_benchmark", {"results": results, "transport": transport, "rounds": args.rounds},
                  "\n".join(lines), args.out,
                      seeds="0 (fixed in the script: the default split and the clients sampled each round, "
                            "`sample_clients(..., seed 0, round)`)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

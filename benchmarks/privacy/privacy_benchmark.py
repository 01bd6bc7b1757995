"""Privacy-utility and memorization benchmark (DP-FedAvg and DP-FTRL, canary exposure).

Each row is one `keyboard-lm audit canaries` run on Tiny Shakespeare with one
client per speech (`--partition record`, 6,387 training "users"; a user is a
speech, not a speaker): held-out recall@3 and perplexity, eps at the run's
delta, the noise-batch ratio z*C/K and the exposure of the planted canaries.
eps = inf is the same unweighted, clipped, Poisson-sampled training with
noise multiplier 0.

    python benchmarks/privacy/privacy_benchmark.py --data ../shared/data/tinyshakespeare/input.txt \\
        --out runs/privacy --jobs 2            # launch (rows run in order, --jobs at a time)
    python benchmarks/privacy/privacy_benchmark.py --out runs/privacy --collect   # table from finished rows

A row's run checkpoints every round: after a session ends, the same launch with
--resume skips the finished rows and continues the others (`audit canaries --resume`).

The table goes to benchmarks/results/privacy/privacy_benchmark.{md,json}.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common import result_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "privacy")

SGD = ["--server-optimizer", "sgd", "--server-momentum", "0"]
NESTEROV = ["--server-optimizer", "nesterov"]
ADAPTIVE = ["--dp-clip-quantile", "0.5"]
FIXED = ["--dp-clip", "1.0"]

#: (name, model, extra flags); in priority order.  DP-FedAvg rows use the
#: non-DP default server (Nesterov 0.9) with the clip at the median update norm
#: (adaptive, Andrew et al. 2021): a speech's update is ~0.02 at
#: initialization and ~0.8 after 40 rounds, so a fixed clip of 1 adds noise for
#: 50x the signal early on.  DP-FTRL is Kairouz et al.'s DP-FTRLM (heavy-ball
#: 0.9) with a fixed clip (the tree takes no adaptive clip).  The ``_sgd`` and
#: ``_nesterov`` rows (fixed clip 1) are the first attempts, kept as measured:
#: with server SGD nothing beyond unigram counts is learnt in 40 rounds, and
#: Nesterov with a fixed clip of 1 diverged at eps 10.
ROWS = [
    ("cifg_inf", "cifg", ["--dp", "fedavg", "--dp-noise-multiplier", "0", *ADAPTIVE, *NESTEROV]),
    ("cifg_fedavg_eps10", "cifg", ["--dp", "fedavg", "--dp-epsilon", "10", *ADAPTIVE, *NESTEROV]),
    ("cifg_ftrl_eps10", "cifg", ["--dp", "ftrl", "--dp-epsilon", "10", "--dp-clip", "0.1"]),
    ("cifg_fedavg_eps1", "cifg", ["--dp", "fedavg", "--dp-epsilon", "1", *ADAPTIVE, *NESTEROV]),
    ("sicifg_inf", "si-cifg", ["--dp", "fedavg", "--dp-noise-multiplier", "0", *ADAPTIVE, *NESTEROV]),
    ("sicifg_fedavg_eps10", "si-cifg", ["--dp", "fedavg", "--dp-epsilon", "10", *ADAPTIVE, *NESTEROV]),
    ("cifg_fedavg_eps5", "cifg", ["--dp", "fedavg", "--dp-epsilon", "5", *ADAPTIVE, *NESTEROV]),
    ("cifg_ftrl_eps1", "cifg", ["--dp", "ftrl", "--dp-epsilon", "1", "--dp-clip", "0.1"]),
    ("cifg_inf_sgd", "cifg", ["--dp", "fedavg", "--dp-noise-multiplier", "0", *FIXED, *SGD]),
    ("cifg_fedavg_eps10_sgd", "cifg", ["--dp", "fedavg", "--dp-epsilon", "10", *FIXED, *SGD]),
    ("cifg_inf_nesterov", "cifg", ["--dp", "fedavg", "--dp-noise-multiplier", "0", *FIXED, *NESTEROV]),
    ("cifg_fedavg_eps10_nesterov", "cifg", ["--dp", "fedavg", "--dp-epsilon", "10", *FIXED, *NESTEROV]),
]

#: The same rows warm-started from the shipped base model (pretrained on public text, as Ro et al. start
#: from C4), with 20 canaries planted 16 times and 20 controls, so each condition has at least 10 trained
#: canaries; ``--rows base`` runs these instead (``--out`` should then be another directory).
BASE = ["--init-from", "base", "--canaries", "20", "--canary-repeats", "16", "--controls", "20"]
BASE_ROWS = [
    ("base_inf", "cifg", ["--dp", "fedavg", "--dp-noise-multiplier", "0", *ADAPTIVE, *NESTEROV, *BASE]),
    ("base_fedavg_eps10", "cifg", ["--dp", "fedavg", "--dp-epsilon", "10", *ADAPTIVE, *NESTEROV, *BASE]),
    ("base_fedavg_eps1", "cifg", ["--dp", "fedavg", "--dp-epsilon", "1", *ADAPTIVE, *NESTEROV, *BASE]),
    ("base_ftrl_inf", "cifg", ["--dp", "ftrl", "--dp-noise-multiplier", "0", "--dp-clip", "0.1", *BASE]),
    # the audit's positive control: DP-FTRL's schedule and server, neither noise nor a clip that binds (a speech's
    # update norm is about 1; 1,000 never clips): what the model memorizes without any privacy mechanism
    ("base_ftrl_unclipped", "cifg", ["--dp", "ftrl", "--dp-noise-multiplier", "0", "--dp-clip", "1000", *BASE]),
    ("base_ftrl_eps10", "cifg", ["--dp", "ftrl", "--dp-epsilon", "10", "--dp-clip", "0.1", *BASE]),
    ("base_ftrl_eps1", "cifg", ["--dp", "ftrl", "--dp-epsilon", "1", "--dp-clip", "0.1", *BASE]),
    # BLT-DP-FTRL (McMahan, Xu and Zhang 2024): DP-FTRL's schedule, clip and server, the tree's noise replaced
    ("base_blt_eps10", "cifg", ["--dp", "blt", "--dp-epsilon", "10", "--dp-clip", "0.1", *BASE]),
    ("base_blt_eps1", "cifg", ["--dp", "blt", "--dp-epsilon", "1", "--dp-clip", "0.1", *BASE]),
]


def command(data: str, out: str, name: str, model: str, extra: list[str], rounds: int, k: int,
            vocab: str | None = None):
    """``vocab``: the base rows' ``--init-vocab`` (None for the rows from random weights)."""
    return [sys.executable, "-m", "keyboard_lm.cli", "audit", "canaries", "--data", data, "--format", "shakespeare",
            "--partition", "record", "--model", model, "--rounds", str(rounds), "--eval-every", str(rounds // 2),
            "--clients-per-round", str(k), "--out", os.path.join(out, name),
            "--overwrite", *extra, *(["--init-vocab", vocab] if vocab else [])]


def _audit_counts(extra: list[str], args) -> list[str]:
    """A base row's flags with the canaries of --canaries, --canary-repeats, --controls, --canary-words,
    --canary-slots, --canary-clients and --canary-seed (the audit's regime and draw; BASE's 20, 16 and 20, the
    default format, one client per canary and audit canaries' seed 0 when not given)."""
    out = list(extra)
    for flag in ("--canaries", "--canary-repeats", "--controls", "--canary-words", "--canary-slots",
                 "--canary-clients", "--canary-seed"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None:
            continue
        if flag in out:
            out[out.index(flag) + 1] = str(value)
        else:
            out += [flag, str(value)]
    return out


def row_command(args, name: str, model: str, extra: list[str]) -> list[str] | None:
    """The command of one row: a fresh run, with --resume the continuation of an interrupted one, or None for a
    row that --resume finds finished."""
    run_dir = os.path.join(args.out, name)
    if args.resume and os.path.exists(os.path.join(run_dir, "audit.json")):
        return None
    if args.resume and os.path.isdir(os.path.join(run_dir, "checkpoints")):
        # the run's own settings and canaries, from its run.json, up to its own rounds
        return [sys.executable, "-m", "keyboard_lm.cli", "audit", "canaries", "--out", run_dir, "--resume"]
    if args.rows == "base":
        extra = _audit_counts(extra, args)
    return command(args.data, args.out, name, model, extra, args.rounds, args.clients_per_round,
                   args.vocab if args.rows == "base" else None)


def launch(args) -> None:
    os.makedirs(args.out, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    table = BASE_ROWS if args.rows == "base" else ROWS
    rows = [r for r in table if not args.only or r[0] in args.only.split(",")]
    if not args.only:
        rows = [r for r in rows if not r[0].endswith(("_sgd", "_nesterov"))]
    running = []
    for name, model, extra in rows:
        while len(running) >= args.jobs:
            running = [p for p in running if p.poll() is None]
            time.sleep(5)
        cmd = row_command(args, name, model, extra)
        if cmd is None:
            print(f"{name}: finished already", flush=True)
            continue
        log = open(os.path.join(args.out, f"{name}.log"), "a" if args.resume else "w", encoding="utf-8")
        print(" ".join(cmd), flush=True)
        running.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env))
    for p in running:
        p.wait()


def _elapsed(metrics_csv: str):
    """Seconds of training of a finished run: the last round's elapsed time in its metrics.csv."""
    try:
        with open(metrics_csv, encoding="utf-8") as f:
            last = list(csv.DictReader(f))[-1]
        return float(last["elapsed_seconds"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def collect(args) -> None:
    from keyboard_lm.models.run_dir import RunRecord

    rows = []
    for name, model, _ in (BASE_ROWS if args.rows == "base" else ROWS):
        path = os.path.join(args.out, name, "audit.json")
        log = os.path.join(args.out, f"{name}.log")
        if not os.path.exists(path):
            diverged = ""
            if os.path.exists(log):
                with open(log, encoding="utf-8") as f:
                    diverged = next((line.strip() for line in f if "training diverged" in line), "")
            if diverged:
                rows.append({"row": name, "model": model, "diverged": diverged.split("error: ")[-1]})
            continue
        with open(path, encoding="utf-8") as f:
            audit = json.load(f)
        run = RunRecord.read(os.path.join(args.out, name))
        dp, metrics = audit["differential_privacy"], audit["final_metrics"] or {}
        planted = [r for r in audit["rows"] if r["repeats"] > 0]
        trained = [r for r in planted if r.get("participations")]
        controls = [r for r in audit["rows"] if r["repeats"] == 0]
        stat = audit.get("statistic", "exposure")
        settings = run.audit or {}  # the canary flags the run was audited with
        rows.append({
            "row": name, "model": model, "mechanism": dp["mechanism"] if dp["noise_multiplier"] else "none (z=0)",
            "server": ("heavy-ball 0.9" if dp["mechanism"] in ("ftrl", "blt") else run.federated["server_optimizer"]),
            "clip": dp["clip"],
            "epsilon": dp["epsilon"], "delta": dp["delta"], "noise_multiplier": dp["noise_multiplier"],
            # Runs made before run.json left it out claimed z*1/K for an adaptive clip.
            "noise_batch_ratio": None if dp["clip"] == "adaptive" else dp["noise_batch_ratio"],
            "rho": dp.get("rho"),
            "clients_per_round": dp["clients_per_round"], "population": dp["population"], "rounds": dp["rounds"],
            "recall_at_3": metrics.get("recall_at_3"), "perplexity": metrics.get("perplexity"),
            "max_exposure_trained": max((r["exposure"] for r in trained), default=None),
            "mean_exposure_trained": _mean(r["exposure"] for r in trained),
            "canaries_trained": len(trained), "canaries_planted": len(planted),
            "clients_per_canary": settings.get("clients_per_canary", 1), "canary_seed": settings.get("seed", 0),
            "mean_exposure_controls": _mean(r["exposure"] for r in controls),
            "max_exposure_controls": max((r["exposure"] for r in controls), default=None),
            "controls": len(controls),
            # the audit's statistic: exposure calibrated against the run's start when it has one (from a base)
            "statistic": stat,
            "mean_calibrated_trained": _mean(r.get("calibrated_exposure") for r in trained),
            "mean_calibrated_controls": _mean(r.get("calibrated_exposure") for r in controls),
            # canaries the model learnt beyond chance: trained, scored above every never-planted control
            "trained_above_controls": (sum(r[stat] > max(c[stat] for c in controls) for r in trained)
                                       if controls else None),
            "log2_R": audit["rows"][0]["max_exposure"] if audit["rows"] else None,
            # the audit's power (trained canaries against controls) and the one-run lower bound on eps
            "power_p": (audit.get("power") or {}).get("p_value"),
            "one_run_epsilon": (audit.get("one_run") or {}).get("epsilon_lower_bound"),
            "seconds": _elapsed(os.path.join(args.out, name, "metrics.csv")),
        })
    fmt = lambda v, f: "-" if v is None else (v if isinstance(v, str) else format(v, f))  # noqa: E731
    lines = ["| row | model | mechanism | server | clip | eps | z | z*C/K (- : adaptive C) | recall@3 | perplexity | canaries trained | "
             "max / mean exposure (trained) | mean / max exposure (controls) | calibrated exposure, mean: trained / "
             "controls | statistic | trained above every control | trained vs controls, Mann-Whitney p | "
             "one-run eps >= |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "diverged" in r:
            lines.append(f"| {r['row']} | {r['model']} | {r['diverged']} |" + " |" * 15)
            continue
        lines.append(f"| {r['row']} | {r['model']} | {r['mechanism']} | {r['server']} | {r['clip']} | "
                     f"{fmt(r['epsilon'], '.3g')} | "
                     f"{r['noise_multiplier']:.3g} | {fmt(r['noise_batch_ratio'], '.3g')} | {fmt(r['recall_at_3'], '.4f')} | "
                     f"{fmt(r['perplexity'], '.1f')} | {r['canaries_trained']}/{r['canaries_planted']} | "
                     f"{fmt(r['max_exposure_trained'], '.2f')} / {fmt(r['mean_exposure_trained'], '.2f')} | "
                     f"{fmt(r['mean_exposure_controls'], '.2f')} / {fmt(r.get('max_exposure_controls'), '.2f')} "
                     f"({r.get('controls', '-')}) | {fmt(r.get('mean_calibrated_trained'), '.2f')} / "
                     f"{fmt(r.get('mean_calibrated_controls'), '.2f')} | {r.get('statistic', 'exposure')} | "
                     f"{fmt(r.get('trained_above_controls'), 'd')} | "
                     f"{fmt(r.get('power_p'), '.3g')} | {fmt(r.get('one_run_epsilon'), '.2f')} |")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    done = [r for r in rows if "diverged" not in r]
    head = ((f"Measured {datetime.date.today()} on {machine}; {args.note}.\n"
            f"delta = {done[0]['delta']:.3g}, population {done[0]['population']:,} speeches, "
            f"{done[0]['clients_per_round']} per round, {done[0]['rounds']} rounds, log2|R| = "
            f"{fmt(done[0]['log2_R'], '.2f')} bits, each canary in {done[0]['clients_per_canary']} "
            f"client{'s' if done[0]['clients_per_canary'] > 1 else ''}, canary seed {done[0]['canary_seed']}.\n\n")
            if done else "no finished rows\n")
    result_file.write(args.name, {"rows": rows}, head + "\n".join(lines), RESULTS, seeds=audit_seeds(done))
    print(head + "\n".join(lines))


def audit_seeds(rows: list[dict]) -> str:
    """The seeds line of an audit table: the launch passes no --seed to `audit canaries` (its default, 0, trains
    every row) and names the canaries' draw by --canary-seed; the DP noise itself is not seeded."""
    canaries = sorted({r.get("canary_seed", 0) for r in rows})
    return (f"training 0 (`audit canaries`' --seed default), canaries {', '.join(map(str, canaries)) or '-'} "
            "(--canary-seed); the DP noise is not seeded")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="Tiny Shakespeare input.txt (to launch)")
    p.add_argument("--out", required=True, help="directory of the runs")
    p.add_argument("--jobs", type=int, default=1, help="rows trained at a time (1)")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--clients-per-round", type=int, default=100)
    p.add_argument("--only", help="comma-separated row names")
    p.add_argument("--collect", action="store_true", help="only write the table of finished rows")
    p.add_argument("--resume", action="store_true", help="skip finished rows and continue interrupted ones from "
                                                         "their checkpoints (rows that never started start)")
    p.add_argument("--note", default="two rows at a time on the 2 cores",
                   help="how the rows shared the machine, for the table's head (two rows at a time on the 2 cores)")
    p.add_argument("--rows", choices=("scratch", "base"), default="scratch",
                   help="scratch: the rows from random weights (default); base: the same from the base model")
    p.add_argument("--canaries", type=int, help="--rows base: canaries planted (20)")
    p.add_argument("--canary-repeats", type=int, help="--rows base: copies of each canary (16)")
    p.add_argument("--controls", type=int, help="--rows base: never-planted controls (20)")
    p.add_argument("--canary-words", help="--rows base: the canaries' alphabet, comma-separated (audit canaries' "
                                          "ten nouns)")
    p.add_argument("--canary-slots", type=int, help="--rows base: secret words per canary (4)")
    p.add_argument("--canary-clients", type=int, help="--rows base: training speeches that hold each canary, "
                                                      "--canary-repeats copies in each (1)")
    p.add_argument("--canary-seed", type=int, help="--rows base: the canaries' draw and placement (0): another "
                                                   "seed repeats the audit on other canaries in other speeches")
    p.add_argument("--vocab", choices=("target", "base"), default="target",
                   help="--rows base: the vocabulary, built on the training speeches (target, as the base tables "
                        "were measured: outside the DP guarantee) or the base's public one (base, train's default "
                        "under --dp) (target)")
    p.add_argument("--name", default=None, help="result file name (privacy_benchmark, or privacy_base for "
                                                 "--rows base)")
    args = p.parse_args()
    args.name = args.name or ("privacy_base" if args.rows == "base" else "privacy_benchmark")
    if not args.collect:
        if not args.data:
            p.error("--data is needed to launch runs")
        launch(args)
    collect(args)


if __name__ == "__main__":
    main()

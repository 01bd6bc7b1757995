"""Ji et al. 2019's Table II in their protocol: FedAtt against FedAvg and FedSGD on an IID re-partition.

Ji et al. ("Learning private neural language modeling with attentive aggregation") deal WikiText-2 and PTB
IID to 100 clients and train a tied GRU of 300 units for 50 rounds with 10% or 50% of the clients a round;
their public code's clients run SGD with momentum 0.5 at lr 0.01 for 5 local epochs of batches of 10, the
attention takes the spectral norm of each layer's distance, the server steps by eps 1.2 and adds Gaussian
noise of sd 0.001 to the global model every round (eq. 6; FedAvg's too), and the model of the best
validation round is the one reported, as perplexity 2^mean(-log2 p) over every target. Their Table II:
FedAtt 91.82 vs FedAvg 95.27 on WikiText-2, 115.43 vs 138.13 on PTB (C = 0.1).

Here the long-form text is Tiny Shakespeare dealt IID to 100 clients (``--partition iid``; 10 held out, 9
of the 90 training clients for validation). Every run's validation clients pick its round: the evaluation
with the lowest validation loss, and the held-out perplexity (exp of the mean loss over every target: the
same number as Ji's 2^mean(-log2 p)) there is the result. Three seeds per (algorithm, fraction).

    python benchmarks/ji_table2/ji_table2.py                 # every run, resumable; then the report
    python benchmarks/ji_table2/ji_table2.py --fractions 0.1 --seeds 0   # one lane (another: --seeds 1,2)
    python benchmarks/ji_table2/ji_table2.py --fractions 0.1 --algorithms "FedAvg 1.2"  # the step-size control
    python benchmarks/ji_table2/ji_table2.py --collect
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file, run_records  # noqa: E402
from benchmarks.common.corpora import SHAKESPEARE  # noqa: E402
from benchmarks.common.run_records import curve, diverged, diverged_at, is_result, settled, train_recorded  # noqa: E402

CORPUS = ["--data", SHAKESPEARE, "--format", "shakespeare", "--partition", "iid", "--num-clients", "100"]
#: Ji et al.'s model and client: a tied GRU of 300, SGD with momentum 0.5 at 0.01, 5 local epochs of
#: batches of 10, dropout 0.1; nothing clipped, no average, no rate decay (their code's decay never reaches
#: the clients).
COMMON = ["--model", "gru", "--units", "300", "--embedding-dim", "300", "--client-lr", "0.01",
          "--client-momentum", "0.5", "--local-epochs", "5", "--batch-size", "10", "--dropout", "0.1",
          "--clip", "none", "--weight-average", "0", "--lr-decay", "1"]
ALGORITHMS = {
    "FedAtt": ["--algorithm", "fedatt", "--fedatt-norm", "spectral", "--fedatt-eps", "1.2", "--server-noise",
               "0.001"],
    "FedAvg": ["--algorithm", "fedavg", "--server-optimizer", "sgd", "--server-lr", "1", "--server-noise", "0.001"],
    # one gradient per client and round: the server's SGD is the only optimizer (no client momentum)
    "FedSGD": ["--algorithm", "fedsgd", "--server-optimizer", "sgd", "--server-lr", "1", "--server-noise", "0.001"],
}
#: Not Ji's: FedAvg stepping by FedAtt's eps (1.2) instead of 1, to tell FedAtt's attention from its longer step
#: (FedAtt with equal attention is FedAvg with uniform weights at step eps). Trained when named in --algorithms.
CONTROLS = {
    "FedAvg 1.2": ["--algorithm", "fedavg", "--server-optimizer", "sgd", "--server-lr", "1.2", "--server-noise",
                   "0.001"],
}
RUNS = {**ALGORITHMS, **CONTROLS}
FRACTIONS = (0.1, 0.5)
TRAINING_CLIENTS = 90
SEEDS = (0, 1, 2)


def train_args(algorithm: str, fraction: float, seed: int, rounds: int, eval_every: int, out: str,
               resume: bool = False) -> list[str]:
    args = ["train", *CORPUS, "--out", out, "--rounds", str(rounds), "--no-phrases"]
    if resume:
        return args + ["--resume"]
    common = [a for a in COMMON]
    if algorithm == "FedSGD":  # no client steps: no client rate, momentum or epochs to set
        for flag in ("--client-lr", "--client-momentum", "--local-epochs"):
            i = common.index(flag)
            del common[i:i + 2]
    return args + [*common, *RUNS[algorithm], "--clients-per-round",
                   str(max(1, round(fraction * TRAINING_CLIENTS))), "--seed", str(seed), "--eval-every",
                   str(eval_every), "--overwrite"]


def run_dir(work: str, algorithm: str, fraction: float, seed: int) -> str:
    return os.path.join(work, f"{algorithm.lower().replace(' ', '-')}_c{fraction:g}_seed{seed}")


def best_validation_row(out: str) -> dict | None:
    """The evaluation with the lowest validation loss (Ji's best-validation model), or None."""
    rows = [r for r in curve(out) if r.get("val_loss") is not None and math.isfinite(r["val_loss"])]
    return min(rows, key=lambda r: r["val_loss"]) if rows else None


def kept_result(out: str) -> dict | str | None:
    """A run's kept round and its held-out perplexity (with the round it diverged at, if it diverged after it:
    Ji's protocol keeps the best validation round of every run, so such a run counts); "diverged" for a run
    that diverged before it kept a round; None for a finished run never evaluated."""
    at = diverged_at(out)
    row = best_validation_row(out) if is_result(out) else None
    if row is None:
        return "diverged" if at is not None else None
    kept = {"round": int(row["round"]), "perplexity": row["perplexity"]}
    return kept if at is None else {**kept, "diverged_at": at}


def cell(found: dict) -> str:
    """The table's cell of one algorithm at one fraction: mean ± sd of the seeds' kept perplexities, and which
    runs diverged."""
    kept = [v for v in found.values() if isinstance(v, dict)]
    ppl = [v["perplexity"] for v in kept]
    if not found:
        return "not run"
    if not ppl:
        return "diverged"
    late = [str(v["diverged_at"]) for v in kept if "diverged_at" in v]
    notes = []
    if late:
        count = "" if len(ppl) == 1 else f"{len(late)} "
        notes.append(f"{count}diverged after the kept round, at round{'s' * (len(late) > 1)} {', '.join(late)}")
    early = sum(v == "diverged" for v in found.values())
    if early:
        notes.append(f"{early} diverged before any evaluation")
    if len(found) > len(kept) + early:
        notes.append(f"{len(found) - len(kept) - early} never evaluated")
    value = (f"{ppl[0]:.1f} (1 seed" if len(ppl) == 1 else
             f"{statistics.fmean(ppl):.1f} ± {statistics.stdev(ppl):.1f} ({len(ppl)} seeds")
    return value + "".join(f"; {n}" for n in notes) + ")"


def seed_ratios(data: dict, pairs: list[tuple[str, str]]) -> dict[str, dict[int, float]]:
    """{"A / B at C = f": {seed: A's kept perplexity / B's}} for each pair, at each fraction, over the seeds both
    kept a round at (a run that diverged before keeping one has nothing to compare)."""
    out = {}
    for a, b in pairs:
        for fraction in FRACTIONS:
            mine, theirs = data.get(f"{a} C={fraction:g}", {}), data.get(f"{b} C={fraction:g}", {})
            by_seed = {s: mine[s]["perplexity"] / theirs[s]["perplexity"] for s in sorted(mine)
                       if isinstance(mine[s], dict) and isinstance(theirs.get(s), dict)}
            if by_seed:
                out[f"{a} / {b} at C = {fraction:g}"] = by_seed
    return out


def collect(args) -> tuple[dict, str]:
    data = {}
    def started(out):  # its directory, or its kept record once the directory is gone
        return os.path.exists(out) or os.path.exists(run_records.record_path(out))

    columns = list(ALGORITHMS) + [c for c in CONTROLS  # a control's column once any of its runs exists
                                  if any(started(run_dir(args.work, c, f, s)) for f in FRACTIONS for s in SEEDS)]
    lines = ["Ji et al.'s protocol on Tiny Shakespeare dealt IID to 100 clients: `"
             + " ".join(COMMON) + "`; per algorithm: " + "; ".join(f"{a} `{' '.join(v)}`"
                                                                    for a, v in ALGORITHMS.items())
             + f". {args.rounds} rounds; held-out perplexity (every target) at the evaluation with the lowest "
             "validation loss; mean ± sd over seeds.", "",
             "| fraction C | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for fraction in FRACTIONS:
        cells = []
        for algorithm in columns:
            found = {}
            for seed in SEEDS:
                out = run_dir(args.work, algorithm, fraction, seed)
                if diverged(out) or is_result(out):
                    found[seed] = kept_result(out)
            data[f"{algorithm} C={fraction:g}"] = found
            cells.append(cell(found))
        lines.append(f"| {fraction:g} | " + " | ".join(cells) + " |")
    for c in (c for c in columns if c in CONTROLS):
        lines += ["", f"Control (not Ji's): {c} is FedAvg stepping by FedAtt's eps, `{' '.join(CONTROLS[c])}`."]
    ratios = seed_ratios(data, [("FedAtt", "FedAvg")] + [(c, "FedAtt") for c in columns if c in CONTROLS])
    if ratios:
        lines += ["", "Seed by seed (a seed draws the same initial weights, cohorts and noise for every algorithm), "
                  "the ratio of the kept perplexities:"]
        lines += [f"- {name}: " + ", ".join(f"{r:.3f} (seed {s})" for s, r in by_seed.items())
                  for name, by_seed in ratios.items()]
    lines += ["", "Ji et al.'s Table II (C = 0.1): FedAtt 91.82 vs FedAvg 95.27 (WikiText-2), 115.43 vs 138.13 "
              "(PTB)."]
    return data, "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--fractions", default=",".join(f"{f:g}" for f in FRACTIONS),
                   help="comma-separated client fractions to train now (the report shows every one that ran)")
    p.add_argument("--seeds", default=",".join(str(s) for s in SEEDS),
                   help="comma-separated seeds to train now, of 0, 1, 2 (two lanes: --seeds 0 and --seeds 1,2)")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help="comma-separated runs to train now, of " + ", ".join(RUNS)
                        + f" (default: Ji's {', '.join(ALGORITHMS)}; {', '.join(CONTROLS)}: FedAvg at FedAtt's step)")
    p.add_argument("--work", default=os.path.join("runs", "ji_table2"))
    p.add_argument("--name", default="ji_table2")
    p.add_argument("--out", default=result_file.results_dir("ji_table2"))
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if not seeds or any(s not in SEEDS for s in seeds):
        p.error(f"--seeds {args.seeds}: choose from {', '.join(str(s) for s in SEEDS)}")
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if not algorithms or any(a not in RUNS for a in algorithms):
        p.error(f"--algorithms {args.algorithms}: choose from {', '.join(RUNS)}")
    start = time.time()
    if not args.collect:
        for fraction in (float(f) for f in args.fractions.split(",") if f.strip()):
            for seed in seeds:
                for algorithm in algorithms:
                    out = run_dir(args.work, algorithm, fraction, seed)
                    if settled(out):
                        continue
                    resume = run_records.resumable(out)
                    train_recorded(train_args(algorithm, fraction, seed, args.rounds, args.eval_every, out, resume), out)
    data, text = collect(args)
    paths = result_file.write(args.name, {"runs": data, "seconds_this_call": time.time() - start}, text, args.out,
                              run_records.trained_of(args.work),
                              seeds=f"{', '.join(map(str, SEEDS))} (each run's `train --seed`: a seed draws the same "
                                    "initial weights, cohorts and noise for every algorithm)")
    print(text)
    print("written:", *paths)


if __name__ == "__main__":
    main()

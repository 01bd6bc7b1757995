"""Ro et al. 2024's Table 2 in their protocol: CIFG against SI-CIFG from random weights under FedAdam.

Ro et al. ("Efficient language model architectures for differentially private federated learning") train
both cells from random weights with FedAdam: server Adam (0.9, 0.999, 1e-8), client SGD, no clipping, no
dropout, no weight averaging, learning rates selected per model (server 0.001 and client 0.1 for both), 500
clients a round for 3,000 rounds, 5 seeds; they report perplexity without end-of-sentence targets and
accuracy. Here, on real per-user text (the SpamAssassin senders; Tiny Shakespeare by role):

1. ``--phase sweep``: each model over client lr {0.1, 0.5, 1} x server lr {1e-3, 1e-2}, one seed, a small
   cohort and few rounds. Each model's pair is the one with the lowest validation loss (the validation
   clients, never the held-out ones) at the model its run keeps.
2. ``--phase seeds``: each model at its pair, seeds 0, 1, 2, for as many rounds as the machine allows. Ro
   select rates on full-length runs; the sweep's runs are short, so a pair it selects can diverge later. A pair
   at which any seed diverges is reported as such (each seed's best model before it diverged, and the round),
   its later seeds are not run, and the model's next pair by the sweep's validation loss is run in its place:
   a model's pair is the best one whose seeds all train the full length. A model with no such pair is
   reported at the sweep's pick, every seed there with the best model it kept before it diverged (its
   perplexity infinite from the divergence on, for the overtaking round), and said so.

The report gives Ro's metrics on the held-out users for the model each run keeps (perplexity without
end-of-sentence targets; recall@1 and in-vocabulary accuracy@1; the perplexity over every target beside them),
mean and spread over seeds, each seed's 95% interval over held-out users, the per-seed paired interval of
SI-CIFG against CIFG, and the first evaluation from which SI-CIFG's mean held-out perplexity stays below
CIFG's, if there is one. What is cut from Ro's protocol is said in the report.

Runs are one at a time; a finished run is read, not retrained, and a stopped one resumes (``--resume``), so
the benchmark spans sessions:

    python benchmarks/ro_table2/ro_table2.py --phase sweep --corpora mail,shakespeare
    python benchmarks/ro_table2/ro_table2.py --phase seeds --corpora mail,shakespeare
    python benchmarks/ro_table2/ro_table2.py --collect --corpora mail,shakespeare
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file, run_records  # noqa: E402
from benchmarks.common.corpora import CORPORA  # noqa: E402
from benchmarks.common.result_file import spread  # noqa: E402
from benchmarks.common.run_records import (curve, diverged, diverged_at, is_result, kept_round, settled,  # noqa: E402
                                           train_recorded)

MODELS = ("cifg", "si-cifg")
CLIENT_LRS = (0.1, 0.5, 1.0)
SERVER_LRS = (1e-3, 1e-2)
SEEDS = (0, 1, 2)
#: Ro et al.'s FedAdam: server Adam at epsilon 1e-8, client SGD; nothing clipped, no dropout, no average, no
#: decay of the client rate.
PROTOCOL = ["--server-optimizer", "adam", "--server-adam-epsilon", "1e-8", "--clip", "none", "--client-clipnorm",
            "0", "--dropout", "0", "--weight-average", "0", "--lr-decay", "1"]
METRICS = ("perplexity_no_eos", "recall_at_1", "iv_accuracy_at_1", "perplexity")
DRAWS = 1000


def run_dir(work: str, corpus: str, phase: str, model: str, client_lr: float, server_lr: float, seed: int) -> str:
    return os.path.join(work, corpus, phase, f"{model}_c{client_lr:g}_s{server_lr:g}_seed{seed}")


def train_args(corpus: str, model: str, client_lr: float, server_lr: float, seed: int, rounds: int, cohort: int,
               eval_every: int, out: str, resume: bool = False) -> list[str]:
    """`keyboard-lm` arguments of one run in Ro's protocol (from random weights), or its continuation."""
    args = ["train", *CORPORA[corpus], "--out", out, "--rounds", str(rounds), "--no-phrases"]
    if resume:
        return args + ["--resume"]
    return args + ["--model", model, *PROTOCOL, "--client-lr", f"{client_lr:g}", "--server-lr", f"{server_lr:g}",
                   "--clients-per-round", str(cohort), "--seed", str(seed), "--eval-every", str(eval_every),
                   "--overwrite"]


def ensure(corpus, model, client_lr, server_lr, seed, rounds, cohort, eval_every, out) -> None:
    """Train the run unless it is settled; a stopped run resumes."""
    if settled(out):
        return
    resume = run_records.resumable(out)
    train_recorded(train_args(corpus, model, client_lr, server_lr, seed, rounds, cohort, eval_every, out, resume), out)


def ensure_evaluated(corpus, model, client_lr, server_lr, seed, rounds, cohort, eval_every, out) -> None:
    """`ensure`, then the kept model's held-out figures into the run's record while its weights are here."""
    ensure(corpus, model, client_lr, server_lr, seed, rounds, cohort, eval_every, out)
    if is_result(out):
        run_records.heldout(out, CORPORA[corpus])


def validation_loss(out: str) -> float:
    """The validation loss at the round the run keeps (inf for a run that diverged or never evaluated)."""
    record = run_records.load(out)
    if record is None or record["diverged_at"] is not None:
        return math.inf
    loss = record["best"].get("val_loss")
    return float(loss) if loss is not None and math.isfinite(float(loss)) else math.inf


def ranked_pairs(work: str, corpus: str, model: str) -> list[tuple[float, float]]:
    """``model``'s (client lr, server lr) pairs that trained through the sweep, lowest validation loss first."""
    found = []
    for c in CLIENT_LRS:
        for s in SERVER_LRS:
            out = run_dir(work, corpus, "sweep", model, c, s, 0)
            if is_result(out):
                found.append((validation_loss(out), c, s))
    return [f[1:] for f in sorted(found) if math.isfinite(f[0])]


def pairs_in_order(work: str, corpus: str, model: str) -> list[tuple[float, float]]:
    """The pairs the seeds phase runs for ``model``, in order: the sweep's best, then, while every pair so far
    had a seed diverge, the next. The last is the model's pair unless one of its seeds diverged too."""
    tried = []
    for pair in ranked_pairs(work, corpus, model):
        tried.append(pair)
        if not _pair_diverged(work, corpus, model, pair):
            break
    return tried


def _pair_diverged(work: str, corpus: str, model: str, pair: tuple[float, float]) -> bool:
    """Whether a seed of ``model`` at ``pair`` diverged in the seeds phase."""
    return any(diverged(run_dir(work, corpus, "seeds", model, *pair, seed)) for seed in SEEDS)


def no_stable_pair(work: str, corpus: str, model: str, tried: list | None = None) -> bool:
    """Whether every pair the sweep trained through had a seed diverge in the seeds phase: the pairs tried
    stop at the first stable one, so only the last can tell (``tried``: `pairs_in_order`, if read already)."""
    tried = pairs_in_order(work, corpus, model) if tried is None else tried
    return bool(tried) and _pair_diverged(work, corpus, model, tried[-1])


def reported_pair(work: str, corpus: str, model: str, tried: list | None = None) -> tuple[float, float] | None:
    """The pair ``model`` is reported at: the last one tried, or the sweep's pick if no pair is stable."""
    tried = pairs_in_order(work, corpus, model) if tried is None else tried
    if no_stable_pair(work, corpus, model, tried):
        return tried[0]
    return tried[-1] if tried else None


def diverged_curve(rows: list[dict], rounds: list[int]) -> list[dict]:
    """A diverged run's evaluated rows, continued at infinite perplexity over ``rounds`` past its last."""
    last = max((int(r["round"]) for r in rows), default=0)
    return list(rows) + [{"round": float(q), "perplexity": math.inf} for q in rounds if q > last]


def overtakes(curves: dict[str, list[list[dict]]]) -> int | None:
    """The first evaluated round from which SI-CIFG's held-out perplexity, averaged over seeds, stays below
    CIFG's at every later evaluation; None if it never does."""
    def mean_by_round(runs):
        by = {}
        for rows in runs:
            for r in rows:
                by.setdefault(int(r["round"]), []).append(r["perplexity"])
        return {k: statistics.fmean(v) for k, v in by.items() if len(v) == len(runs)}

    si, cifg = mean_by_round(curves["si-cifg"]), mean_by_round(curves["cifg"])
    rounds = sorted(set(si) & set(cifg))
    for i, r in enumerate(rounds):
        if all(si[q] < cifg[q] for q in rounds[i:]):
            return r
    return None


def seeds_phase(work: str, corpus: str, model: str, rounds: int, cohort: int, eval_every: int, run=None) -> None:
    """Every seed of ``model`` at its sweep's best pair, then at the next while a seed of the last diverged
    (``run`` trains one run: `ensure_evaluated` by default). A pair's seeds stop at the first that diverges:
    one is enough to rule the pair out, and each seed is most of an hour here. If every pair is ruled out, the
    sweep's pick has all its seeds run, to be reported with the models they kept."""
    run = run or ensure_evaluated
    if not ranked_pairs(work, corpus, model):
        raise SystemExit(f"{corpus}: run --phase sweep first (no sweep run of {model} finished)")
    done: list[tuple[float, float]] = []
    while True:
        pairs = pairs_in_order(work, corpus, model)
        if pairs == done:
            break
        for pair in pairs[len(done):]:
            for seed in SEEDS:
                out = run_dir(work, corpus, "seeds", model, *pair, seed)
                run(corpus, model, *pair, seed, rounds, cohort, eval_every, out)
                if diverged(out):  # the pair is out: its other seeds would not bring it back
                    break
        done = pairs
    if no_stable_pair(work, corpus, model, done):  # reported at the sweep's pick: every seed there
        pick = done[0]
        for seed in SEEDS:
            run(corpus, model, *pick, seed, rounds, cohort, eval_every, run_dir(work, corpus, "seeds", model, *pick,
                                                                                seed))


def collect(args) -> tuple[dict, str]:
    from keyboard_lm.evaluation import intervals, paired_intervals

    data, lines = {}, []
    lines += [f"Ro et al.'s FedAdam protocol from random weights: `{shlex.join(PROTOCOL)}`; the sweep at K = "
              f"{args.sweep_cohort}, {args.sweep_rounds} rounds, seed 0; the seeds at K = {args.cohort}, "
              f"{args.rounds} rounds. Cut from Ro's: 500 clients a round for 3,000 rounds, and 5 seeds. Held-out "
              "figures are of the model each run keeps (best validation recall@3); intervals are 95%, over held-out "
              f"users ({DRAWS} bootstrap draws).", ""]
    for corpus in args.corpora:
        data[corpus] = {"sweep": {}, "selected": {}, "seeds": {}}
        lines += [f"## {corpus}: `{shlex.join(CORPORA[corpus])}`", "", "### Sweep: validation loss at the kept round",
                  "", "| model | " + " | ".join(f"client {c:g}, server {s:g}" for c in CLIENT_LRS for s in SERVER_LRS)
                  + " |", "|---|" + "---:|" * (len(CLIENT_LRS) * len(SERVER_LRS))]
        for model in MODELS:
            cells = []
            for c in CLIENT_LRS:
                for s in SERVER_LRS:
                    out = run_dir(args.work, corpus, "sweep", model, c, s, 0)
                    v = validation_loss(out) if is_result(out) or diverged(out) else None
                    data[corpus]["sweep"][f"{model} c{c:g} s{s:g}"] = v
                    cells.append("not run" if v is None else ("diverged" if math.isinf(v) else f"{v:.4f}"))
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        per_model, curves, unstable = {}, {}, []
        for model in MODELS:
            tried = pairs_in_order(args.work, corpus, model)
            unsettled = no_stable_pair(args.work, corpus, model, tried)
            pair = reported_pair(args.work, corpus, model, tried)
            data[corpus]["selected"][model] = pair
            data[corpus].setdefault("no_stable_pair", {})[model] = unsettled
            data[corpus].setdefault("diverged_pairs", {})[model] = []
            for other in tried:
                runs = {}
                for seed in SEEDS:
                    out = run_dir(args.work, corpus, "seeds", model, *other, seed)
                    if is_result(out):
                        runs[seed] = {"out": out, "diverged_at": diverged_at(out), "kept_round": kept_round(out),
                                      "result": run_records.heldout(out, CORPORA[corpus])}
                if other != pair or any(r["diverged_at"] is not None for r in runs.values()):
                    unstable.append((model, other, runs))
                    data[corpus]["diverged_pairs"][model].append(
                        {"pair": other, "seeds": {s: {"diverged_at": r["diverged_at"], "kept_round": r["kept_round"],
                                                      "pooled": r["result"]["pooled"]} for s, r in runs.items()}})
                    if not (unsettled and other == pair):
                        continue
                read = {seed: curve(r["out"]) for seed, r in runs.items()}
                rounds = sorted({int(row["round"]) for rows in read.values() for row in rows})
                for seed, r in runs.items():
                    per_model.setdefault(model, {})[seed] = r["result"]
                    curves.setdefault(model, []).append(read[seed] if r["diverged_at"] is None
                                                        else diverged_curve(read[seed], rounds))
        lines += ["", "### Seeds at each model's pair: held-out users", "",
                  "A model's pair is the sweep's best whose seeds all trained the full length; a model marked * has "
                  "no such pair and is given at the sweep's pick, each seed's best model before it diverged.", "",
                  "| model | pair (client, server) | " + " | ".join(METRICS) + " | each seed's interval of "
                  "perplexity_no_eos |", "|---|---|" + "---|" * (len(METRICS) + 1)]
        for model in MODELS:
            pair, runs = data[corpus]["selected"].get(model), per_model.get(model, {})
            cells = [spread([r["pooled"][m] for r in runs.values()]) for m in METRICS]
            ivs = [intervals(r, ("perplexity_no_eos",), replicates=DRAWS, seed=s)["perplexity_no_eos"]
                   for s, r in sorted(runs.items())]
            data[corpus]["seeds"][model] = {"pair": pair, "pooled": {s: r["pooled"] for s, r in runs.items()},
                                            "intervals": ivs}
            star = " *" if data[corpus]["no_stable_pair"][model] else ""
            lines.append(f"| {model}{star} | {'-' if pair is None else f'{pair[0]:g}, {pair[1]:g}'} | "
                         + " | ".join(cells)
                         + " | " + ("; ".join(f"[{lo:.1f}, {hi:.1f}]" for lo, hi in ivs) or "-") + " |")
        if unstable:
            lines += ["", "Pairs at which a seed diverged (each seed's best model before it diverged; a seed that "
                      "trained the full length is its kept model; the seeds after the first that diverged are "
                      "not run):", "",
                      "| model | pair (client, server) | seed | diverged at round | kept round | "
                      + " | ".join(METRICS) + " |", "|---|---|---|---|---|" + "---|" * len(METRICS)]
            for model, other, runs in unstable:
                for seed, r in sorted(runs.items()):
                    lines.append(f"| {model} | {other[0]:g}, {other[1]:g} | {seed} | "
                                 f"{'-' if r['diverged_at'] is None else r['diverged_at']} | "
                                 f"{'-' if r['kept_round'] is None else r['kept_round']} | "
                                 + " | ".join(f"{r['result']['pooled'][m]:.4g}" for m in METRICS) + " |")
        both = sorted(set(per_model.get("cifg", {})) & set(per_model.get("si-cifg", {})))
        paired = {s: paired_intervals(per_model["si-cifg"][s], per_model["cifg"][s],
                                      ("perplexity_no_eos", "recall_at_1"), replicates=DRAWS, seed=s) for s in both}
        data[corpus]["paired"] = paired
        data[corpus]["overtakes"] = overtakes(curves) if len(curves) == 2 else None
        lines += ["", "SI-CIFG / CIFG on the same held-out users, per seed (paired 95% intervals): "
                  + ("; ".join(f"seed {s}: perplexity_no_eos [{p['perplexity_no_eos'][0]:.3f}, "
                               f"{p['perplexity_no_eos'][1]:.3f}], recall@1 [{p['recall_at_1'][0]:.3f}, "
                               f"{p['recall_at_1'][1]:.3f}]" for s, p in paired.items()) or "not run yet") + ".",
                  "", "First evaluation from which SI-CIFG's mean held-out perplexity stays below CIFG's (a diverged "
                  "seed's perplexity infinite from its divergence on): "
                  + (str(data[corpus]["overtakes"]) if data[corpus]["overtakes"] is not None
                     else ("never" if len(curves) == 2 else "not run yet")) + ".", ""]
    lines += ["Ro et al.'s Table 2 (Stack Overflow, 5 seeds): perplexity 33.6 (SI-CIFG) vs 35.5 (CIFG), accuracy "
              "33.6 vs 33.1."]
    return data, "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default="mail,shakespeare", help="comma-separated, of mail, shakespeare")
    p.add_argument("--phase", choices=("sweep", "seeds"), help="train this phase's runs first (default: collect only)")
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--sweep-rounds", type=int, default=50)
    p.add_argument("--sweep-cohort", type=int, default=10)
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--cohort", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--work", default=os.path.join("runs", "ro_table2"))
    p.add_argument("--name", default="ro_table2")
    p.add_argument("--out", default=result_file.results_dir("ro_table2"))
    args = p.parse_args()
    args.corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = [c for c in args.corpora if c not in ("mail", "shakespeare")]
    if unknown:
        p.error(f"unknown corpora {unknown}; choose from mail, shakespeare")
    start = time.time()
    if args.phase == "sweep" and not args.collect:
        for corpus in args.corpora:
            for model in MODELS:
                for c in CLIENT_LRS:
                    for s in SERVER_LRS:
                        ensure(corpus, model, c, s, 0, args.sweep_rounds, args.sweep_cohort,
                               min(args.eval_every, args.sweep_rounds), run_dir(args.work, corpus, "sweep", model,
                                                                               c, s, 0))
    if args.phase == "seeds" and not args.collect:
        for corpus in args.corpora:
            for model in MODELS:
                seeds_phase(args.work, corpus, model, args.rounds, args.cohort, args.eval_every)
    data, text = collect(args)
    paths = result_file.write(args.name, {**data, "protocol": PROTOCOL, "seconds_this_call": time.time() - start},
                          text, args.out, run_records.trained_of(args.work),
                          seeds=f"sweep 0, seeds phase {', '.join(map(str, SEEDS))} (each run's `train --seed`)")
    print(text)
    print("written:", *paths)


if __name__ == "__main__":
    main()

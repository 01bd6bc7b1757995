"""Ro et al. 2024's Table 4 in this project's setting: SI-CIFG against CIFG under DP-FTRL, each from its own base.

Ro et al. ("Efficient language model architectures for differentially private federated learning") pretrain
each cell on public text and then train it with DP-FTRL on Stack Overflow; their Table 4 reports perplexity
without end-of-sentence and out-of-vocabulary targets and in-vocabulary accuracy: SI-CIFG 86.1 against CIFG 88.0,
17.5 against 17.3. Here each cell starts from its own base, pretrained on the same public corpus for the same
epochs (``--cifg-base``, ``--si-base``: run directories of `train --centralized`, docs/training.md), and trains
on Tiny Shakespeare with one client per speech (the users of the privacy tables) with DP-FTRL, the tree's noise
and BLT's, at the same eps over the same population, cohort and rounds, so at the same noise multiplier z; clip
0.1, the base's public vocabulary, 3 seeds. The report gives Ro's metrics on the held-out speeches (mean and
spread over seeds, each seed's 95% interval over held-out users) and, per seed, the paired interval of SI-CIFG
against CIFG on the same users.

Runs are one at a time; a finished run is read, not retrained, and a stopped one resumes, so the benchmark
spans sessions:

    python benchmarks/ro_table4/ro_table4.py --cifg-base runs/base_clean --si-base runs/base_sicifg_e4   # train, report
    python benchmarks/ro_table4/ro_table4.py --collect                                                    # report only
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file, run_records  # noqa: E402
from benchmarks.common.corpora import SHAKESPEARE  # noqa: E402
from benchmarks.common.heldout import heldout_by_user  # noqa: E402
from benchmarks.common.result_file import spread  # noqa: E402
from benchmarks.common.run_records import diverged, train_recorded  # noqa: E402
from benchmarks.common.runs import finished  # noqa: E402

#: Tiny Shakespeare with one client per speech: 6,387 training "users", as in the privacy tables.
SPEECHES = ["--data", SHAKESPEARE, "--format", "shakespeare", "--partition", "record"]
MODELS = ("cifg", "si-cifg")
MECHANISMS = ("ftrl", "blt")
SEEDS = (0, 1, 2)
METRICS = ("perplexity_no_eos_oov", "iv_accuracy_at_1", "recall_at_3", "perplexity")
DRAWS = 1000


def run_dir(work: str, mechanism: str, epsilon: float, model: str, seed: int) -> str:
    return os.path.join(work, f"{mechanism}_eps{epsilon:g}", f"{model}_seed{seed}")


def train_args(args, mechanism: str, epsilon: float, model: str, seed: int, out: str, resume: bool) -> list[str]:
    """`keyboard-lm` arguments of one DP-FTRL run from ``model``'s base, or its continuation."""
    if resume:
        return ["train", *SPEECHES, "--out", out, "--resume"]
    base = args.cifg_base if model == "cifg" else args.si_base
    return ["train", *SPEECHES, "--out", out, "--init-from", base, "--init-vocab", "base", "--dp", mechanism,
            "--dp-epsilon", f"{epsilon:g}", "--dp-clip", "0.1", "--clients-per-round", str(args.cohort),
            "--rounds", str(args.rounds), "--eval-every", str(args.rounds), "--seed", str(seed), "--overwrite"]


def ensure(args, mechanism: str, epsilon: float, model: str, seed: int) -> None:
    out = run_dir(args.work, mechanism, epsilon, model, seed)
    if finished(out) or diverged(out):
        return
    resume = run_records.resumable(out)
    train_recorded(train_args(args, mechanism, epsilon, model, seed, out, resume), out)


def _record(out: str) -> dict:
    from keyboard_lm.models.run_dir import RunRecord

    record = RunRecord.read(out)
    dp, start = record.differential_privacy or {}, record.init_from or {}
    return {"noise_multiplier": dp.get("noise_multiplier"), "epsilon": dp.get("epsilon"), "base": start.get("path"),
            "base_weights_sha256": start.get("weights_sha256"), "vocabulary": dp.get("vocabulary")}


def collect(args) -> tuple[dict, str]:
    from keyboard_lm.evaluation import intervals, paired_intervals

    data = {"cifg_base": args.cifg_base, "si_base": args.si_base, "cells": {}}
    lines = [f"DP-FTRL from each cell's base on Tiny Shakespeare, one client per speech: K = {args.cohort}, "
             f"{args.rounds} rounds, clip 0.1, the base's vocabulary, seeds {', '.join(map(str, SEEDS))}; the CIFG "
             f"from `{args.cifg_base}`, the SI-CIFG from `{args.si_base}`. Held-out speeches; intervals are 95%, "
             f"over held-out users ({DRAWS} bootstrap draws). Ro et al.'s protocol is cut to this population "
             "(6,387 training speeches against Stack Overflow's 342k users) and cohort.", ""]
    for mechanism in MECHANISMS:
        for epsilon in args.epsilons:
            per_model, records = {}, {}
            for model in MODELS:
                for seed in SEEDS:
                    out = run_dir(args.work, mechanism, epsilon, model, seed)
                    if finished(out):
                        per_model.setdefault(model, {})[seed] = heldout_by_user(out, SPEECHES)
                        records.setdefault(model, {})[seed] = _record(out)
            name = {"ftrl": "tree", "blt": "BLT"}[mechanism]
            cell = data["cells"][f"{mechanism}_eps{epsilon:g}"] = {"models": {}, "paired": {}}
            lines += [f"## DP-FTRL ({name} noise), eps {epsilon:g}", "",
                      "| model | z | " + " | ".join(METRICS) + " | each seed's interval of perplexity_no_eos_oov |",
                      "|---|---|" + "---|" * (len(METRICS) + 1)]
            for model in MODELS:
                runs = per_model.get(model, {})
                zs = sorted({r["noise_multiplier"] for r in records.get(model, {}).values()})
                ivs = [intervals(r, ("perplexity_no_eos_oov",), replicates=DRAWS, seed=s)["perplexity_no_eos_oov"]
                       for s, r in sorted(runs.items())]
                cell["models"][model] = {"pooled": {s: r["pooled"] for s, r in runs.items()}, "intervals": ivs,
                                         "runs": records.get(model, {})}
                lines.append(f"| {model} | {', '.join(f'{z:.4g}' for z in zs) or '-'} | "
                             + " | ".join(spread([r["pooled"][m] for r in runs.values()]) for m in METRICS)
                             + " | " + ("; ".join(f"[{lo:.1f}, {hi:.1f}]" for lo, hi in ivs) or "not run") + " |")
            # Each base before any DP round, on the same held-out speeches: where the DP run started.
            starts = {model: heldout_by_user(run_dir(args.work, mechanism, epsilon, model, min(runs)), SPEECHES,
                                             start=True)
                      for model, runs in per_model.items()}
            for model, found in starts.items():
                cell["models"][model]["start"] = found["pooled"]
                lines.append(f"| {model}, its base before DP training | - | "
                             + " | ".join(f"{found['pooled'][m]:.4g}" for m in METRICS) + " | - |")
            if len(starts) == 2:
                cell["start_paired"] = paired_intervals(starts["si-cifg"], starts["cifg"],
                                                        ("perplexity_no_eos_oov", "iv_accuracy_at_1"),
                                                        replicates=DRAWS, seed=0)
            both = sorted(set(per_model.get("cifg", {})) & set(per_model.get("si-cifg", {})))
            for s in both:
                cell["paired"][s] = paired_intervals(per_model["si-cifg"][s], per_model["cifg"][s],
                                                     ("perplexity_no_eos_oov", "iv_accuracy_at_1"),
                                                     replicates=DRAWS, seed=s)
            lines += ["", "SI-CIFG / CIFG on the same held-out speeches, per seed (paired 95% intervals): "
                      + ("; ".join(f"seed {s}: perplexity_no_eos_oov [{p['perplexity_no_eos_oov'][0]:.3f}, "
                                   f"{p['perplexity_no_eos_oov'][1]:.3f}], iv_accuracy_at_1 "
                                   f"[{p['iv_accuracy_at_1'][0]:.3f}, {p['iv_accuracy_at_1'][1]:.3f}]"
                                   for s, p in cell["paired"].items()) or "not run yet") + "."]
            if "start_paired" in cell:
                p = cell["start_paired"]
                lines += ["", "The same for the two bases before DP training: perplexity_no_eos_oov "
                          f"[{p['perplexity_no_eos_oov'][0]:.3f}, {p['perplexity_no_eos_oov'][1]:.3f}], "
                          f"iv_accuracy_at_1 [{p['iv_accuracy_at_1'][0]:.3f}, {p['iv_accuracy_at_1'][1]:.3f}]."]
            lines.append("")
    lines.append("Ro et al.'s Table 4 (Stack Overflow, DP-FTRL from public pretraining): perplexity without "
                 "end-of-sentence and OOV targets 86.1 (SI-CIFG) vs 88.0 (CIFG), in-vocabulary accuracy 17.5 vs 17.3.")
    return data, "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cifg-base", default=os.path.join("runs", "base_clean"),
                   help="the CIFG's base: a `train --centralized` run directory, or base (runs/base_clean)")
    p.add_argument("--si-base", default=os.path.join("runs", "base_sicifg_e4"),
                   help="the SI-CIFG's base, pretrained as the CIFG's (runs/base_sicifg_e4)")
    p.add_argument("--epsilons", default="10", help="comma-separated (10)")
    p.add_argument("--mechanisms", default="ftrl,blt", help="comma-separated, of ftrl (tree), blt (ftrl,blt)")
    p.add_argument("--cohort", type=int, default=100)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--work", default=os.path.join("runs", "ro_table4"))
    p.add_argument("--name", default="ro_table4")
    p.add_argument("--out", default=result_file.results_dir("ro_table4"))
    args = p.parse_args()
    args.epsilons = [float(e) for e in args.epsilons.split(",") if e.strip()]
    mechanisms = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        p.error(f"unknown mechanisms {unknown}; choose from {', '.join(MECHANISMS)}")
    start = time.time()
    if not args.collect:
        for mechanism in mechanisms:
            for epsilon in args.epsilons:
                for seed in SEEDS:
                    for model in MODELS:
                        ensure(args, mechanism, epsilon, model, seed)
    data, text = collect(args)
    result_file.publish(args.name, data, text, args.out, start, run_records.trained_of(args.work),
                        seeds=f"{', '.join(map(str, SEEDS))} (each run's `train --seed`)")


if __name__ == "__main__":
    main()

"""The suggestion stack's targets, measured as a user gets them: `keyboard-lm train` (federated, from the base,
its phrase table learnt by default), `keyboard-lm export` (model and table in one file), `keyboard-lm eval --stack`.

For each corpus and seed it trains the run (or resumes it from its checkpoint), exports it, and evaluates the
exported file on the run's held-out users, each user's text streamed in order: the stack (model + phrase table)
against the Kneser-Ney 5-gram trained on the same training users, and both with a per-user history learnt as
the user types. Ratios of recall@3 carry paired 95% intervals over held-out users; the page gives each seed's
row, then the mean, standard deviation and range over seeds, beside the target.

    python benchmarks/stack/stack_targets.py                          # every corpus, seeds 0,1,2
    python benchmarks/stack/stack_targets.py --corpora mail --seeds 0,1
    python benchmarks/stack/stack_targets.py --collect                # train nothing: export and evaluate finished runs

The DP corpus (`maildp`: DP-FTRL, eps 10 at delta 1e-10 for model and table together) is compared with the
noiseless mail stack of the same seed, user by user (each stack's per-user result is kept as stack_by_user.json).

A finished run, export or evaluation is read, not redone: the benchmark is continued by running it again. A run
whose gate was fitted before the gate's sign test gets it refitted (`keyboard-lm phrases`, no new release) and
is exported and evaluated again.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.runs import trained  # noqa: E402
from keyboard_lm.models.run_dir import RunRecord, atomic_write  # noqa: E402

MAIL = ["--data", "../shared/data/spamassassin-ham/ham.mbox", "--format", "mbox"]
#: corpus -> (the text's arguments for train and eval, stack-vs-5-gram target, stack+history-vs-5-gram+history target or None)
CORPORA = {
    "mail": (MAIL, 1.08, 1.05),
    "shakespeare": (["--data", "../shared/data/tinyshakespeare/input.txt", "--format", "shakespeare"], 1.15, None),
    "default": ([], 1.05, None),
    "mailiid": (MAIL + ["--partition", "iid", "--num-clients", "887"], 1.05, None),
    # DP-FTRL at eps 10, delta 1e-10 (a run under --dp learns no table: docs/privacy.md); its target is against
    # the noiseless stack.
    "maildp": (MAIL, 0.95, None),
}
#: corpus -> the arguments only `train` takes (the corpus's text is named by CORPORA, which eval takes too).
TRAIN_ONLY = {"maildp": ["--dp", "ftrl", "--dp-epsilon", "10", "--dp-delta", "1e-10", "--dp-clip", "0.1",
                         "--clients-per-round", "100", "--rounds", "40"]}
#: A private corpus -> the noiseless corpus its stack is compared with (same data, same split, same seed).
NOISELESS = {"maildp": "mail"}
STACK, STACK_HISTORY = "model + phrase table", "model + phrase table + history"
VERSUS_NOISELESS = "stack vs noiseless stack"


def _cli(*args: str, out: str | None = None) -> str:
    """Run ``keyboard-lm args`` (stdout appended to ``out`` when given, else returned); exit on failure."""
    cmd = [sys.executable, "-m", "keyboard_lm.cli", *args]
    print("$", shlex.join(["keyboard-lm", *args]), flush=True)
    if out is None:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        log = done.stderr
    else:
        with open(out, "a", encoding="utf-8") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False)
        log = f"see {out}"
    if done.returncode:
        raise SystemExit(f"keyboard-lm {' '.join(args[:2])} exited with {done.returncode}: {log.strip()[-400:]}")
    return done.stdout if out is None else ""


def _finished(run_dir: str) -> bool:
    record = RunRecord.peek(run_dir)
    if record is None:
        return False
    return bool(record.final_metrics) and (record.rounds_done or 0) >= record.federated["rounds"]


def _gate_is_stale(run_dir: str) -> bool:
    """Whether the run's gate was fitted without the sign test (``suggestion_evaluation.fit_gate``)."""
    try:
        with open(os.path.join(run_dir, "phrase_gate.json"), encoding="utf-8") as f:
            return "sign_test_z" not in json.load(f)["fit"]
    except (OSError, ValueError, KeyError):
        return False


def measure(corpus: str, seed: int, runs: str, collect: bool) -> dict | None:
    """One seed of one corpus: train/resume, export, evaluate; None when ``collect`` and it is not trained yet."""
    run_dir = os.path.join(runs, f"{corpus}_s{seed}")
    stack, evaluation = os.path.join(run_dir, "stack.tflite"), os.path.join(run_dir, "stack_eval.json")
    timings = {}
    if not _finished(run_dir):
        if collect:
            return None
        resume = os.path.exists(os.path.join(run_dir, "run.json"))
        args = (["--resume", "--out", run_dir] if resume else
                ["--init-from", "base", *CORPORA[corpus][0], *TRAIN_ONLY.get(corpus, []), "--seed", str(seed),
                 "--out", run_dir])
        t0 = time.time()
        _cli("train", *args, out=run_dir + ".log")
        timings["train_seconds_this_call"] = round(time.time() - t0, 1)
    if _gate_is_stale(run_dir):
        # A run fitted before the gate's sign test: refit it (the released counts are reused, no new release).
        _cli("phrases", run_dir, *CORPORA[corpus][0], out=run_dir + ".log")
        for path in (stack, stack + ".card.json", evaluation):
            if os.path.exists(path):
                os.remove(path)
    if not os.path.exists(evaluation):
        if not os.path.exists(stack):
            _cli("export", run_dir, "--out", stack)
        t0 = time.time()
        found = json.loads(_cli("eval", stack, "--stack", "--json", *CORPORA[corpus][0]))
        found["eval_seconds"] = round(time.time() - t0, 1)
        atomic_write(evaluation, json.dumps(found, indent=1).encode("utf-8"), mode=0o644)
    with open(evaluation, encoding="utf-8") as f:
        found = json.load(f)
    record = RunRecord.read(run_dir)
    with open(stack + ".card.json", encoding="utf-8") as f:
        card = json.load(f)
    if STACK not in found["rows"]:  # a file without a table (a run under --dp): its stack is the model alone
        found["rows"][STACK], found["rows"][STACK_HISTORY] = found["rows"]["model"], found["rows"]["model + history"]
    if corpus in NOISELESS:
        found["rows"][VERSUS_NOISELESS] = versus_noiseless(corpus, run_dir,
                                                           os.path.join(runs, f"{NOISELESS[corpus]}_s{seed}"))
    return {"rows": found["rows"], "eval_seconds": found.get("eval_seconds"), **timings,
            "train_command": record.command, "trained": trained(run_dir), "phrases": card.get("phrases"), "file_bytes": card["size_bytes"]}


def _by_user(run_dir: str, corpus) -> dict:
    """The run's exported stack streamed over its held-out users ({"pooled", "clients"}), kept beside the file."""
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.inference.predictor import Predictor
    from keyboard_lm.suggestion_evaluation import evaluate_stack

    path = os.path.join(run_dir, "stack_by_user.json")
    if not os.path.exists(path):
        split = RunRecord.read(run_dir).split
        heldout = split_clients(corpus.client_ids, SplitConfig(**split))[1]
        result = evaluate_stack(Predictor.load(os.path.join(run_dir, "stack.tflite")), corpus, heldout)
        atomic_write(path, json.dumps({"split": split, **result}).encode("utf-8"), mode=0o644)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def versus_noiseless(corpus_name: str, private_dir: str, noiseless_dir: str) -> dict:
    """The private run's stack (model + table, both trained under DP) against the noiseless run's stack on the
    same held-out users: recall@3 ratio with its paired 95% interval."""
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.evaluation import paired_intervals

    if not os.path.exists(os.path.join(noiseless_dir, "stack.tflite")):
        raise SystemExit(f"stack_targets: {private_dir} is compared with {noiseless_dir}'s stack, which is not "
                         "exported yet: measure that corpus first")
    args = CORPORA[corpus_name][0]  # the text both runs trained on, as their train arguments name it
    corpus = load_corpus(args[args.index("--data") + 1], args[args.index("--format") + 1])
    private, noiseless = _by_user(private_dir, corpus), _by_user(noiseless_dir, corpus)
    if private["split"] != noiseless["split"]:
        raise SystemExit(f"stack_targets: {private_dir} and {noiseless_dir} hold out different users")
    return {**private["pooled"], "vs": noiseless_dir,
            "ratio_recall_at_3": private["pooled"]["recall_at_3"] / noiseless["pooled"]["recall_at_3"],
            "paired_interval_recall_at_3": paired_intervals(private, noiseless, ("recall_at_3",))["recall_at_3"]}


def _ratio_cell(row: dict) -> str:
    low, high = row["paired_interval_recall_at_3"]
    return f"{row['ratio_recall_at_3']:.3f}x [{low:.3f}, {high:.3f}]"


def _spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}x (1 seed)"
    return (f"{statistics.mean(values):.3f}x ± {statistics.stdev(values):.3f} (range {min(values):.3f}-"
            f"{max(values):.3f}, {len(values)} seeds)")


def report(results: dict) -> str:
    lines = ["Recall@3 of the exported file (model + its phrase table) on each run's held-out users, against the "
             "Kneser-Ney 5-gram trained on the run's training users (same vocabulary); with history: both sides "
             "learn a per-user history as the user types. [paired 95% interval over held-out users]", "",
             "| corpus | seed | model vs 5-gram | stack vs 5-gram | stack + history vs 5-gram + history | "
             "table bytes | file bytes |", "|---|---|---|---|---|---:|---:|"]
    summary = ["", "| corpus | what | target | over seeds | every seed's interval above the bar |",
               "|---|---|---|---|---|"]
    for corpus, seeds in results.items():
        for seed, r in seeds.items():
            rows, phrases = r["rows"], r.get("phrases") or {}
            lines.append(f"| {corpus} | {seed} | {_ratio_cell(rows['model'])} | {_ratio_cell(rows[STACK])} | "
                         f"{_ratio_cell(rows[STACK_HISTORY])} | {phrases.get('bytes', 0):,} | "
                         f"{r['file_bytes']:,} |")
            if VERSUS_NOISELESS in rows:
                lines.append(f"| {corpus} | {seed} | {VERSUS_NOISELESS} ({rows[VERSUS_NOISELESS]['vs']}): "
                             f"{_ratio_cell(rows[VERSUS_NOISELESS])} | | | | |")
        _, target, history_target = CORPORA[corpus]
        targets = ((VERSUS_NOISELESS, target), (STACK, None)) if corpus in NOISELESS else \
            ((STACK, target), (STACK_HISTORY, history_target))
        for name, tgt in targets:
            bar = tgt if name == VERSUS_NOISELESS else 1.0  # beat the 5-gram; lose at most 5% to the noiseless stack
            ratios = [r["rows"][name]["ratio_recall_at_3"] for r in seeds.values()]
            above = all(r["rows"][name]["paired_interval_recall_at_3"][0] > bar for r in seeds.values())
            summary.append(f"| {corpus} | {name.replace('model + phrase table', 'stack')} | "
                           f"{'>= %.2fx' % tgt if tgt else '-'} | {_spread(ratios)} | "
                           f"{'yes' if above else 'no'} (> {bar:g}) |")
    return "\n".join(lines + summary) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default=",".join(CORPORA), help=f"comma-separated, of {', '.join(CORPORA)}")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--runs", default=os.path.join("runs", "stack"), help="where the run directories go")
    p.add_argument("--collect", action="store_true", help="train nothing: export, evaluate and report finished runs")
    p.add_argument("--name", default="stack_targets")
    p.add_argument("--out", default=result_file.results_dir("stack"))
    args = p.parse_args()
    started = time.time()
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown:
        raise SystemExit(f"stack_targets: unknown corpus {unknown[0]!r} (known: {', '.join(CORPORA)})")
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {}
    for seed in seeds:  # every corpus's seed 0 first
        for corpus in corpora:
            found = measure(corpus, seed, args.runs, args.collect)
            if found is not None:
                results.setdefault(corpus, {})[seed] = found
    results = {c: dict(sorted(results[c].items())) for c in corpora if c in results}
    if not results:
        raise SystemExit("stack_targets: no finished run to report")
    trained = [r["trained"] for per_seed in results.values() for r in per_seed.values()]
    result_file.publish(args.name, {"results": results}, report(results), args.out, started, trained,
                        seeds=f"{', '.join(map(str, seeds))} (each run's `train --seed`; the paired intervals' default "
                              "bootstrap seed 0)")


if __name__ == "__main__":
    main()

"""Federated recipes from the base, on several corpora, chosen by validation clients only.

Runs `keyboard-lm train --init-from base` once per (corpus, recipe), one run
at a time (so wall-clock figures are a machine's own), and ranks the recipes
by validation recall@3 *relative to the first recipe on the same corpus*,
averaged over the corpora: a recipe has to help across corpora, not on one.
Held-out figures are reported beside it (and against the Kneser-Ney 5-gram on
the same split and vocabulary) but never used to choose.

A run directory that already holds a finished run is read, not retrained; one
that holds a checkpoint is continued with `--resume`, so the sweep survives
being stopped and can be extended with more recipes or corpora later.

    python benchmarks/warm_start_sweep.py --corpora mail,shakespeare \\
        --recipe "default=" --recipe "adam 0.01=--server-optimizer adam --server-lr 0.01" --rounds 100

``--collect`` only reads the run directories and writes the report.
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
from benchmarks.recipe_benchmark import _curve, _ngram, kept_within  # noqa: E402

SHARED = os.path.join("..", "shared", "data")
MAIL = os.path.join(SHARED, "spamassassin-ham", "ham.mbox")
SHAKESPEARE = os.path.join(SHARED, "tinyshakespeare", "input.txt")

#: name -> the corpus arguments of `keyboard-lm train`.
CORPORA = {
    "mail": ["--data", MAIL, "--format", "mbox"],
    "shakespeare": ["--data", SHAKESPEARE, "--format", "shakespeare"],
    "embedded": ["--format", "default"],
    # the same lines dealt IID to about as many clients as there are roles: rounds cost the same, and only
    # the users' skew differs from "shakespeare"
    "shakespeare-iid300": ["--data", SHAKESPEARE, "--format", "shakespeare", "--partition", "iid",
                           "--num-clients", "300"],
}


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in name)


def _finished(run_dir: str) -> bool:
    path = os.path.join(run_dir, "run.json")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        return _completed(json.load(f))


def _completed(info: dict) -> bool:
    """Whether a run.json is of a run that did all its rounds or epochs: a federated run stopped early
    (SIGTERM, a lost worker) writes its final metrics too, at the round it reached, and so does a centralized
    run after each epoch; both are resumed rather than read as done. A centralized run that validation
    stopped (--patience) is done."""
    federated, hyper = info.get("federated"), info.get("hyperparameters") or {}
    rounds_left = federated is not None and info.get("rounds_done", 0) < federated.get("rounds", 0)
    epochs_left = (info.get("trainer") == "centralized" and not info.get("stopped_early")
                   and info.get("epochs_done", 0) < hyper.get("epochs", 0))
    return bool(info.get("final_metrics")) and not rounds_left and not epochs_left


def train_args(corpus_args, recipe_args, run_dir, rounds=None, eval_every=None, resume=False) -> list[str]:
    """`keyboard-lm` arguments of one run from the base, or of its continuation from its checkpoint."""
    args = ["train", *corpus_args, "--out", run_dir]
    args += ["--rounds", str(rounds)] if rounds is not None else []
    args += [] if "--centralized" in recipe_args else ["--no-phrases"]  # the model's recipe is measured alone
    if resume:
        # A resumed run takes its recipe and its start from its own run.json; `train` refuses --init-from there.
        return args + ["--resume"]
    args += ["--eval-every", str(eval_every)] if eval_every is not None else []
    return args + ["--init-from", "base", *recipe_args, "--overwrite"]


def _train(corpus_args, recipe_args, run_dir, rounds=None, eval_every=None) -> float:
    """Train (or resume) one run from the base; returns the wall seconds this call took.

    ``rounds``/``eval_every`` None leave `train`'s own defaults.
    """
    resume = os.path.isdir(os.path.join(run_dir, "checkpoints"))
    cmd = [sys.executable, "-m", "keyboard_lm.cli", *train_args(corpus_args, recipe_args, run_dir, rounds, eval_every,
                                                               resume)]
    print("$", shlex.join(["keyboard-lm", *cmd[3:]]), flush=True)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    start = time.time()
    with open(run_dir + ".log", "a", encoding="utf-8") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        raise SystemExit(f"{run_dir}: train exited with {done.returncode}; see {run_dir}.log")
    return time.time() - start


def _ngram_on(corpus_args) -> dict:
    """The 5-gram reference on a corpus given as train arguments."""
    return _ngram(*ngram_args(corpus_args))


def ngram_args(corpus_args) -> tuple:
    """(data, format, partition, num_clients) of a corpus given as train arguments, as the 5-gram takes them."""
    num_clients = _arg(corpus_args, "--num-clients")
    return (_arg(corpus_args, "--data"), _arg(corpus_args, "--format"), _arg(corpus_args, "--partition") or "natural",
            int(num_clients) if num_clients else None)


def _arg(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def _collect(run_dir: str) -> dict | None:
    curve = _curve(run_dir)
    if not curve:
        return None
    kept = kept_within(curve, float("inf"))
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    return {"run_dir": run_dir, "command": info.get("command"), "curve": curve, "kept": kept,
            "finished": _completed(info), "seconds": curve[-1]["seconds"]}


def rank(results: dict, recipes: list[str], corpora: list[str]) -> list[dict]:
    """Recipes by mean validation recall@3 relative to the first recipe, over the corpora where all ran."""
    ref = recipes[0]
    rows = []
    for name in recipes:
        ratios = {}
        for corpus in corpora:
            mine, base = results[corpus].get(name), results[corpus].get(ref)
            if mine and base and "val_recall_at_3" in mine["kept"] and base["kept"].get("val_recall_at_3"):
                ratios[corpus] = mine["kept"]["val_recall_at_3"] / base["kept"]["val_recall_at_3"]
        rows.append({"recipe": name, "ratios": ratios,
                     "mean": sum(ratios.values()) / len(ratios) if len(ratios) == len(corpora) else None})
    return sorted(rows, key=lambda r: -(r["mean"] or 0))


def report(results, ngrams, recipes, corpora, args) -> str:
    lines = [f"Federated recipes from the base, {args.rounds} rounds, evaluated every {args.eval_every}; "
             "one run at a time. 'Kept' is the round the validation clients pick (best validation recall@3); "
             "held-out users never choose.", ""]
    ranked = rank(results, recipes, corpora)
    lines += ["## Ranking: validation recall@3 relative to '" + recipes[0] + "', mean over corpora", "",
              "| recipe | " + " | ".join(corpora) + " | mean |", "|---|" + "---:|" * (len(corpora) + 1)]
    for r in ranked:
        cells = [f"{r['ratios'][c]:.3f}" if c in r["ratios"] else "-" for c in corpora]
        lines.append(f"| {r['recipe']} | " + " | ".join(cells) + f" | {r['mean']:.3f} |" if r["mean"]
                     else f"| {r['recipe']} | " + " | ".join(cells) + " | - |")
    for corpus in corpora:
        ng = ngrams.get(corpus)
        lines += ["", f"## {corpus}: `{shlex.join(CORPORA[corpus])}`", "",
                  (f"Kneser-Ney 5-gram: held-out recall@3 {ng['recall_at_3']:.4f}, perplexity "
                   f"{ng['perplexity']:.1f}." if ng else ""), "",
                  "| recipe | kept round | validation recall@3 | held-out recall@3 | perplexity | vs 5-gram "
                  "| wall s (whole run) |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name in recipes:
            r = results[corpus].get(name)
            if not r:
                lines.append(f"| {name} | not run | | | | | |")
                continue
            k = r["kept"]
            vs = f"{k['recall_at_3'] / ng['recall_at_3']:.3f}x" if ng else "-"
            lines.append(f"| {name} | {k['step']} | {k.get('val_recall_at_3', float('nan')):.4f} "
                         f"| {k['recall_at_3']:.4f} | {k['perplexity']:.1f} | {vs} | {r['seconds']:.0f}"
                         f"{'' if r['finished'] else ' (unfinished)'} |")
    lines += ["", "Recipes:", ""] + [f"- {n}: `{shlex.join(a) or '(the defaults)'}`" for n, a in args.recipes_]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default=",".join(CORPORA), help=f"comma-separated, of {', '.join(CORPORA)}")
    p.add_argument("--recipe", action="append", default=[], metavar="NAME=ARGS",
                   help="a recipe: a name and train arguments; the first is the reference (default: the defaults)")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--work", default=os.path.join("runs", "warm_start_sweep"))
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--no-ngram", action="store_true", help="skip the 5-gram reference")
    p.add_argument("--name", default="warm_start_sweep")
    p.add_argument("--out", default=_report.results_dir("base"))
    args = p.parse_args()
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown:
        p.error(f"unknown corpora {unknown}; choose from {list(CORPORA)}")
    args.recipes_ = []
    for item in args.recipe or ["default="]:
        if "=" not in item:
            p.error(f"--recipe {item!r}: expected NAME=ARGS")
        name, rest = item.split("=", 1)
        args.recipes_.append((name.strip(), shlex.split(rest)))
    recipes = [n for n, _ in args.recipes_]
    if len(set(recipes)) != len(recipes):
        p.error("recipe names must differ")

    results = {c: {} for c in corpora}
    for corpus in corpora:
        for name, recipe_args in args.recipes_:
            run_dir = os.path.join(args.work, corpus, _slug(name))
            if not args.collect and not _finished(run_dir):
                _train(CORPORA[corpus], recipe_args, run_dir, args.rounds, args.eval_every)
            r = _collect(run_dir) if os.path.isdir(run_dir) else None
            if r:
                results[corpus][name] = r
    ngrams = {} if args.no_ngram else {c: _ngram_on(CORPORA[c]) for c in corpora}
    text = report(results, ngrams, recipes, corpora, args)
    paths = _report.write(args.name, {"rounds": args.rounds, "recipes": dict(args.recipes_), "corpora": corpora,
                                      "ngram": ngrams, "runs": results,
                                      "ranking": rank(results, recipes, corpora)}, text, args.out)
    print(text)
    print("written:", *paths)


if __name__ == "__main__":
    main()

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

    python benchmarks/base/warm_start_sweep.py --corpora mail,shakespeare \\
        --recipe "default=" --recipe "adam 0.01=--server-optimizer adam --server-lr 0.01" --rounds 100

``--collect`` only reads the run directories and writes the report.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.corpora import CORPORA  # noqa: E402
from benchmarks.common.heldout import heldout_by_user  # noqa: E402
from benchmarks.common.ngram import ngram_on  # noqa: E402
from benchmarks.common.runs import collect_run, finished, seeds_line, slug, train_from_base  # noqa: E402

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


#: Bootstrap draws of held-out users for a recipe's paired interval against the first recipe.
DRAWS = 1000


def paired(by_user: dict, recipes: list[str]) -> dict:
    """{corpus: {recipe: {"ratio", "lo", "hi"}}}: held-out recall@3 of each recipe's kept model over the first
    recipe's on the same users, pooled, with its paired 95% interval (seed 0).

    ``by_user``: {corpus: {recipe: evaluation with per-user results}} (``heldout_by_user``)."""
    from keyboard_lm.evaluation import paired_intervals

    out = {}
    for corpus, per in by_user.items():
        ref = per.get(recipes[0])
        for name in recipes[1:]:
            if ref is None or name not in per:
                continue
            lo, hi = paired_intervals(per[name], ref, ("recall_at_3",), replicates=DRAWS, seed=0)["recall_at_3"]
            ratio = per[name]["pooled"]["recall_at_3"] / ref["pooled"]["recall_at_3"]
            out.setdefault(corpus, {})[name] = {"ratio": ratio, "lo": lo, "hi": hi}
    return out


def report(results, ngrams, recipes, corpora, args, intervals=None) -> str:
    intervals = intervals or {}
    own = any("--rounds" in a for _, a in args.recipes_)
    lines = [f"Federated recipes from the base, {args.rounds} rounds"
             f"{' unless a recipe sets its own' if own else ''}, evaluated every {args.eval_every}; "
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
                  "| recipe | kept round | validation recall@3 | held-out recall@3 | vs '" + recipes[0]
                  + "' (paired 95%) | perplexity | vs 5-gram | wall s (whole run) |",
                  "|---|---:|---:|---:|---|---:|---:|---:|"]
        for name in recipes:
            r = results[corpus].get(name)
            if not r:
                lines.append(f"| {name} | not run | | | | | | |")
                continue
            k = r["kept"]
            vs = f"{k['recall_at_3'] / ng['recall_at_3']:.3f}x" if ng else "-"
            iv = intervals.get(corpus, {}).get(name)
            pair = (f"{iv['ratio']:.3f}x [{iv['lo']:.3f}, {iv['hi']:.3f}]" if iv
                    else "1.000x" if name == recipes[0] else "-")
            lines.append(f"| {name} | {k['step']} | {k.get('val_recall_at_3', float('nan')):.4f} "
                         f"| {k['recall_at_3']:.4f} | {pair} | {k['perplexity']:.1f} | {vs} | {r['seconds']:.0f}"
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
    p.add_argument("--no-paired", action="store_true",
                   help="skip the held-out paired intervals against the first recipe (they evaluate each kept model)")
    p.add_argument("--name", default="warm_start_sweep")
    p.add_argument("--out", default=result_file.results_dir("base"))
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
            run_dir = os.path.join(args.work, corpus, slug(name))
            if not args.collect and not finished(run_dir):
                train_from_base(CORPORA[corpus], recipe_args, run_dir, args.rounds, args.eval_every)
            r = collect_run(run_dir) if os.path.isdir(run_dir) else None
            if r:
                results[corpus][name] = r
    ngrams = {} if args.no_ngram else {c: ngram_on(CORPORA[c]) for c in corpora}
    # only corpora with the reference and another recipe have a pair: evaluate no kept model for nothing
    pairs = {c: per for c, per in results.items() if recipes[0] in per and len(per) > 1}
    intervals = {} if args.no_paired else paired(
        {c: {n: heldout_by_user(r["run_dir"], CORPORA[c]) for n, r in per.items()} for c, per in pairs.items()},
        recipes)
    text = report(results, ngrams, recipes, corpora, args, intervals)
    paths = result_file.write(args.name, {"rounds": args.rounds, "recipes": dict(args.recipes_), "corpora": corpora,
                                      "ngram": ngrams, "runs": results,
                                      "ranking": rank(results, recipes, corpora), "paired": intervals},
                          text, args.out,
                          [r["trained"] for per in results.values() for r in per.values() if r],
                          seeds=seeds_line({f"{c} {n}": r["run_dir"] for c, per in results.items()
                                            for n, r in per.items() if r},
                                           "none drawn here (the runs' curves and a 5-gram on their split)"))
    print(text)
    print("written:", *paths)


if __name__ == "__main__":
    main()

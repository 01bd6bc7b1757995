"""Centralized recipe ablation on Tiny Shakespeare by role, and where the CIFG
still loses to the 5-gram.

1. Runs `keyboard-lm train --centralized` once per arm (the previous default,
   then stronger dropout, weight drop, weight averaging and the n-gram
   teacher added one at a time), at most ``--jobs`` at a time, each in its
   own process.  An arm whose run directory already holds a finished run of
   the same command (its log ends with "run saved to") is summarized, not
   rerun, so an interrupted benchmark picks up where it stopped.  Arms left
   out of ``--arms`` keep their row from the previous results file, marked
   with the date they were measured (each arm is one seeded run).
2. For the kept model of ``--analyse`` (the current default) and the
   Kneser-Ney 5-gram on the same vocabulary and split: recall@3 on held-out
   roles by target-word frequency rank and by position in the sentence, the
   share of events either model gets (the union), and the recall@3 of their
   linear interpolation -- what a hybrid would gain, not what is exported.

    python benchmarks/recipes/centralized_recipe_benchmark.py --data ../shared/data/tinyshakespeare/input.txt
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402


def _recipe(dropout, weight_drop=0, weight_average=0, teacher=0, lr=0.002, epochs=20, batch=32,
            patience=2) -> list[str]:
    """Every recipe flag an arm depends on, so changing a default does not change what an arm runs."""
    return ["--dropout", str(dropout), "--weight-drop", str(weight_drop), "--weight-average", str(weight_average),
            "--ngram-teacher", str(teacher), "--lr", str(lr), "--epochs", str(epochs), "--batch-size", str(batch),
            "--patience", str(patience)]


REGULARIZED = {"dropout": 0.4, "weight_drop": 0.5, "weight_average": 0.999}
ARMS = {
    "dropout 0.25 (the previous default)": _recipe(0.25),
    "dropout 0.4": _recipe(0.4),
    "dropout 0.4, weight drop 0.5": _recipe(0.4, weight_drop=0.5),
    "dropout 0.4, weight drop 0.5, weight average 0.999": _recipe(**REGULARIZED),
    "dropout 0.4, weight drop 0.5, weight average 0.999, up to 30 epochs": _recipe(**REGULARIZED, epochs=30),
    "same (20 epochs), 5-gram teacher 0.25": _recipe(**REGULARIZED, teacher=0.25),
    "same, 5-gram teacher 0.25, up to 40 epochs": _recipe(**REGULARIZED, teacher=0.25, epochs=40),
    "same, 5-gram teacher 0.25, lr 0.003, up to 40 epochs": _recipe(**REGULARIZED, teacher=0.25, lr=0.003,
                                                                    epochs=40),
    "same, 5-gram teacher 0.25, up to 40 epochs, batch 16": _recipe(**REGULARIZED, teacher=0.25, epochs=40,
                                                                    batch=16),
    "same, 5-gram teacher 0.25, up to 40 epochs, batch 8": _recipe(**REGULARIZED, teacher=0.25, epochs=40,
                                                                   batch=8),
    "same, 5-gram teacher 0.25, up to 40 epochs, batch 8, patience 3": _recipe(**REGULARIZED, teacher=0.25,
                                                                               epochs=40, batch=8, patience=3),
}
KEYS = ("recall_at_1", "recall_at_3", "iv_accuracy_at_3", "perplexity")


def _finished(run_dir: str) -> bool:
    try:
        with open(run_dir + ".log", encoding="utf-8") as f:
            return "run saved to" in f.read()
    except OSError:
        return False


def _run_arms(args) -> dict:
    dirs = {arm: os.path.join(args.work, f"arm{i}") for i, arm in enumerate(ARMS) if i in args.arms}
    todo = [arm for arm in dirs if not _finished(dirs[arm])]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    running, failed = [], []
    while todo or running:
        while todo and len(running) < args.jobs:
            arm = todo.pop(0)
            cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", "--centralized", "--data", args.data,
                   "--format", "shakespeare", "--out", dirs[arm], "--overwrite",
                   *ARMS[arm]]
            log = open(dirs[arm] + ".log", "w")  # noqa: SIM115 - closed when the process ends
            running.append((subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT),
                            log, arm))
        proc, log, arm = running.pop(0)
        if proc.wait():
            failed.append(arm)
        log.close()
    if failed:
        sys.exit(f"{', '.join(failed)} failed; see the logs in {args.work}")
    rows = {}
    for arm, d in dirs.items():
        with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
            info = json.load(f)
        rows[arm] = {"flags": ARMS[arm], "kept_epoch": info["best_epoch"], "epochs_done": info["epochs_done"],
                     **{k: info["final_metrics"][k] for k in KEYS}}
    return rows, dirs


def _gap(run_dir: str, data: str) -> dict:
    """Recall@3 of the run's kept model and the 5-gram by frequency rank and position; union; interpolation."""
    import numpy as np

    from benchmarks.recipes.disagreement import event_hits
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.corpora import load_shakespeare
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.models.run_dir import build_loaded_model, load_run
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    run = load_run(run_dir)
    corpus = load_shakespeare(data)
    train_ids, heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    vocab = run.vocab
    ngram = KneserNey(len(vocab), 5).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    pairs = list(corpus_examples(corpus.sentences(heldout), vocab, 20))
    x_all = np.array([x for x, _ in pairs], np.int32).reshape(-1, 20)
    y_all = np.array([y for _, y in pairs], np.int32).reshape(-1, 20)
    weights = (0.3, 0.5, 0.7)  # of the neural model; the n-gram has 1 - w
    ev = event_hits(build_loaded_model(run), ngram, x_all, y_all, (0.0, 1.0, *(1 - w for w in weights)),
                    orders=False)
    hits = {"cifg": ev["hits"][0.0], "5-gram": ev["hits"][1.0],
            **{f"interpolated {w}": ev["hits"][1 - w] for w in weights}}
    target, position = ev["target"], ev["position"]
    n = len(target)

    def bucket(mask):
        return {"events": int(mask.sum()), "cifg": float(hits["cifg"][mask].mean()),
                "5-gram": float(hits["5-gram"][mask].mean())}

    # Vocabulary ids after the special tokens are in frequency order (most frequent first).
    first = len(SPECIAL_TOKENS.tokens)
    by_rank = {f"{a + 1}-{b}": bucket((target >= first + a) & (target < first + b))
               for a, b in ((0, 50), (50, 200), (200, 1000), (1000, len(vocab)))}
    by_rank["<unk>"] = bucket(target == SPECIAL_TOKENS.oov_id)
    by_position = {f"{a + 1}-{b}": bucket((position >= a) & (position < b))
                   for a, b in ((0, 1), (1, 2), (2, 5), (5, 10), (10, 20))}
    return {"run": os.path.relpath(run_dir), "events": n,
            "recall_at_3": {k: float(v.sum() / n) for k, v in hits.items()},
            "union": float((hits["cifg"] | hits["5-gram"]).sum() / n),
            "by_frequency_rank": by_rank, "by_position": by_position}


def _earlier_rows(out_dir: str, fresh: dict) -> dict:
    """Rows of arms not run now, from the previous results file, with the date they were measured."""
    try:
        with open(os.path.join(out_dir, "centralized_recipe_benchmark.json"), encoding="utf-8") as f:
            earlier = json.load(f)
    except (OSError, ValueError):
        return {}
    return {a: {**r, "measured": r.get("measured", earlier["date"])}
            for a, r in earlier.get("arms", {}).items() if a in ARMS and a not in fresh}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join("..", "shared", "data", "tinyshakespeare", "input.txt"))
    p.add_argument("--jobs", type=int, default=2, help="arms trained at once (2)")
    p.add_argument("--work", default=os.path.join("runs", "centralized_recipe_benchmark"), help="run directories")
    p.add_argument("--arms", default=",".join(str(i) for i in range(len(ARMS))),
                   help="indices of the arms to run and report, comma-separated (all)")
    p.add_argument("--analyse", type=int, default=10, help="index of the arm whose kept model the gap analysis uses")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args()
    args.arms = sorted({int(i) for i in args.arms.split(",")})
    if not set(args.arms) <= set(range(len(ARMS))) or args.analyse not in args.arms:
        p.error(f"--arms must be indices 0-{len(ARMS) - 1} and include --analyse {args.analyse}")
    os.makedirs(args.work, exist_ok=True)
    rows, dirs = _run_arms(args)
    rows = {**_earlier_rows(args.out, rows), **rows}
    rows = {a: rows[a] for a in ARMS if a in rows}
    arm = list(ARMS)[args.analyse]
    gap = _gap(dirs[arm], args.data)
    lines = ["Held-out Tiny Shakespeare roles (10%, split seed 0), V=10k, paper-size CIFG (1,412,250 parameters); "
             "`keyboard-lm train --centralized` with the flags of each arm, validation clients pick the kept epoch.",
             "", "| arm | kept epoch (of) | recall@1 | recall@3 | iv-acc@3 | perplexity |", "|---|---|---|---|---|---|"]
    for a, r in rows.items():
        when = f" (measured {r['measured'][:10]})" if "measured" in r else ""
        lines.append(f"| {a}{when} | {r['kept_epoch']} ({r['epochs_done']}) | {r['recall_at_1']:.4f} | "
                     f"{r['recall_at_3']:.4f} | {r['iv_accuracy_at_3']:.4f} | {r['perplexity']:.1f} |")
    lines += ["", f"Where the gap is ({arm}, kept model, vs the Kneser-Ney 5-gram; {gap['events']:,} events):", "",
              "| target word's frequency rank | events | CIFG recall@3 | 5-gram recall@3 |", "|---|---|---|---|"]
    lines += [f"| {k} | {b['events']:,} | {b['cifg']:.4f} | {b['5-gram']:.4f} |"
              for k, b in gap["by_frequency_rank"].items()]
    lines += ["", "| position in sentence | events | CIFG recall@3 | 5-gram recall@3 |", "|---|---|---|---|"]
    lines += [f"| {k} | {b['events']:,} | {b['cifg']:.4f} | {b['5-gram']:.4f} |" for k, b in gap["by_position"].items()]
    lines += ["", "| combination | recall@3 |", "|---|---|"]
    lines += [f"| {k} | {v:.4f} |" for k, v in gap["recall_at_3"].items()]
    lines += [f"| either model's top 3 (union, an upper bound) | {gap['union']:.4f} |"]
    paths = result_file.write("centralized_recipe_benchmark", {"arms": rows, "gap": gap}, "\n".join(lines), args.out,
                              seeds="0 (`keyboard-lm train --centralized`'s default, no --seed given: one seeded run "
                                    "per arm; split seed 0)")
    print("\n".join(lines))
    print("written:", *paths)


if __name__ == "__main__":
    main()

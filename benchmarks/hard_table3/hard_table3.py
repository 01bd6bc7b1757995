"""Hard et al. 2018's comparison, like for like: the n-gram, a server-trained CIFG and a federated CIFG.

Hard et al. compare a CIFG trained with FederatedAveraging on the phones with the same CIFG trained on the
server, and with the n-gram model, in top-1 and top-3 recall. Here both CIFGs start from random weights (as
Hard et al.'s do) and share the model, the optimizer family and the regularization:

- federated: `train`'s defaults from random weights (client SGD, server Nesterov momentum, dropout 0.2),
  without the average of the global model across rounds;
- server: `train --centralized` with plain SGD on batches of 10 (the clients' batch), dropout 0.2, no
  DropConnect, no n-gram teacher and no weight average; its learning rate is the one of a small grid whose
  validation recall@3 is best (seed 0), held-out users never choosing; at most 10 epochs of Tiny Shakespeare
  (121,000 examples, where the federated CIFG's 350 rounds see 176,000) and 4 of the mail (209,000, where
  they see 218,000): the mail holds 4.3 times the training text;
- the Kneser-Ney 5-gram on the same split and vocabulary.

Three seeds of each CIFG; held-out recall@1 and recall@3 of the model each run keeps, mean ± sd, and each
seed's paired 95% interval over held-out users of federated / server and federated / 5-gram.

    python benchmarks/hard_table3/hard_table3.py --corpora shakespeare,mail     # resumable (each run from its last
                                                                    # epoch or saved round), one run at a time
    python benchmarks/hard_table3/hard_table3.py --corpora mail --rows server &   # or a corpus's two rows side by side
    python benchmarks/hard_table3/hard_table3.py --corpora mail --rows federated
    python benchmarks/hard_table3/hard_table3.py --collect
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file, run_records  # noqa: E402
from benchmarks.common.corpora import CORPORA  # noqa: E402
from benchmarks.common.heldout import cached  # noqa: E402
from benchmarks.common.ngram import ngram_by_user  # noqa: E402
from benchmarks.common.run_records import diverged_at, kept_round, train_recorded  # noqa: E402
from benchmarks.common.run_records import is_result as _result  # noqa: E402

SERVER_LRS = (0.5, 1.0, 2.0)
SEEDS = (0, 1, 2)
# the server CIFG's most epochs, per corpus: no more examples than the federated CIFG sees in its rounds
EPOCHS = {"shakespeare": 10, "mail": 4}
SERVER = ["--centralized", "--optimizer", "sgd", "--batch-size", "10", "--dropout", "0.2", "--weight-drop", "0",
          "--ngram-teacher", "0", "--weight-average", "0"]
FEDERATED = ["--no-phrases", "--weight-average", "0"]
METRICS = ("recall_at_1", "recall_at_3")
ROWS = ("federated", "server")
DRAWS = 1000


def run_dir(work, corpus, row, seed, lr=None) -> str:
    return os.path.join(work, corpus, f"{row}{'' if lr is None else f'_lr{lr:g}'}_seed{seed}")


def train_args(corpus: str, row: str, seed: int, out: str, lr: float | None = None,
               epochs: int | None = None) -> list[str]:
    """`keyboard-lm` arguments of one run; a run stopped with a checkpoint (a federated round's, a server
    run's epoch) is resumed."""
    if run_records.resumable(out):
        return ["train", *CORPORA[corpus], "--out", out, *(FEDERATED[:1] if row != "server" else []), "--resume"]
    args = ["train", *CORPORA[corpus], "--out", out, "--seed", str(seed), "--overwrite"]
    if row == "server":
        return args + [*SERVER, "--lr", f"{lr:g}", "--epochs", str(epochs or EPOCHS[corpus])]
    return args + FEDERATED


def pending(work: str, corpus: str, rows=ROWS) -> list[tuple[str, int, float | None]]:
    """The runs of ``rows`` still to train, as ``(row, seed, server rate or None)``, in the order trained:
    the server's rate grid (seed 0) first; its other seeds only once the grid has chosen."""
    todo = []
    if "server" in rows:
        todo += [("server", 0, lr) for lr in SERVER_LRS if not _result(run_dir(work, corpus, "server", 0, lr))]
    lr = None if todo else server_lr(work, corpus)
    for seed in SEEDS:
        for row in ROWS:
            if row not in rows or (row == "server" and lr is None):
                continue
            rate = lr if row == "server" else None
            if not _result(run_dir(work, corpus, row, seed, rate)):
                todo.append((row, seed, rate))
    return todo


def _val_recall(out: str) -> float:
    return float(run_records.load(out)["best"].get("val_recall_at_3") or 0.0)


def server_lr(work: str, corpus: str) -> float | None:
    """The grid's rate with the best validation recall@3 (seed 0), or None before the grid ran."""
    found = [(_val_recall(run_dir(work, corpus, "server", 0, lr)), lr) for lr in SERVER_LRS
             if _result(run_dir(work, corpus, "server", 0, lr))]
    return max(found)[1] if found else None


def spread(values):
    if not values:
        return "-"
    return (f"{values[0]:.4f} (1 seed)" if len(values) == 1 else
            f"{statistics.fmean(values):.4f} ± {statistics.stdev(values):.4f} ({len(values)} seeds)")


def collect(args) -> tuple[dict, str]:
    from keyboard_lm.evaluation import paired_intervals

    data, lines = {}, ["Like for like from random weights: server CIFG `" + " ".join(SERVER) + "` (rate chosen by "
                       "validation from " + ", ".join(f"{lr:g}" for lr in SERVER_LRS) + ", at most " +
                       ", ".join(f"{args.epochs or EPOCHS[c]} epochs of {c}" for c in args.corpora) +
                       "); federated CIFG `train " + " ".join(FEDERATED) + "` (the defaults otherwise). "
                       f"Held-out users; intervals are 95%, paired, over held-out users ({DRAWS} draws).", ""]
    for corpus in args.corpora:
        lr = server_lr(args.work, corpus)
        ng = run_records.pseudonymous(cached(os.path.join(args.work, f"ngram_{corpus}_by_user.json"),
                                           lambda: ngram_by_user(CORPORA[corpus])))
        runs, diverged = {"server": {}, "federated": {}}, []
        for seed in SEEDS:
            for row in runs:
                out = run_dir(args.work, corpus, row, seed, lr if row == "server" else None)
                if (row != "server" or lr is not None) and _result(out):
                    runs[row][seed] = run_records.heldout(out, CORPORA[corpus])
                    at = diverged_at(out)
                    if at is not None:
                        diverged.append(f"the {row} CIFG of seed {seed} diverged at round {at}; its row is its best "
                                        f"model before, of round {kept_round(out)}")
        lines += [f"## {corpus}: `{shlex.join(CORPORA[corpus])}`", "",
                  "| model | recall@1 | recall@3 |", "|---|---|---|",
                  f"| Kneser-Ney 5-gram | {ng['pooled']['recall_at_1']:.4f} | {ng['pooled']['recall_at_3']:.4f} |"]
        for row, label in (("server", f"server CIFG (SGD {'-' if lr is None else f'{lr:g}'})"),
                           ("federated", "federated CIFG")):
            lines.append(f"| {label} | " + " | ".join(spread([r["pooled"][m] for r in runs[row].values()])
                                                       for m in METRICS) + " |")
        pairs = {}
        for seed in sorted(set(runs["server"]) & set(runs["federated"])):
            pairs[seed] = {"federated / server": paired_intervals(runs["federated"][seed], runs["server"][seed],
                                                                  METRICS, replicates=DRAWS, seed=seed),
                           "federated / 5-gram": paired_intervals(runs["federated"][seed], ng, METRICS,
                                                                  replicates=DRAWS, seed=seed)}
        lines += [""] + [f"- {d}." for d in diverged]
        lines += [f"- seed {s}: " + "; ".join(f"{what} recall@1 [{p['recall_at_1'][0]:.3f}, "
                                              f"{p['recall_at_1'][1]:.3f}], recall@3 [{p['recall_at_3'][0]:.3f}, "
                                              f"{p['recall_at_3'][1]:.3f}]" for what, p in per.items())
                  for s, per in pairs.items()] + [""]
        data[corpus] = {"server_lr": lr, "ngram": ng["pooled"], "diverged": diverged,
                        "pooled": {row: {s: r["pooled"] for s, r in rr.items()} for row, rr in runs.items()},
                        "paired": {s: {w: {m: list(v) for m, v in p.items()} for w, p in per.items()}
                                   for s, per in pairs.items()}}
    return data, "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default="shakespeare,mail", help="comma-separated, of mail, shakespeare")
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--rows", default=",".join(ROWS),
                   help="comma-separated, of server, federated: the rows this process trains (both); two "
                        "processes given one each train a corpus's rows side by side")
    p.add_argument("--epochs", type=int, default=None,
                   help="most epochs of the server CIFG (10 of shakespeare, 4 of mail: no more examples "
                        "than the federated CIFG sees)")
    p.add_argument("--work", default=os.path.join("runs", "hard_table3"))
    p.add_argument("--name", default="hard_table3")
    p.add_argument("--out", default=result_file.results_dir("hard_table3"))
    args = p.parse_args()
    args.corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    if any(c not in ("mail", "shakespeare") for c in args.corpora):
        p.error("--corpora: choose from mail, shakespeare")
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    if not args.rows or any(r not in ROWS for r in args.rows):
        p.error(f"--rows: choose from {', '.join(ROWS)}")
    start = time.time()
    if not args.collect:
        for corpus in args.corpora:
            while True:  # again after every run: the server seeds wait for the rate grid
                todo = pending(args.work, corpus, args.rows)
                if not todo:
                    break
                row, seed, lr = todo[0]
                out = run_dir(args.work, corpus, row, seed, lr)
                train_recorded(train_args(corpus, row, seed, out, lr, args.epochs), out)
                run_records.heldout(out, CORPORA[corpus])
    data, text = collect(args)
    result_file.publish(args.name, data, text, args.out, start, run_records.trained_of(args.work),
                        seeds=f"{', '.join(map(str, SEEDS))} (each CIFG run's `train --seed`; the server's rate "
                              "grid at seed 0; each seed's paired intervals draw with that seed)")


if __name__ == "__main__":
    main()

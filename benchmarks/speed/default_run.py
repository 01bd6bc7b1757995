"""The default federated run, timed as a trainer runs it, on a corpus of real users of a given size.

Takes whole senders of the SpamAssassin mail, in the order of a seeded hash of their ids, until their words
reach ``--words``, writes them as JSON lines into the work directory, and runs the command README gives a
trainer, with nothing else:

    keyboard-lm train --init-from base --data <work>/corpus.jsonl --format jsonl --out <work>/run

so the defaults (rounds, clients a round, evaluation schedule, the phrase step) are what is timed. Reports the
command's wall seconds against the budget (30 minutes for 400,000 words on 2 cores), the run's own time
breakdown, the seconds after the training loop (the phrase step), and the held-out recall@3 the run kept,
beside the Kneser-Ney 5-gram on the same split.

    python benchmarks/speed/default_run.py --words 400000 --work runs/default_run
    python benchmarks/speed/default_run.py --words 400000 --init-from benchmarks/records/base/base_v2_si \
        --work runs/default_run_si --name default_run_si       # a candidate base, timed the same way
    python benchmarks/speed/default_run.py --words 400000 --init-from benchmarks/records/base/base_v2 \
        --rounds 350 --work runs/default_run_cifg --name default_run_cifg   # an earlier recipe
    python benchmarks/speed/default_run.py --words 400000 --against runs/default_run_cifg   # and the two side by side

A finished run in the work directory is read, not retrained (``--again`` retrains it); an interrupted one is
resumed (the wall seconds then add the sessions' commands). Run it alone on the machine: the figure is wall time.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.corpora import MAIL  # noqa: E402
from keyboard_lm.durable import replace_file  # noqa: E402

#: The budget the default run is held to: seconds for 400,000 words on the 2-core machine.
BUDGET_SECONDS = 30 * 60


def client_words(texts: list[str]) -> int:
    """Word tokens of a client's records, as `keyboard-lm data stats` counts them."""
    from keyboard_lm.text import tokenizer

    return sum(len(s) for t in texts for s in tokenizer.sentences(t))


def users_up_to(clients: dict[str, list[str]], words: int, seed: int) -> tuple[list[str], int]:
    """Whole clients, in the order of sha256(seed:id), until their words reach ``words``; (ids, words)."""
    order = sorted(clients, key=lambda c: hashlib.sha256(f"{seed}:{c}".encode("utf-8")).hexdigest())
    chosen, total = [], 0
    for cid in order:
        if total >= words:
            break
        chosen.append(cid)
        total += client_words(clients[cid])
    if total < words:
        raise SystemExit(f"default_run.py: --words {words:,}: the corpus holds only {total:,} words")
    return chosen, total


def write_corpus(clients: dict[str, list[str]], ids: list[str], path: str) -> None:
    """The chosen clients' records as `--format jsonl` reads them, each client's records in their order."""
    lines = [json.dumps({"user": cid, "text": text}, ensure_ascii=False) for cid in sorted(ids)
             for text in clients[cid]]
    replace_file(path, ("\n".join(lines) + "\n").encode("utf-8"))


def user_args(data: str, run_dir: str, init_from: str = "base", rounds: int | None = None) -> list[str]:
    """`keyboard-lm train`'s arguments as README gives them to a trainer, from ``init_from`` (and, to time an
    earlier recipe, with ``rounds``)."""
    return ["--init-from", init_from, "--data", data, "--format", "jsonl", "--out", run_dir,
            *(["--rounds", str(rounds)] if rounds else [])]


def against(run_dir: str, data: str, other_work: str) -> dict:
    """This run beside another work directory's on the same corpus: the commands' wall seconds and held-out
    recall@3, its ratio with the 95% interval paired over the same held-out senders (1,000 draws, seed 0)."""
    from benchmarks.common.heldout import heldout_by_user
    from keyboard_lm.evaluation import paired_intervals
    from keyboard_lm.models.run_dir import RunRecord

    other_run, other_timing = os.path.join(other_work, "run"), os.path.join(other_work, "wall_seconds.json")
    if not (os.path.isfile(os.path.join(other_run, "run.json")) and os.path.isfile(other_timing)):
        raise SystemExit(f"default_run.py: --against {other_work}: not a finished default_run.py work directory "
                         "(run/run.json and wall_seconds.json)")
    other_info = RunRecord.read(other_run)
    with open(other_timing, encoding="utf-8") as f:
        other_wall = sum(json.load(f))
    flags = ["--data", data, "--format", "jsonl"]
    mine, theirs = heldout_by_user(run_dir, flags), heldout_by_user(other_run, flags)
    lo, hi = paired_intervals(mine, theirs, ("recall_at_3",))["recall_at_3"]
    return {"work": os.path.relpath(other_work), "wall_seconds": other_wall,
            "rounds": (other_info.federated or {}).get("rounds"),
            "model_type": other_info.model["model_type"], "kept_round": other_info.best["round"],
            "heldout_recall_at_3": theirs["pooled"]["recall_at_3"], "this_recall_at_3": mine["pooled"]["recall_at_3"],
            "recall_ratio": mine["pooled"]["recall_at_3"] / theirs["pooled"]["recall_at_3"], "interval": [lo, hi]}


def report(r: dict) -> str:
    tb = r["time_breakdown"]
    shares = ", ".join(f"{k} {v:.0%}" for k, v in tb["share"].items() if v >= 0.005)
    met = "yes" if r["wall_seconds"] <= BUDGET_SECONDS * r["words"] / 400_000 else "no"
    return "\n".join([
        f"Corpus: {r['clients']} senders of the SpamAssassin mail (sha256 order, seed {r['seed']}), "
        f"{r['words']:,} words; the run's split: {r['train_clients']} training senders ({r['validation_clients']} "
        f"of them validation, which never train), {r['heldout_clients']} held-out.", "",
        f"Command: `{r['command']}` (its defaults: {r['rounds']} rounds, {r['clients_per_round']} clients a "
        f"round, local epochs {r['local_epochs']}, phrase step {'on' if r['phrases'] else 'off'}).", "",
        "| what | figure |", "|---|---:|",
        f"| command wall seconds | {r['wall_seconds']:,.0f} ({r['wall_seconds'] / 60:.1f} min) |",
        f"| budget (30 min for 400,000 words), met | {met} |",
        f"| training loop (the run's own breakdown) | {tb['total_seconds']:,.0f} s |",
        f"| after the loop (the phrase step) and start-up | {r['wall_seconds'] - tb['total_seconds']:,.0f} s |",
        f"| words per wall-second (training words visited / command seconds) | "
        f"{r['words_visited'] / r['wall_seconds']:,.0f} |",
        f"| held-out recall@3, round {r['kept_round']} (validation's pick) | {r['heldout_recall_at_3']:.4f} |",
        f"| Kneser-Ney 5-gram, same split | {r['ngram_recall_at_3']:.4f} "
        f"({r['heldout_recall_at_3'] / r['ngram_recall_at_3']:.3f}x) |", "",
        f"The loop's time: {shares}.", *against_lines(r)])


def against_lines(r: dict) -> list[str]:
    a = r.get("against")
    if not a:
        return []
    lo, hi = a["interval"]
    return ["", f"Beside `{a['work']}` (the same corpus and split; its {a['model_type']} run of {a['rounds']} rounds, "
            "one after the other on this machine):", "",
            "| what | this run | that run | ratio |", "|---|---:|---:|---|",
            f"| command wall seconds | {r['wall_seconds']:,.0f} | {a['wall_seconds']:,.0f} | "
            f"{r['wall_seconds'] / a['wall_seconds']:.3f}x |",
            f"| held-out recall@3 (kept rounds {r['kept_round']}, {a['kept_round']}) | {a['this_recall_at_3']:.4f} "
            f"| {a['heldout_recall_at_3']:.4f} | {a['recall_ratio']:.3f}x [{lo:.3f}, {hi:.3f}] (paired over the "
            f"{r['heldout_clients']} held-out senders) |"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--words", type=int, default=400_000, help="words of the corpus (400,000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the senders' order (0)")
    p.add_argument("--data", default=MAIL, help="the mbox the senders come from (the SpamAssassin ham)")
    p.add_argument("--work", default=os.path.join("runs", "default_run"))
    p.add_argument("--init-from", default="base", metavar="BASE",
                   help="the base the run starts from: the package's (base), or a candidate's package or run "
                        "directory, timed before it is the package's")
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds, to time an earlier recipe beside the default (default: the command's own)")
    p.add_argument("--against", metavar="WORK",
                   help="another default_run.py work directory on the same corpus: its command's wall time and, "
                        "paired over the same held-out senders, its held-out recall@3 beside this run's")
    p.add_argument("--again", action="store_true", help="retrain a finished run")
    p.add_argument("--name", default="default_run")
    p.add_argument("--out", default=result_file.results_dir("speed"))
    args = p.parse_args()
    if args.words < 1:
        p.error("--words must be at least 1")
    if args.rounds is not None and args.rounds < 1:
        p.error("--rounds must be at least 1")
    started = time.time()
    from keyboard_lm.data.corpora import load_corpus
    from benchmarks.common.ngram import ngram_pooled
    from benchmarks.common.runs import finished, run_keyboard_lm
    from benchmarks.speed.federated_throughput import words_per_example

    mail = load_corpus(args.data, "mbox")
    ids, words = users_up_to(mail.clients, args.words, args.seed)
    os.makedirs(args.work, exist_ok=True)
    data, run_dir = os.path.join(args.work, "corpus.jsonl"), os.path.join(args.work, "run")
    write_corpus(mail.clients, ids, data)
    timing = os.path.join(args.work, "wall_seconds.json")
    walls = []
    if os.path.exists(timing) and not args.again:
        with open(timing, encoding="utf-8") as f:
            walls = json.load(f)
    command = user_args(data, run_dir, args.init_from, args.rounds)
    if args.again or not finished(run_dir):
        resume = not args.again and os.path.isdir(os.path.join(run_dir, "checkpoints"))
        walls.append(run_keyboard_lm(["train", "--out", run_dir, "--resume"] if resume
                                     else ["train", *command, "--overwrite"], run_dir))
        replace_file(timing, json.dumps(walls).encode("utf-8"))
    if not walls:
        raise SystemExit(f"default_run.py: {run_dir} finished without this script's timing ({timing}); "
                         "use --again")
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    fed, split = info["federated"], info["data"]
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        examples = int(list(csv.DictReader(f))[-1]["examples_seen"])
    visited = examples * words_per_example(run_dir, ["--data", data, "--format", "jsonl"])
    result = {
        "seed": args.seed, "clients": len(ids), "words": words, "command": "keyboard-lm train " + " ".join(
            os.path.relpath(a) if os.sep in a else a for a in command),
        "train_clients": split["train_clients"], "validation_clients": split["validation_clients"],
        "heldout_clients": split["heldout_clients"], "rounds": fed.get("rounds"),
        "clients_per_round": fed.get("clients_per_round"), "local_epochs": info["client_data"]["epochs"],
        "phrases": bool((info.get("phrases") or {}).get("learn")), "wall_seconds": sum(walls),
        "sessions": len(walls), "time_breakdown": info["time_breakdown"],
        "words_visited": visited, "kept_round": info["best"]["round"],
        "heldout_recall_at_3": info["best"]["heldout"]["recall_at_3"],
        "ngram_recall_at_3": ngram_pooled(data, "jsonl")["recall_at_3"]}
    if args.against:
        result["against"] = against(run_dir, data, args.against)
    result_file.publish(args.name, result, report(result), args.out, started,
                        seeds=f"{args.seed} (the senders' order); the run: `train`'s default seed 0 and split")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

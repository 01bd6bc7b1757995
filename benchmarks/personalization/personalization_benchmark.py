"""Every personalization method side by side, on the same held-out users and the same time-ordered split.

Held-out clients of a run's split with at least --min-records records (messages, speeches); each
client's records, in time order, split 8:1:1: ``Session.personalize`` learns from the first 80%
(what the keyboard saw this user type before), the next 10% is the validation split (the
adapters' early stopping and Shenoy's grid), the last 10% is the test. The test streams every
word as a keyboard does: the top 3 suggestions before the word, then the word is committed (the
user history keeps learning from it; the adapters are frozen after ``personalize``).

Methods (``--methods``, all by default):

- ``global``: the global model alone;
- ``history@0.3``: the user history, mixed in at ``HISTORY_WEIGHT`` for every user;
- ``history``: the user history, its weight chosen per user on the validation split
  (``Session.choose_history_weight``, what ``personalize`` does); both learn the validation
  split after it served, as a keyboard would have;
- ``zero_shot``: the user's out-of-vocabulary words, char-encoder embeddings, no training;
- ``adapter``: the project's adapter (one hidden layer of 128, output layer at zero, early
  stopping on validation loss);
- ``shenoy``: Shenoy & Nguyen's adapter (LayerNorm, hidden sizes and output scale from their
  grid, ``SHENOY_GRID``, chosen per user on validation EMR3, early stopping on EMR3);
- ``bias``: the project's adapter plus a trained bias on the vocabulary logits (the on-device
  fine-tuning this frozen int8 model allows);
- ``history+adapter``, ``history+shenoy``, ``history+bias``: the combinations.

Metrics, micro-averaged over all test words (Shenoy & Nguyen's): EMR3 (the typed spelling among
the 3 suggestions, words outside the vocabulary included), KEMR3 (in-vocabulary words), recall@3
(as ``keyboard-lm eval`` counts: a word outside the vocabulary is a miss), the OOV rate before
(not in the vocabulary) and after (neither in the vocabulary nor among the personal words nor in
the history when it is typed); the device cost: seconds of ``personalize`` per user, bytes of
state per user (personal file + history file), milliseconds per suggestion.

    python benchmarks/personalization/personalization_benchmark.py --run RUN_DIR --char-encoder ENC.tflite \\
        --data ../shared/data/spamassassin-ham/ham.mbox --format mbox --name personalization_spamassassin
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.user_stream import new_counts, open_run, split_in_time, stream  # noqa: E402

METHODS = ("global", "history@0.3", "history", "zero_shot", "adapter", "shenoy", "bias", "history+adapter",
           "history+shenoy", "history+bias")
TITLES = {"global": "global model", "history@0.3": "user history, weight 0.3 for every user",
          "history": "user history, weight chosen per user", "zero_shot": "personal words, zero-shot",
          "adapter": "OOV adapter, the project's", "shenoy": "OOV adapter, Shenoy & Nguyen's grid",
          "bias": "adapter + vocabulary bias (fine-tuning)", "history+adapter": "history + project's adapter",
          "history+shenoy": "history + Shenoy's adapter", "history+bias": "history + adapter + vocabulary bias"}


def _personalize(session, method: str, past, validation) -> dict:
    """What ``method`` learns from the user's past sentences (validation: the early-stop split)."""
    from keyboard_lm.inference.adapter_research import SHENOY_GRID, train_variants

    report: dict = {}
    adapter = method.split("+")[-1]
    if adapter == "zero_shot":
        report = session.personalize_sentences(past, validation, epochs=0)
    elif adapter == "adapter":
        report = session.personalize_sentences(past, validation)
    elif adapter == "shenoy":
        report = train_variants(session, past, validation, variants=SHENOY_GRID, stop_on="emr3")
    elif adapter == "bias":
        report = train_variants(session, past, validation, variants=[{"vocab_bias": True}])
    if method.startswith("history"):
        # what personalize does: learn the past, choose the weight on the held-out newest text, learn that too
        report.update(session.learn_history(past))
        if not method.startswith("history@"):
            report.update(session.choose_history_weight(validation))
        session.learn_history(validation)
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="the run whose held-out clients are used")
    p.add_argument("--model", help="the run's exported .tflite (default: RUN/model.tflite, exported if missing)")
    p.add_argument("--char-encoder", required=True, help="the char encoder exported for the model "
                                                         "(keyboard-lm personal encoder)")
    p.add_argument("--data", required=True)
    p.add_argument("--format", default="mbox")
    p.add_argument("--partition", default="natural", choices=("natural", "iid"))
    p.add_argument("--num-clients", type=int, default=None, help="with --partition iid")
    p.add_argument("--min-records", type=int, default=10)
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--name", default="personalization")
    p.add_argument("--out", default=result_file.results_dir("personalization"))
    args = p.parse_args()

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.partition import apply_partition
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.inference.session import HISTORY_WEIGHT
    from keyboard_lm.text.tokenizer import sentences

    run, model_path, predictor, known = open_run(args.run, args.model, args.char_encoder)
    corpus = apply_partition(load_corpus(args.data, args.format), args.partition, args.num_clients)
    _, heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    users = [c for c in heldout if len(corpus.clients[c]) >= args.min_records]
    if not users:
        raise SystemExit(f"no held-out client has {args.min_records} records")
    splits = {u: [[s for text in part for s in sentences(text)] for part in split_in_time(corpus.clients[u])] for u in users}

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.methods:
            counts = new_counts()
            seconds, state_bytes, chosen, kept = [], [], [], []
            started = time.perf_counter()
            for user in users:
                past, validation, test = splits[user]
                s = predictor.session()
                t0 = time.perf_counter()
                report = _personalize(s, method, past, validation) if method != "global" else {}
                seconds.append(time.perf_counter() - t0)
                size = 0
                if s.personal is not None:
                    s.save_personal(os.path.join(tmp, "user.personal"))
                    size += os.path.getsize(os.path.join(tmp, "user.personal"))
                if s.history is not None:
                    if "history_weight" in report:
                        chosen.append(f"weight {report['history_weight']:g}")
                    s.history.save(os.path.join(tmp, "user.history"))
                    size += os.path.getsize(os.path.join(tmp, "user.history"))
                state_bytes.append(size)
                if "chosen" in report:
                    chosen.append(json.dumps(report["chosen"], sort_keys=True))
                if method.startswith("history@"):
                    s.history_weight = float(method.split("@")[1])
                if "kept_epoch" in report:
                    kept.append(report["kept_epoch"])
                stream(s, test, known, counts)
            n = max(counts["words"], 1)
            results[method] = {
                "emr3": counts["hits"] / n, "kemr3": counts["known_hits"] / max(counts["known"], 1),
                "recall_at_3": counts["known_hits"] / n, "words": counts["words"],
                "oov_rate_before": counts["oov"] / n, "oov_rate_after": counts["oov_after"] / n,
                "ms_per_suggestion": 1000 * counts["seconds"] / n,
                "personalize_seconds": {"median": float(np.median(seconds)), "max": float(max(seconds))},
                "state_bytes": {"median": int(np.median(state_bytes)), "max": int(max(state_bytes))},
                "kept_epochs": kept, "chosen": {c: chosen.count(c) for c in sorted(set(chosen))},
                "wall_seconds": time.perf_counter() - started}
            r = results[method]
            print(f"{method}: EMR3 {r['emr3']:.4f} KEMR3 {r['kemr3']:.4f} OOV {r['oov_rate_before']:.2%} -> "
                  f"{r['oov_rate_after']:.2%} ({r['wall_seconds']:.0f} s)", flush=True)

    result = {"run": os.path.basename(os.path.normpath(args.run)), "model_bytes": os.path.getsize(model_path),
              "encoder_bytes": os.path.getsize(args.char_encoder),
              "corpus": f"{args.format}:{os.path.basename(args.data)}", "partition": args.partition,
              "num_clients": args.num_clients, "users": len(users), "min_records": args.min_records,
              "history_weight": HISTORY_WEIGHT, "methods": results, "machine": result_file.machine(),
              "command": "python benchmarks/personalization/personalization_benchmark.py " + " ".join(sys.argv[1:])}
    g = results.get("global")
    words = next(iter(results.values()))["words"]
    lines = [f"{len(users)} held-out clients with at least {args.min_records} records "
             f"({args.format}:{os.path.basename(args.data)}, partition {args.partition}), run `{result['run']}`; "
             f"{words:,} test words (each client's last 10% of records, in time order); personalized on the first "
             "80%, early stopping and the grid on the next 10%.", "",
             "| method | EMR3 | KEMR3 | recall@3 | OOV rate before -> after | personalize s / user (median, max) "
             "| state bytes / user (median, max) | ms / suggestion |", "|---|---|---|---|---|---|---|---|"]
    for method, r in results.items():
        delta = f" ({(r['emr3'] - g['emr3']) * 100:+.2f})" if g is not None and method != "global" else ""
        lines.append(f"| {TITLES[method]} | {r['emr3']:.4f}{delta} | {r['kemr3']:.4f} | {r['recall_at_3']:.4f} "
                     f"| {r['oov_rate_before']:.2%} -> {r['oov_rate_after']:.2%} "
                     f"| {r['personalize_seconds']['median']:.1f}, {r['personalize_seconds']['max']:.1f} "
                     f"| {r['state_bytes']['median']:,}, {r['state_bytes']['max']:,} | {r['ms_per_suggestion']:.2f} |")
    chosen = {m: r["chosen"] for m, r in results.items() if r["chosen"]}
    if chosen:
        lines += ["", "Chosen per user on validation EMR3 (history weight, adapter grid entry): " + "; ".join(
            f"{m}: " + ", ".join(f"{c} x{k}" for c, k in v.items()) for m, v in chosen.items())]
    text = "\n".join(lines) + "\n"
    print(text)
    print("written:", *result_file.write(args.name, result, text, args.out, seeds=(
        "0 (`Session.personalize_sentences`' default seed: the adapters' initialisation and shuffling; the users "
        "are the run's held-out split, their records split in time order)")))


if __name__ == "__main__":
    main()

"""The user history on real per-user text: each held-out sender's mail, learnt in time order.

Held-out senders of a run's split with at least --min-messages messages; each
sender's messages (in time order, as the mbox reader gives them) split 8:1:1:
the first 80% are learnt by a fresh ``UserHistory`` (what the keyboard saw
this user type before), the next 10% choose the history weight, the last 10%
are the test. In validation and test the session streams every word as a
keyboard would: the top-3 suggestions before the word, then the word is
committed, and learnt (the keyboard keeps learning; ``--static`` freezes the
history after the first 80%).

Metrics (Shenoy & Nguyen's, micro-averaged over all test words): EMR3 (the
typed spelling among the 3 suggestions, words outside the vocabulary
included), KEMR3 (the same over in-vocabulary words), the OOV rate before (not
in the vocabulary) and after (neither in the vocabulary nor in the history at
that moment); the device cost: state bytes per user and the time per
suggestion.

    python benchmarks/personalization/user_history_benchmark.py --run RUN_DIR \\
        --data ../shared/data/spamassassin-ham/ham.mbox --format mbox --name user_history_spamassassin
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.user_stream import new_counts, open_run, split_in_time, stream  # noqa: E402

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def _stream(predictor, history, texts, weight: float, learn: bool, known) -> dict:
    """``stream`` over ``texts`` with ``history`` mixed in at ``weight``."""
    from keyboard_lm.text.tokenizer import sentences

    session = predictor.session(history=history, learn=learn)
    session.history_weight = weight
    c = new_counts()
    stream(session, [s for text in texts for s in sentences(text)], known, c)
    return c


def _metrics(c: dict) -> dict:
    n = max(c["words"], 1)
    # recall@3 as `keyboard-lm eval` counts it: a word outside the vocabulary is a miss even when suggested
    return {"emr3": c["hits"] / n, "kemr3": c["known_hits"] / max(c["known"], 1), "recall_at_3": c["known_hits"] / n,
            "words": c["words"],
            "oov_rate_before": c["oov"] / n, "oov_rate_after": c["oov_after"] / n,
            "ms_per_suggestion": 1000 * c["seconds"] / n}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="the run whose held-out senders are used (its model is exported "
                                                "next to it when --model is not given)")
    p.add_argument("--model", help="the run's exported .tflite (default: RUN/model.tflite, exported if missing)")
    p.add_argument("--data", required=True)
    p.add_argument("--format", default="mbox")
    p.add_argument("--min-messages", type=int, default=10)
    p.add_argument("--static", action="store_true", help="do not learn during validation and test")
    p.add_argument("--name", default="user_history")
    p.add_argument("--out", default=result_file.results_dir("personalization"))
    args = p.parse_args()

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.inference.user_history import UserHistory
    from keyboard_lm.text.tokenizer import sentences

    run, model_path, predictor, known = open_run(args.run, args.model)
    corpus = load_corpus(args.data, args.format)
    _, heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    users = [c for c in heldout if len(corpus.clients[c]) >= args.min_messages]
    if not users:
        raise SystemExit(f"no held-out client has {args.min_messages} messages")
    learnt, state_bytes = {}, []
    for user in users:
        past, _, _ = split_in_time(corpus.clients[user])
        h = UserHistory()
        for text in past:
            for sentence in sentences(text):
                h.learn(sentence)
        learnt[user] = h.to_dict()
        state_bytes.append(len(json.dumps(learnt[user], ensure_ascii=False, separators=(",", ":")).encode()))

    def run_split(part: int, weight: float) -> dict:
        total: dict = {}
        for user in users:
            texts = split_in_time(corpus.clients[user])[part]
            c = _stream(predictor, UserHistory.from_dict(learnt[user]), texts, weight, not args.static, known)
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
        return _metrics(total)

    validation = {w: run_split(1, w) for w in WEIGHTS}
    chosen = max(WEIGHTS, key=lambda w: (validation[w]["emr3"], -w))
    test = {w: run_split(2, w) for w in WEIGHTS}
    result = {"run": os.path.basename(os.path.normpath(args.run)), "model_bytes": os.path.getsize(model_path),
              "corpus": f"{args.format}:{os.path.basename(args.data)}", "users": len(users),
              "min_messages": args.min_messages, "learning_during_test": not args.static,
              "state_bytes": {"median": int(np.median(state_bytes)), "max": int(max(state_bytes))},
              "validation": validation, "test": test, "chosen_weight": chosen,
              "machine": result_file.machine()}
    g, t = test[0.0], test[chosen]
    lines = [f"{len(users)} held-out clients (senders, roles) with at least {args.min_messages} records "
             f"(messages, speeches) ({args.format}:{os.path.basename(args.data)}), run `{result['run']}`; "
             f"{g['words']:,} test words (each client's last 10% of records); history learnt from each client's "
             f"first 80%"
             f"{'' if args.static else ' and, as a keyboard does, from every word once it is typed'}. "
             f"History weight chosen on the middle 10%: **{chosen:g}**.", "",
             "| history weight | validation EMR3 | test EMR3 | test KEMR3 | test recall@3 | OOV rate after "
             "| ms per suggestion |", "|---|---|---|---|---|---|---|"]
    for w in WEIGHTS:
        v, x = validation[w], test[w]
        mark = " (global model)" if w == 0 else " (chosen)" if w == chosen else ""
        lines.append(f"| {w:g}{mark} | {v['emr3']:.4f} | {x['emr3']:.4f} | {x['kemr3']:.4f} | {x['recall_at_3']:.4f} "
                     f"| {x['oov_rate_after']:.2%} | {x['ms_per_suggestion']:.2f} |")
    lines += ["", f"Test: EMR3 {g['emr3']:.4f} -> {t['emr3']:.4f} ({(t['emr3'] - g['emr3']) * 100:+.2f} points), "
              f"KEMR3 {g['kemr3']:.4f} -> {t['kemr3']:.4f}, recall@3 {g['recall_at_3']:.4f} -> {t['recall_at_3']:.4f}, "
              f"OOV rate {t['oov_rate_before']:.2%} -> "
              f"{t['oov_rate_after']:.2%}. History state per client after the first 80%: median "
              f"{result['state_bytes']['median']:,} bytes, largest {result['state_bytes']['max']:,} bytes."]
    text = "\n".join(lines) + "\n"
    print(text)
    print("written:", *result_file.write(args.name, result, text, args.out, seeds=(
        "none (deterministic: the run's held-out users, each one's messages split in time order and learnt by the "
        "user history; nothing is sampled)")))


if __name__ == "__main__":
    main()

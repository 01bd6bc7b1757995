"""Base models' zero-shot quality on a user corpus's held-out users, before any training on it.

Each base is scored two ways on the held-out users of the corpus's default split (the users every run on
that corpus is scored on): with its own vocabulary, and as `train --init-from BASE` starts from it (the
target vocabulary of the corpus's training users, 10,000 words, the base's rows carried over and the words
it lacks started from its rarest rows: round 0 of a federated run). Ratios against the first base carry
paired 95% intervals over the held-out users.

    python benchmarks/base/base_zero_shot.py --bases base,runs/base_v2/w40k --corpus mail

Evaluation text is the held-out users' only; no base saw it (each base's corpus passed the overlap check).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402

CORPORA = {"mail": ("../shared/data/spamassassin-ham/ham.mbox", "mbox"),
           "shakespeare": ("../shared/data/tinyshakespeare/input.txt", "shakespeare"),
           "embedded": (None, "default")}


def score(base_spec: str, corpus, train_ids, heldout_ids, vocab_size: int) -> dict:
    """{"own": result, "target": result} of one base (``keyboard_lm.evaluation`` results)."""
    from keyboard_lm.evaluation import evaluate_model
    from keyboard_lm.models.language_model import assign_weights, build_model
    from keyboard_lm.models.run_dir import build_loaded_model
    from keyboard_lm.models.warm_start import load_warm_start
    from keyboard_lm.text import Vocabulary

    warm = load_warm_start(base_spec)
    own = evaluate_model(build_loaded_model(warm.base), corpus, heldout_ids, warm.base.vocab)
    target = warm.vocabulary(Vocabulary.from_sentences(corpus.sentences(train_ids), vocab_size), vocab_size)
    model = build_model(warm.model_config(target))
    assign_weights(model, warm.initial_weights(target))
    started = evaluate_model(model, corpus, heldout_ids, target)
    known = set(warm.base.vocab.tokens)
    covered = sum(t in known for t in target.tokens) / len(target)
    return {"own": own, "target": started, "base_words": len(warm.base.vocab), "target_words_covered": covered}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bases", default="base", help="comma-separated: `base` (the shipped one) or run directories")
    p.add_argument("--corpus", choices=sorted(CORPORA), default="mail")
    p.add_argument("--vocab-size", type=int, default=10000)
    p.add_argument("--name", default="base_zero_shot")
    p.add_argument("--out", default=result_file.results_dir("base"))
    args = p.parse_args()
    started = time.time()
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import intervals, paired_intervals

    path, fmt = CORPORA[args.corpus]
    corpus = load_corpus(path, fmt)
    train_ids, heldout_ids = split_clients(corpus.client_ids, SplitConfig())
    bases = [b for b in args.bases.split(",") if b]
    found = {b: score(b, corpus, train_ids, heldout_ids, args.vocab_size) for b in bases}
    rows = ["| base | vocabulary | base words | recall@1 | recall@3 (95%) | vs the first base (paired 95%) |",
            "|---|---|---:|---:|---|---|"]
    data = {"corpus": args.corpus, "heldout_users": len(heldout_ids), "bases": {}}
    for b, r in found.items():
        data["bases"][b] = {"base_words": r["base_words"], "target_words_covered": r["target_words_covered"]}
        for how, label in (("own", "its own"), ("target", f"the corpus's {args.vocab_size:,} (round 0)")):
            res, ref = r[how], found[bases[0]][how]
            lo, hi = intervals(res)["recall_at_3"]
            ratio = res["pooled"]["recall_at_3"] / ref["pooled"]["recall_at_3"]
            plo, phi = paired_intervals(res, ref)["recall_at_3"]
            data["bases"][b][how] = {**res["pooled"], "recall_at_3_interval": [lo, hi], "ratio": ratio,
                                     "paired_interval": [plo, phi]}
            rows.append(f"| {b} | {label} | {r['base_words']:,} | {res['pooled']['recall_at_1']:.4f} | "
                        f"{res['pooled']['recall_at_3']:.4f} [{lo:.4f}, {hi:.4f}] | "
                        f"{ratio:.3f}x [{plo:.3f}, {phi:.3f}] |")
    markdown = "\n".join([
        f"Zero-shot on the {args.corpus} corpus's {len(heldout_ids)} held-out users (default split), recall "
        "counted as `keyboard-lm eval` counts it (a word outside the vocabulary is a miss).", "", *rows, "",
        *(f"- {b}: {r['target_words_covered']:.1%} of the target vocabulary's words start trained"
          for b, r in found.items())])
    result_file.publish(args.name, data, markdown, args.out, started,
                        seeds="0 (the default split's seed, which picks the held-out users; scoring samples nothing)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

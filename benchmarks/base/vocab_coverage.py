"""How many of a user corpus's vocabulary words start trained at ``train --init-from base``: the share of each
evaluation corpus's 10k target words that a base vocabulary of N words holds, for several widths N of a
pretraining corpus's vocabulary, beside the shipped base's.

    python benchmarks/base/vocab_coverage.py --base-corpus build/base_corpus_v2/corpus.jsonl \\
        --widths 10000,20000,30000,40000,50000 --name vocab_coverage

The target vocabulary is the one `train` builds: the 10,000 most frequent tokens of the run's training
clients (the default split), specials included; a target word "starts trained" when the base's vocabulary
has it (its row is copied, ``models.warm_start``), and otherwise starts as the mean of the base's rarest rows.
A token of the base corpus is counted as `train` counts it (the project's tokenizer, per sentence).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402

#: name -> (path or None, format): the evaluation corpora, as `train` reads them.
CORPORA = {"mail": ("../shared/data/spamassassin-ham/ham.mbox", "mbox"),
           "shakespeare": ("../shared/data/tinyshakespeare/input.txt", "shakespeare"),
           "embedded": (None, "default")}


def target_vocab(path, fmt, size):
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.text.vocabulary import Vocabulary

    corpus = load_corpus(path, fmt)
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig())
    return Vocabulary.from_sentences(corpus.sentences(train_ids), size)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base-corpus", required=True, help="a base corpus.jsonl (benchmarks/base_corpus.sh)")
    p.add_argument("--widths", default="10000,20000,30000,40000,50000")
    p.add_argument("--vocab-size", type=int, default=10000, help="the target vocabulary's size (10000)")
    p.add_argument("--name", default="vocab_coverage")
    p.add_argument("--out", default=result_file.results_dir("base"))
    args = p.parse_args()
    started = time.time()

    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.models.warm_start import base_model_dir
    from keyboard_lm.text.vocabulary import Vocabulary

    base_corpus = load_corpus(args.base_corpus, "jsonl")
    counts = collections.Counter()
    for sentence in base_corpus.sentences(base_corpus.client_ids):
        counts.update(sentence)
    widths = [int(w) for w in args.widths.split(",")]
    bases = {f"{args.base_corpus} top {w:,}": set(Vocabulary.build(counts, w).tokens) for w in widths}
    shipped = Vocabulary.load(os.path.join(base_model_dir(), "vocab.txt"))
    bases = {f"shipped base ({len(shipped):,})": set(shipped.tokens), **bases}
    found = {}
    for name, (path, fmt) in CORPORA.items():
        if path is not None and not os.path.exists(path):
            print(f"{name}: {path} not found, skipped")
            continue
        target = target_vocab(path, fmt, args.vocab_size)
        words = [t for t in target.tokens if t not in target.special.tokens]
        found[name] = {b: sum(w in vocab for w in words) / len(words) for b, vocab in bases.items()}
    lines = [f"Share of each corpus's {args.vocab_size:,}-token target vocabulary (specials excluded) that the base "
             f"vocabulary holds: rows that start trained at `--init-from base`. Base corpus: "
             f"{sum(counts.values()):,} tokens, {len(counts):,} distinct.", "",
             "| base vocabulary | " + " | ".join(found) + " |", "|---|" + "---:|" * len(found)]
    for b in bases:
        lines.append(f"| {b} | " + " | ".join(f"{found[c][b]:.1%}" for c in found) + " |")
    result_file.publish(args.name, {"coverage": found, "base_tokens": sum(counts.values()), "distinct": len(counts)},
                    "\n".join(lines) + "\n", args.out, started,
                        seeds="0 (the default split's seed, which picks the training users whose words are "
                              "counted; counting samples nothing)")


if __name__ == "__main__":
    main()

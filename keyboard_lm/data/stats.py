"""Corpus statistics for ``keyboard-lm data stats`` (no TensorFlow)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.text import tokenizer
from keyboard_lm.text.vocabulary import DEFAULT_VOCAB_SIZE, Vocabulary


def corpus_stats(corpus: Corpus, vocab_size: int = DEFAULT_VOCAB_SIZE,
                 split: SplitConfig = SplitConfig()) -> dict[str, Any]:
    """Counts, vocabulary coverage and words-per-client distribution.

    The vocabulary is built on the training clients only (as training does);
    coverage is the share of word tokens that are in it, on training and on
    held-out clients; the OOV rate is 1 - coverage.
    """
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    sentences_of = {c: [s for t in texts for s in tokenizer.sentences(t)] for c, texts in corpus.clients.items()}
    words_per_client = np.array([sum(len(s) for s in sentences_of[c]) for c in corpus.client_ids])
    counts: collections.Counter[str] = collections.Counter()
    for c in train_ids:
        for s in sentences_of[c]:
            counts.update(s)
    vocab = Vocabulary.build(counts, vocab_size)

    def coverage(ids):
        total = hit = 0
        for c in ids:
            for s in sentences_of[c]:
                total += len(s)
                hit += sum(1 for w in s if w in vocab)
        return total, (hit / total if total else float("nan"))

    train_words, train_cov = coverage(train_ids)
    heldout_words, heldout_cov = coverage(heldout_ids)
    skipped_reasons = collections.Counter(s.reason for s in corpus.skipped)
    pct = lambda q: float(np.percentile(words_per_client, q))  # noqa: E731
    return {
        "corpus": corpus.name,
        "clients": len(corpus.clients),
        "train_clients": len(train_ids),
        "heldout_clients": len(heldout_ids),
        "examples": corpus.num_records,
        "sentences": sum(len(v) for v in sentences_of.values()),
        "words": int(words_per_client.sum()),
        "distinct_words_train": len(counts),
        "vocab_size": len(vocab),
        "vocab_coverage_train": train_cov,
        "vocab_coverage_heldout": heldout_cov,
        "oov_rate_train": 1 - train_cov,
        "oov_rate_heldout": 1 - heldout_cov,
        "train_words": train_words,
        "heldout_words": heldout_words,
        "words_per_client": {
            "min": int(words_per_client.min()), "p10": pct(10), "median": pct(50),
            "mean": float(words_per_client.mean()), "p90": pct(90), "max": int(words_per_client.max()),
        },
        "skipped_records": len(corpus.skipped),
        "skipped_by_reason": dict(skipped_reasons),
        "split": {"heldout_fraction": split.heldout_fraction, "seed": split.seed},
    }


def format_stats(stats: dict[str, Any]) -> str:
    """A readable multi-line report of ``corpus_stats``."""
    w = stats["words_per_client"]
    lines = [
        f"corpus              {stats['corpus']}",
        f"clients             {stats['clients']:,} ({stats['train_clients']:,} train, "
        f"{stats['heldout_clients']:,} held-out; seed {stats['split']['seed']})",
        f"examples            {stats['examples']:,} text records, {stats['sentences']:,} sentences",
        f"words               {stats['words']:,} ({stats['distinct_words_train']:,} distinct in train)",
        f"vocabulary          {stats['vocab_size']:,} tokens incl. 4 special, built on train clients",
        f"coverage            train {stats['vocab_coverage_train']:.2%}, held-out {stats['vocab_coverage_heldout']:.2%}",
        f"OOV rate            train {stats['oov_rate_train']:.2%}, held-out {stats['oov_rate_heldout']:.2%}",
        f"words per client    min {w['min']}, p10 {w['p10']:.0f}, median {w['median']:.0f}, "
        f"mean {w['mean']:.1f}, p90 {w['p90']:.0f}, max {w['max']:,}",
        f"skipped records     {stats['skipped_records']:,}"
        + "".join(f"\n  {n:>6,}  {reason}" for reason, n in sorted(stats["skipped_by_reason"].items())),
    ]
    return "\n".join(lines)

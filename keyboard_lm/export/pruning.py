"""A run with a smaller vocabulary: its least frequent words dropped, to make room in the file for a phrase table.

A vocabulary's ids are ordered by frequency on the training text (``Vocabulary.build``), and the CIFG's
embedding is tied (the softmax reads the same rows), so keeping the first ``vocab_size`` rows keeps the
most frequent words with their trained rows, and the ranking among them is unchanged: each row drop
only renormalizes the softmax. A dropped word becomes ``<oov>`` as an input and is never suggested.
One row costs ``embedding_dim`` bytes of int8 weights and its line in vocab.txt.
"""

from __future__ import annotations

import dataclasses

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import Run
from keyboard_lm.text.vocabulary import Vocabulary

EMBEDDING = "embedding/embeddings:0"


def pruned_run(run: Run, vocab_size: int) -> Run:
    """``run`` with only its first ``vocab_size`` words (special tokens included); the run itself is unchanged."""
    v = len(run.vocab)
    if vocab_size == v:
        return run
    if not len(run.vocab.special.tokens) < vocab_size < v:
        raise ConfigError(f"a pruned vocabulary must have between {len(run.vocab.special.tokens) + 1} and {v - 1} "
                          f"words, got {vocab_size}")
    if EMBEDDING not in run.weights or run.weights[EMBEDDING].shape[0] != v:
        raise ConfigError(f"{run.path}: no tied embedding of {v} rows to prune")
    weights = dict(run.weights)
    weights[EMBEDDING] = run.weights[EMBEDDING][:vocab_size]
    return dataclasses.replace(run, vocab=Vocabulary(run.vocab.tokens[:vocab_size], run.vocab.special),
                               weights=weights,
                               model_config=dataclasses.replace(run.model_config, vocab_size=vocab_size))

"""OOV-aware encoding, the per-user 8:1:1 split and the metrics of Shenoy & Nguyen.

The ordinary data path keeps only ids, so every OOV word becomes ``<oov>``.
Here each position keeps its spelling next to its id, so an adapter can be
fit on the user's own words and EMR3 can count a personal word as a hit.
"""
from __future__ import annotations

import collections
import dataclasses
import random

from keyboard_lm.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class OOVSentence:
    """One tokenized sentence: ids (``<oov>`` for unknown words) and the spelling at each position."""

    ids: tuple[int, ...]
    words: tuple[str, ...]


def encode_keeping_spelling(tokens, vocab) -> OOVSentence:
    """Encode tokens with ``vocab``; the spelling of every word, OOV included, is kept."""
    tokens = tuple(tokens)
    return OOVSentence(tuple(vocab.encode(tokens)), tokens)


def split_user(sentences, seed: int = 0) -> tuple[list, list, list]:
    """Shenoy's per-user split: 8:1:1 personalize / early stop / test, shuffled with ``seed``."""
    sentences = list(sentences)
    if len(sentences) < 3:
        raise ConfigError(f"a user needs at least 3 sentences for the 8:1:1 split, got {len(sentences)}")
    random.Random(seed).shuffle(sentences)
    n_val = n_test = max(1, len(sentences) // 10)
    n_train = len(sentences) - n_val - n_test
    return sentences[:n_train], sentences[n_train:n_train + n_val], sentences[n_train + n_val:]


def personal_vocabulary(sentences: list[OOVSentence], oov_id: int, n: int | None = 1000) -> list[str]:
    """The user's top-n OOV spellings by count (ties by first appearance); every one with ``n=None``."""
    counts = collections.Counter(w for s in sentences for i, w in zip(s.ids, s.words) if i == oov_id)
    return [w for w, _ in counts.most_common(n)]


def oov_rate(sentences: list[OOVSentence], oov_id: int, personal=()) -> float:
    """Share of words neither in the vocabulary nor in ``personal`` (before: personal=(), after: the user's list)."""
    personal = set(personal)
    total = sum(len(s.ids) for s in sentences)
    miss = sum(1 for s in sentences for i, w in zip(s.ids, s.words) if i == oov_id and w not in personal)
    return miss / total if total else 0.0


def exact_match(predictions, targets: list[str], known) -> dict:
    """EMR3 over all words (OOV included: a hit needs the spelling in the top 3) and KEMR3 over known words.

    Args:
      predictions: per position, the top-3 suggested spellings.
      targets: the true spelling at each position.
      known: the in-vocabulary spellings (``<oov>`` never matches a spelling).
    """
    if len(predictions) != len(targets):
        raise ConfigError(f"{len(predictions)} predictions for {len(targets)} targets")
    known = set(known)
    hits = [t in list(p)[:3] for p, t in zip(predictions, targets)]
    k = [h for h, t in zip(hits, targets) if t in known]
    return {"emr3": sum(hits) / len(hits) if hits else 0.0,
            "kemr3": sum(k) / len(k) if k else 0.0,
            "words": len(hits), "known_words": len(k)}

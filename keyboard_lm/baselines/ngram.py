"""Interpolated Kneser-Ney n-gram model over the shared vocabulary (no TensorFlow).

Hard et al. 2018 compare their CIFG with a Katz-smoothed 5-gram; we use
interpolated Kneser-Ney (Chen & Goodman 1998, eq. 7-9), which is at least as
strong.  Our own code: the metrics need the full next-word distribution over
the vocabulary at every position (for top-3 recall), which nltk's ``lm``
computes one word at a time (far too slow for 10k words x 20k events) and
kenlm does not expose.  Distributions are computed by numpy, one order at a
time, from the unigram up.

Sentences are ``<bos> w1 .. wn <eos>`` (one BOS, as the neural models see
them); a position uses as many previous tokens as it has, up to order - 1.
Lower orders use continuation counts (distinct left contexts), except for
n-grams that start a sentence, which have no left context and keep raw counts.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Iterable, Sequence

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spec import SPECIAL_TOKENS


@dataclasses.dataclass
class _Level:
    """Counts of one order: context -> (word ids, counts), context totals and types."""

    words: dict
    counts: dict
    totals: dict
    discount: float


class KneserNey:
    """Interpolated Kneser-Ney language model of a given order over ids 0..V-1."""

    def __init__(self, vocab_size: int, order: int = 5):
        if order < 1:
            raise ConfigError(f"n-gram order must be >= 1, got {order}")
        self.vocab_size = vocab_size
        self.order = order
        self.levels: list[_Level] = []

    def fit(self, sentences: Iterable[Sequence[int]]) -> "KneserNey":
        """Count n-grams of id sentences (without BOS/EOS; they are added here)."""
        sp = SPECIAL_TOKENS
        raw = [collections.Counter() for _ in range(self.order)]         # k-gram -> raw count
        left = [collections.defaultdict(set) for _ in range(self.order)]  # k-gram -> left tokens
        for ids in sentences:
            seq = (sp.bos_id, *ids, sp.eos_id)
            for t in range(1, len(seq)):
                for k in range(1, self.order + 1):
                    s = t - k + 1
                    if s < 0:
                        break
                    gram = seq[s:t + 1]
                    if k == self.order or s == 0:
                        raw[k - 1][gram] += 1
                    else:
                        left[k - 1][gram].add(seq[s - 1])
        self.levels = []
        for k in range(self.order):
            counts = collections.Counter(raw[k])
            for gram, lefts in left[k].items():
                counts[gram] += len(lefts)
            n1 = sum(1 for c in counts.values() if c == 1)
            n2 = sum(1 for c in counts.values() if c == 2)
            discount = min(max(n1 / (n1 + 2 * n2), 0.05), 0.95) if n1 + n2 else 0.5
            by_ctx = collections.defaultdict(list)
            for gram, c in counts.items():
                by_ctx[gram[:-1]].append((gram[-1], c))
            words, cnts, totals = {}, {}, {}
            for ctx, pairs in by_ctx.items():
                w = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
                c = np.fromiter((p[1] for p in pairs), np.float64, len(pairs))
                words[ctx], cnts[ctx], totals[ctx] = w, c, float(c.sum())
            self.levels.append(_Level(words, cnts, totals, discount))
        return self

    def distribution(self, context: Sequence[int]) -> np.ndarray:
        """p(. | context) over all V ids; uses the last order-1 tokens of ``context``."""
        if not self.levels:
            raise ConfigError("the n-gram model is not fitted")
        p = np.full(self.vocab_size, 1.0 / self.vocab_size)
        context = tuple(context[-(self.order - 1):]) if self.order > 1 else ()
        for k in range(self.order):
            if k > len(context):
                break
            ctx = context[len(context) - k:] if k else ()
            level = self.levels[k]
            total = level.totals.get(ctx)
            if not total:
                continue  # unseen context: keep the lower-order distribution
            w, c = level.words[ctx], level.counts[ctx]
            d = level.discount
            p = p * (d * len(w) / total)
            p[w] += np.maximum(c - d, 0.0) / total
        return p

    def predict_log_probs(self, x: np.ndarray) -> np.ndarray:
        """Log-probabilities [B, T, V] of the next token after each prefix of rows of ``x``.

        Like a recurrent model, each row starts without outside context; pad
        positions (id 0) get a uniform distribution.
        """
        x = np.asarray(x)
        out = np.empty((*x.shape, self.vocab_size), np.float32)
        uniform = np.full(self.vocab_size, -np.log(self.vocab_size), np.float32)
        for b in range(x.shape[0]):
            row = x[b].tolist()
            for t in range(x.shape[1]):
                if row[t] == SPECIAL_TOKENS.pad_id:
                    out[b, t] = uniform
                else:
                    out[b, t] = np.log(self.distribution(row[max(0, t - self.order + 2):t + 1]))
        return out

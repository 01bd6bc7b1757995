"""A cross-fitted Kneser-Ney n-gram as a teacher for centralized training.

On small text the CIFG wins on frequent words and loses on rarer ones, where
the 5-gram's phrase memory is stronger (docs/training.md: the two models'
top-3 lists are complementary).  Knowledge distillation (Hinton et al. 2015)
moves some of that into the neural model without changing what is exported:
each training target becomes a mixture of the one-hot next word and the
n-gram's next-word distribution,

    target = (1 - alpha) * onehot(y) + alpha * topk(p_ngram(. | context)),

so the loss is ``(1 - alpha) * CE(y, q) + alpha * CE(p_ngram, q)``.

An n-gram fitted on the same text would mostly echo the one-hot target (its
high-order counts include the very sentence being predicted).  The teacher is
therefore *cross-fitted* by user: the training clients are split into folds,
and each fold's targets come from an n-gram fitted on the other folds, so the
teacher predicts each user's text as the real 5-gram predicts an unseen user.
Validation and held-out clients never enter it.  No TensorFlow in this module.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from keyboard_lm.baselines.ngram import KneserNey
from keyboard_lm.config_checks import check_range
from keyboard_lm.data.examples import sentence_examples
from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spec import SPECIAL_TOKENS


@dataclasses.dataclass(frozen=True)
class TeacherConfig:
    """How the n-gram teacher is built and mixed into the targets.

    Attributes:
      weight: alpha, the teacher's share of each target (0: plain one-hot).
      order: n-gram order (5, the baseline the CIFG is compared with).
      folds: client folds for cross-fitting (each fold's teacher is fitted on
        the other folds, so at least 2).
      top_k: teacher probabilities kept per position, renormalized; the rest of
        a 10k-word distribution is smoothing mass that teaches little.
      seed: seed of the fold assignment.
    """

    weight: float = 0.0
    order: int = 5
    folds: int = 5
    top_k: int = 32
    seed: int = 0

    def __post_init__(self):
        check_range("n-gram teacher weight", self.weight, 0, 1, high_open=True)
        check_range("n-gram teacher order", self.order, 1)
        check_range("n-gram teacher folds", self.folds, 2)  # cross-fitting needs two
        check_range("n-gram teacher top_k", self.top_k, 1)


def client_folds(client_ids: Sequence[str], folds: int, seed: int = 0) -> list[list[str]]:
    """Split clients into ``folds`` disjoint, sorted groups (a seeded permutation dealt round-robin)."""
    ids = sorted(set(client_ids))
    if len(ids) < folds:
        raise ConfigError(f"n-gram teacher: {folds} folds need at least {folds} training clients, got {len(ids)}")
    order = np.random.RandomState(seed).permutation(len(ids))
    return [sorted(ids[i] for i in order[f::folds]) for f in range(folds)]


def teacher_top_k(ngram: KneserNey, x: np.ndarray, y: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """The n-gram's top-k next words and their renormalized probabilities at each target position.

    Args:
      ngram: a fitted model.
      x, y: [N, S] inputs and targets (rows start without outside context, as
        the recurrent model sees them).
      top_k: words kept per position.
    Returns:
      ids [N, S, k] int32 and probs [N, S, k] float32; pad targets get probability 0.
    """
    n, s = x.shape
    k = min(top_k, ngram.vocab_size)
    ids = np.zeros((n, s, k), np.int32)
    probs = np.zeros((n, s, k), np.float32)
    for b in range(n):
        row = x[b].tolist()
        for t in range(s):
            if y[b, t] == SPECIAL_TOKENS.pad_id:
                continue
            p = ngram.distribution(row[:t + 1])  # it keeps the last order - 1 tokens itself
            top = np.argpartition(-p, k - 1)[:k] if k < len(p) else np.arange(len(p))
            ids[b, t] = top
            probs[b, t] = p[top] / p[top].sum()
    return ids, probs


def cross_fitted_examples(client_sentences: Mapping[str, Sequence[Sequence[int]]], vocab_size: int,
                          seq_len: int, config: TeacherConfig, log=None) -> dict[str, np.ndarray]:
    """Training examples of the given clients with cross-fitted n-gram teacher targets.

    Args:
      client_sentences: each training client's sentences as vocabulary ids
        (without BOS/EOS).
      vocab_size: V of the vocabulary the ids come from.
      seq_len: tokens per example.
      config: the teacher's settings.
      log: optional callable for one progress line per fold.
    Returns:
      ``x``, ``y`` [N, S] int32 (the same chunks as ``data.examples``, grouped
      by fold) and ``teacher_ids`` / ``teacher_probs`` [N, S, k].
    """
    groups = client_folds(list(client_sentences), config.folds, config.seed)
    parts = []
    for f, fold in enumerate(groups):
        others = (s for g, ids in enumerate(groups) if g != f for cid in ids for s in client_sentences[cid])
        ngram = KneserNey(vocab_size, config.order).fit(others)
        pairs = [e for cid in fold for s in client_sentences[cid] for e in sentence_examples(s, seq_len)]
        x = np.array([p[0] for p in pairs], np.int32).reshape(-1, seq_len)
        y = np.array([p[1] for p in pairs], np.int32).reshape(-1, seq_len)
        parts.append((x, y, *teacher_top_k(ngram, x, y, config.top_k)))
        if log:
            log(f"n-gram teacher: fold {f + 1}/{len(groups)}, {len(fold)} clients, {len(x):,} examples")
    x, y, ids, probs = (np.concatenate(p) for p in zip(*parts))
    return {"x": x, "y": y, "teacher_ids": ids, "teacher_probs": probs}


def mixed_targets(y: np.ndarray, teacher_ids: np.ndarray, teacher_probs: np.ndarray,
                  weight: float) -> np.ndarray:
    """Pack ``(1 - weight) * onehot(y) + weight * teacher`` as [N, S, k + 1, 2] float32 (id, mass).

    Entry 0 is the one-hot target; pad targets get mass 0 everywhere, so the
    loss ignores them as the plain cross-entropy does.  Ids below 2**24 are
    exact in float32.
    """
    keep = (y != SPECIAL_TOKENS.pad_id)[..., None]
    ids = np.concatenate([y[..., None], teacher_ids], axis=-1).astype(np.float32)
    mass = np.concatenate([np.full(y.shape + (1,), 1.0 - weight, np.float32),
                           weight * teacher_probs], axis=-1) * keep
    return np.stack([ids, mass], axis=-1).astype(np.float32)

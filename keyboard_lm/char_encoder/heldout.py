"""What a char-encoder fit is measured on: the held-out words, their context positions and each epoch's metrics.

``heldout_split`` holds out a seeded share of the words; ``ContextPositions`` finds the positions whose next word
is one of them and keeps the frozen model's numbers there; ``JointEvaluation`` scores the device's situation, every
held-out word a personal word at once; ``Evaluator`` gives one epoch's metrics beside the references (what the
table's true rows score). ``fit`` trains against them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keyboard_lm.char_encoder.model import (
    FALSE_SUGGESTION_POSITIONS, JOINT_POSITIONS, N_SPECIAL, ContextExamples, context_statistics,
    third_best_excluding, top4_non_special)
from keyboard_lm.errors import ConfigError


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _logsumexp(z: np.ndarray, axis: int = -1) -> np.ndarray:
    top = np.max(z, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(z - top), axis=axis))


def _encode_all(encoder: tf.keras.Model, spellings: np.ndarray, batch: int = 4096) -> np.ndarray:
    if not len(spellings):
        return np.zeros((0, encoder.output_shape[-1]), np.float32)
    return np.concatenate([encoder(spellings[a:a + batch], training=False).numpy()
                           for a in range(0, len(spellings), batch)])


def _mean(x) -> float:
    return float(np.mean(x)) if np.size(x) else float("nan")


class JointEvaluation:
    """The device's situation on held-out text: every held-out word is a personal word at once.

    At a fixed sample of positions (any target), the held-out words' columns are
    replaced by h . enc(word) and everything else is the frozen model's.  Its
    cross-entropy and recall@3 (special tokens excluded) count both sides: a
    held-out word must win where it follows and lose where it does not, so an
    encoder cannot score by giving every word a large generic vector.  The
    references are the model itself (``_true_row``) and the closed vocabulary
    with the held-out words removed (``_removed``: they can never be suggested).
    """

    def __init__(self, contexts: ContextExamples, positions: np.ndarray, held_ids: np.ndarray, chunk: int = 2048):
        v = contexts.table.shape[0]
        self.h = contexts.outputs[positions]
        self.targets = contexts.targets[positions]
        held_local = np.full(v, -1, np.int64)
        held_local[held_ids] = np.arange(len(held_ids))
        self.target_local = held_local[self.targets]  # -1: the target is not a held-out word
        self.held_target = self.target_local >= 0
        n = len(positions)
        self.free_lse = np.empty(n, np.float32)  # over the frozen columns that stay (specials included)
        self.frozen_target = np.empty(n, np.float32)
        self.free_top_vals = np.empty((n, 4), np.float32)  # non-special frozen columns that stay
        self.free_top_ids = np.empty((n, 4), np.int64)
        true_ce, true_hit, removed_hit = np.empty(n), np.empty(n, bool), np.empty(n, bool)
        table_t = np.ascontiguousarray(contexts.table.T)
        for a in range(0, n, chunk):
            b = min(n, a + chunk)
            z = self.h[a:b] @ table_t
            rows, t = np.arange(b - a), self.targets[a:b]
            zt = z[rows, t]
            self.frozen_target[a:b] = zt
            true_ce[a:b] = _logsumexp(z) - zt
            vals, ids = top4_non_special(z)
            true_hit[a:b] = zt >= third_best_excluding(vals, ids, t)
            z[:, held_ids] = -np.inf
            self.free_lse[a:b] = _logsumexp(z)
            vals, ids = top4_non_special(z)
            self.free_top_vals[a:b], self.free_top_ids[a:b] = vals, ids
            removed_hit[a:b] = ~self.held_target[a:b] & (zt >= third_best_excluding(vals, ids, t))
        self.references = {
            "heldout_joint_ce_true_row": _mean(true_ce), "heldout_joint_recall_at_3_true_row": _mean(true_hit),
            "heldout_joint_word_recall_at_3_true_row": _mean(true_hit[self.held_target]),
            "heldout_joint_recall_at_3_removed": _mean(removed_hit), "heldout_joint_positions": n,
            "heldout_joint_word_positions": int(self.held_target.sum()),
        }

    def __call__(self, held_embeddings: np.ndarray) -> dict:
        scores = self.h @ held_embeddings.T  # [n, held]
        rows = np.flatnonzero(self.held_target)
        s_t = self.frozen_target.copy()
        s_t[rows] = scores[rows, self.target_local[rows]]
        ce = np.logaddexp(self.free_lse, _logsumexp(scores)) - s_t
        # competitors above the target: the 3 best remaining frozen columns (the target's own left out) ...
        own = self.free_top_ids == self.targets[:, None]
        ranked = np.where(own, -np.inf, self.free_top_vals)
        ranked = -np.sort(-ranked, axis=1)[:, :3]
        above = (ranked > s_t[:, None]).sum(1)
        # ... and the held-out words' encodings (the target's own score is not above itself)
        above += (scores > s_t[:, None]).sum(1)
        hit = above < 3
        return {"heldout_joint_ce": _mean(ce), "heldout_joint_recall_at_3": _mean(hit),
                "heldout_joint_word_recall_at_3": _mean(hit[self.held_target]), **self.references}


@dataclasses.dataclass(frozen=True, eq=False)
class HeldoutSplit:
    """Which of the given words are trained on and which are held out (sorted indices into the given order)."""

    train_index: np.ndarray
    heldout_index: np.ndarray
    is_held: np.ndarray  # [len(words)] bool

    @property
    def n_held(self) -> int:
        return len(self.heldout_index)


def heldout_split(n_words: int, fraction: float, seed: int) -> HeldoutSplit:
    """Hold out ``fraction`` of the words by a seeded permutation of the given order, drawn before anything else."""
    n_held = 0
    if fraction:
        n_held = max(1, int(round(n_words * fraction)))
        if n_held >= n_words:
            raise ConfigError(f"{n_words} words are too few to hold out {fraction:.0%} and train on the rest")
    perm = np.random.default_rng(seed).permutation(n_words)
    heldout_index, train_index = np.sort(perm[:n_held]), np.sort(perm[n_held:])
    is_held = np.zeros(n_words, bool)
    is_held[heldout_index] = True
    return HeldoutSplit(train_index, heldout_index, is_held)


def mean_row_reference(embeddings: np.ndarray, split: HeldoutSplit) -> dict:
    """The held-out words' MSE if each were encoded as the training words' mean row (none without held-out words)."""
    if not split.n_held:
        return {}
    mean_row = embeddings[split.train_index].mean(0)
    return {"heldout_mse_mean_row": _mean((embeddings[split.heldout_index] - mean_row) ** 2)}


def _checked_word_ids(word_ids, n_words: int, contexts: ContextExamples, embedding_dim: int) -> np.ndarray:
    """The words' vocabulary ids as int64, or ConfigError if they cannot index ``contexts``' table one to one."""
    if word_ids is None:
        raise ConfigError("in-context training needs word_ids: the vocabulary id of each word")
    word_ids = np.asarray(word_ids, np.int64)
    v = contexts.table.shape[0]
    if word_ids.shape != (n_words,):
        raise ConfigError(f"{len(word_ids)} word ids for {n_words} words")
    if contexts.table.shape[1] != embedding_dim:
        raise ConfigError(f"context embedding table is {contexts.table.shape[1]}-dim, "
                          f"char encoder expects {embedding_dim}")
    if word_ids.min() < N_SPECIAL or word_ids.max() >= v:
        raise ConfigError(f"word ids must be non-special vocabulary ids in [{N_SPECIAL}, {v})")
    if len(np.unique(word_ids)) != n_words:
        raise ConfigError("word ids repeat: each word needs its own vocabulary id")
    return word_ids


class ContextPositions:
    """The context positions whose next word is one of the given words, and the frozen model's numbers there.

    ``usable``: every such position; ``train_pos``/``held_pos``: those of training/held-out words;
    ``fs_pos``: a seeded sample (any usable target) where the held-out words must not reach the top 3;
    ``joint``: the joint held-out evaluation.  ``stats`` (rows by ``row_of``) is ``context_statistics``
    of the usable positions and ``references`` what the table's true rows score on the held-out metrics.
    Without contexts every set is empty and there is no reference.
    """

    def __init__(self, contexts: ContextExamples | None, word_ids, split: HeldoutSplit, embedding_dim: int,
                 use_context: bool, seed: int):
        self.contexts, self.word_ids, self.joint = contexts, None, None
        self.usable = self.train_pos = self.held_pos = self.fs_pos = np.zeros(0, np.int64)
        self.references = {}
        if contexts is None:
            return
        self.word_ids = _checked_word_ids(word_ids, len(split.is_held), contexts, embedding_dim)
        word_of_id = np.full(contexts.table.shape[0], -1, np.int64)
        word_of_id[self.word_ids] = np.arange(len(self.word_ids))
        self.pos_word = word_of_id[contexts.targets]  # -1: a special token or a word not given
        self.usable = np.flatnonzero(self.pos_word >= 0)
        self.train_pos = self.usable[~split.is_held[self.pos_word[self.usable]]]
        self.held_pos = self.usable[split.is_held[self.pos_word[self.usable]]]
        if use_context and not len(self.train_pos):
            raise ConfigError("no in-context training position: every target is a special token, "
                              "a held-out word or not among the words")
        self.stats = context_statistics(contexts.table, contexts.outputs[self.usable], contexts.targets[self.usable])
        self.row_of = np.full(len(contexts.targets), -1, np.int64)  # position -> row of ``stats``
        self.row_of[self.usable] = np.arange(len(self.usable))
        self.held_ids = self.word_ids[split.heldout_index]
        if split.n_held and len(self.usable):
            self._sample_heldout_evaluation(seed)
        if len(self.held_pos):  # the 3rd best rival logit and the others' logsumexp at each held-out position
            r = self.row_of[self.held_pos]
            self.held_thr = third_best_excluding(self.stats["top_vals"][r], self.stats["top_ids"][r],
                                                 contexts.targets[self.held_pos])
            self.held_others_lse = self.stats["others_lse"][r]
        self.references = self._true_row_references()

    def _sample_heldout_evaluation(self, seed: int):
        """Draw the false-suggestion and the joint positions, in this order, from generator [seed, 1]."""
        sample_rng = np.random.default_rng([seed, 1])
        n = len(self.usable)
        self.fs_pos = np.sort(sample_rng.choice(self.usable, min(n, FALSE_SUGGESTION_POSITIONS), replace=False))
        joint_pos = np.sort(sample_rng.choice(self.usable, min(n, JOINT_POSITIONS), replace=False))
        self.joint = JointEvaluation(self.contexts, joint_pos, self.held_ids)
        r = self.row_of[self.fs_pos]
        self.fs_thr = third_best_excluding(self.stats["top_vals"][r][:, None, :], self.stats["top_ids"][r][:, None, :],
                                           self.held_ids[None, :])  # [positions, held-out words]
        self.fs_other = self.contexts.targets[self.fs_pos][:, None] != self.held_ids[None, :]

    def _true_row_references(self) -> dict:
        """The held-out in-context metrics of the frozen model itself: the table's true rows as the encodings."""
        references = dict(self.joint.references) if self.joint is not None else {}
        if len(self.held_pos):
            true_logit = self.stats["true_logit"][self.row_of[self.held_pos]]
            references["heldout_context_ce_true_row"] = _mean(_softplus(self.held_others_lse - true_logit))
            references["heldout_recall_at_3_true_row"] = _mean(true_logit >= self.held_thr)
        if len(self.fs_pos):
            true_scores = self.contexts.outputs[self.fs_pos] @ self.contexts.table[self.held_ids].T
            references["heldout_false_top3_rate_true_row"] = _mean((true_scores >= self.fs_thr)[self.fs_other])
        return references

    def metrics(self, enc: np.ndarray, heldout_index: np.ndarray) -> dict:
        """The held-out in-context metrics of ``enc``, the encodings of all the given words."""
        m = {}
        if len(self.held_pos):
            s = np.einsum("nd,nd->n", self.contexts.outputs[self.held_pos], enc[self.pos_word[self.held_pos]])
            m["heldout_context_ce"] = _mean(_softplus(self.held_others_lse - s))
            m["heldout_recall_at_3"] = _mean(s >= self.held_thr)
        if len(self.fs_pos):
            scores = self.contexts.outputs[self.fs_pos] @ enc[heldout_index].T
            m["heldout_false_top3_rate"] = _mean((scores >= self.fs_thr)[self.fs_other])
        if self.joint is not None:
            m.update(self.joint(enc[heldout_index]))
        return m


def resolve_select_by(select_by: str | None, positions: ContextPositions, n_held: int) -> str:
    """The rule that picks the kept epoch: the given one if the data can measure it, else ConfigError."""
    if select_by is None:
        select_by = "joint" if positions.joint is not None else ("mse" if n_held else "last")
    needs = {"joint": positions.joint is not None, "context": len(positions.held_pos) > 0, "mse": n_held > 0,
             "last": True}
    if select_by not in needs:
        raise ConfigError(f"select_by must be 'joint', 'context', 'mse' or 'last', got {select_by!r}")
    if not needs[select_by]:
        raise ConfigError(f"select_by {select_by!r} needs held-out words" +
                          (" with in-context positions (contexts and heldout_fraction > 0)" if select_by != "mse" else
                           " (heldout_fraction > 0)"))
    return select_by


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluator:
    """One epoch's metrics of an encoder: the words' MSE, the held-out in-context metrics and the references."""

    spellings: np.ndarray
    embeddings: np.ndarray
    split: HeldoutSplit
    positions: ContextPositions
    references: dict

    def __call__(self, encoder: tf.keras.Model) -> dict:
        enc = _encode_all(encoder, self.spellings)
        train, held = self.split.train_index, self.split.heldout_index
        m = {"train_words_mse": _mean((enc[train] - self.embeddings[train]) ** 2)}
        if self.split.n_held:
            m["heldout_mse"] = _mean((enc[held] - self.embeddings[held]) ** 2)
        return {**m, **self.positions.metrics(enc, held), **self.references}

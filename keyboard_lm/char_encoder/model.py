"""Character-level word encoder: UTF-8 bytes -> CNN -> max-pool -> tied embedding space.

Shenoy & Nguyen (OOV adapter): byte embeddings E=100, a convolution with D=200
channels and kernel K=4, max-pooled over the spelling, then projected to the
model's embedding dimension (96 in Hard et al.). Trained centrally on the
in-vocabulary words with the language model frozen, by two terms:

* reproduction (MSE): encoder(spelling of w) ~= E[w], the word's row of the
  tied table, so unseen spellings land near words spelled alike;
* in context (cross-entropy): at positions of the model's training text with
  output h_t and next word w_t, the logits are h_t . E^T with w_t's own column
  replaced by h_t . encoder(spelling of w_t).  That is the situation at
  inference, where a personal word's logit h . enc(word) competes with the
  vocabulary's true logits, so the encoder learns what wins there rather than
  only what is close to E[w].

Because everything but the replaced column is frozen, the in-context loss of a
position is softplus(m_t - h_t . enc(w_t)) with m_t = logsumexp of the other
V - 1 logits, computed once before training: a step costs one encoder pass over
the target spellings, not a V-wide matmul.

A seeded share of the vocabulary words is held out (never an MSE target nor an
in-context target) to measure zero-shot quality on spellings the encoder has
never seen, and to pick the epoch that is kept.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf

from keyboard_lm.config_checks import check_fields
from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spec import SPECIAL_TOKENS
# The spelling encoding lives in text/ (no TensorFlow), so the device encodes exactly as training did.
from keyboard_lm.text.spelling import ALPHABET_SIZE, fits, spelling_length


@dataclasses.dataclass(frozen=True)
class CharEncoderConfig:
    """Hyperparameters of the char encoder; defaults are Shenoy & Nguyen's."""

    byte_dim: int = 100
    channels: int = 200
    kernel: int = 4
    max_bytes: int = 24
    embedding_dim: int = 96

    def __post_init__(self):
        check_fields(self, ("byte_dim", "channels", "kernel", "max_bytes", "embedding_dim"), 1, prefix="char encoder ")
        if self.max_bytes + 2 < self.kernel:
            raise ConfigError(f"char encoder max_bytes {self.max_bytes} + 2 is shorter than kernel {self.kernel}")


def build_char_encoder(config: CharEncoderConfig = CharEncoderConfig()) -> tf.keras.Model:
    """Keras model: int32 [batch, max_bytes + 2] byte ids -> float [batch, embedding_dim]."""
    ids = tf.keras.Input(shape=(config.max_bytes + 2,), dtype=tf.int32, name="bytes")
    x = tf.keras.layers.Embedding(ALPHABET_SIZE, config.byte_dim, name="byte_embedding")(ids)  # [b, L, E]
    x = tf.keras.layers.Conv1D(config.channels, config.kernel, activation="relu", name="conv")(x)  # [b, L-K+1, D]
    # padding positions also pass the conv; they are mostly ReLU(bias) and the
    # max-pool over the whole window keeps the encoder one fixed-shape graph for TFLite
    x = tf.keras.layers.GlobalMaxPooling1D(name="max_pool")(x)  # [b, D]
    out = tf.keras.layers.Dense(config.embedding_dim, name="projection")(x)  # [b, 96]
    return tf.keras.Model(ids, out, name="char_encoder")


#: Ids below this are the special tokens (pad, bos, eos, oov): never a word to encode or to predict.
N_SPECIAL = len(SPECIAL_TOKENS.ids)
#: Positions whose thresholds are sampled for the false-suggestion rate (pairs with every held-out word).
FALSE_SUGGESTION_POSITIONS = 2000
#: Positions (any target) of the joint held-out evaluation, where all held-out words are personal at once.
JOINT_POSITIONS = 10_000


@dataclasses.dataclass(frozen=True)
class ContextExamples:
    """What the frozen language model computed on its training text: the in-context training data.

    Attributes:
      table: [V, D] the tied embedding table as the model computes with it.
      outputs: [N, D] the model output h_t at each position (the input of the tied output layer).
      targets: [N] vocabulary id of the word that followed; special-token targets are skipped.
    """

    table: np.ndarray
    outputs: np.ndarray
    targets: np.ndarray

    def __post_init__(self):
        table = np.asarray(self.table, np.float32)
        outputs = np.asarray(self.outputs, np.float32)
        targets = np.asarray(self.targets)
        if table.ndim != 2 or table.shape[0] <= N_SPECIAL:
            raise ConfigError(f"context embedding table must be [V, D] with V > {N_SPECIAL}, got shape {table.shape}")
        if outputs.ndim != 2 or outputs.shape[1] != table.shape[1]:
            raise ConfigError(f"context outputs have shape {outputs.shape}, expected [N, {table.shape[1]}] "
                              "(the embedding table's dimension)")
        if targets.shape != (outputs.shape[0],) or (targets.size and not np.issubdtype(targets.dtype, np.integer)):
            raise ConfigError(f"context targets have shape {targets.shape} and dtype {targets.dtype}, "
                              f"expected {outputs.shape[0]} integer ids")
        if targets.size and (targets.min() < 0 or targets.max() >= table.shape[0]):
            raise ConfigError(f"context targets must be vocabulary ids in [0, {table.shape[0]}), "
                              f"got [{targets.min()}, {targets.max()}]")
        if not (np.isfinite(table).all() and np.isfinite(outputs).all()):
            raise ConfigError("context embedding table or outputs contain NaN/Inf")
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "targets", targets.astype(np.int64))


@dataclasses.dataclass
class CharEncoderFit:
    """A trained encoder and how it got there.

    Attributes:
      encoder: the Keras encoder with the kept epoch's weights.
      history: one dict of metrics per epoch; entry 0 is the untrained encoder.
      best_epoch: the epoch whose weights ``encoder`` holds (>= 1).
      train_index, heldout_index: indices into the ``words`` given for training and held out.
      settings: the training settings (numbers only; no word).
    """

    encoder: tf.keras.Model
    history: list[dict]
    best_epoch: int
    train_index: np.ndarray
    heldout_index: np.ndarray
    settings: dict

    @property
    def metrics(self) -> dict:
        """The metrics of the kept epoch."""
        return self.history[self.best_epoch]

    @property
    def train_losses(self) -> list[float]:
        """Mean training loss of each epoch (1..epochs)."""
        return [h["train_loss"] for h in self.history[1:]]


def vocabulary_word_ids(tokens: Sequence[str], max_bytes: int) -> tuple[list[str], np.ndarray, int]:
    """(words, their ids, number left out) of a vocabulary in id order: specials and over-long words left out.

    Over-long words cannot be encoded without truncation (two would collide), so
    they are neither trained on nor counted in any metric.
    """
    words, ids, too_long = [], [], 0
    for i, tok in enumerate(tokens):
        if i < N_SPECIAL:
            continue
        if not fits(tok, max_bytes):
            too_long += 1
            continue
        words.append(tok)
        ids.append(i)
    return words, np.asarray(ids, np.int64), too_long


def top4_non_special(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 4 largest logits among the non-special columns of each row, descending: (values, ids)."""
    zz = z[:, N_SPECIAL:]
    k = min(4, zz.shape[1])
    part = np.argpartition(-zz, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(zz, part, 1)
    order = np.argsort(-vals, axis=1, kind="stable")
    vals, ids = np.take_along_axis(vals, order, 1), np.take_along_axis(part, order, 1) + N_SPECIAL
    if k < 4:  # a vocabulary of fewer than 4 words: the missing ranks never beat anything
        pad = 4 - k
        vals = np.concatenate([vals, np.full((len(z), pad), -np.inf, np.float32)], 1)
        ids = np.concatenate([ids, np.full((len(z), pad), -1, ids.dtype)], 1)
    return vals.astype(np.float32), ids


def third_best_excluding(top_vals: np.ndarray, top_ids: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """The 3rd largest non-special logit of each position once ``word_ids``' own column is taken out.

    A word whose (replaced) logit reaches this value is in the top 3 with the
    special tokens excluded.  ``top_vals``/``top_ids``: [..., 4] from the full
    logits; ``word_ids`` broadcasts against [...].
    """
    in_top3 = (top_ids[..., :3] == np.asarray(word_ids)[..., None]).any(-1)
    return np.where(in_top3, top_vals[..., 3], top_vals[..., 2])


def context_statistics(table: np.ndarray, outputs: np.ndarray, targets: np.ndarray,
                       chunk: int = 2048) -> dict[str, np.ndarray]:
    """What the in-context loss and recall need from the frozen model, computed once.

    Returns per position: ``others_lse`` (logsumexp of the V - 1 logits other
    than the target's, specials included), ``true_logit`` (h . E[target]) and
    ``top_vals``/``top_ids`` ([N, 4], the largest non-special logits).
    """
    n = len(targets)
    out = {"others_lse": np.empty(n, np.float32), "true_logit": np.empty(n, np.float32),
           "top_vals": np.empty((n, 4), np.float32), "top_ids": np.empty((n, 4), np.int64)}
    table_t = np.ascontiguousarray(table.T)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        z = outputs[a:b] @ table_t  # [chunk, V]
        rows, t = np.arange(b - a), targets[a:b]
        out["true_logit"][a:b] = z[rows, t]
        out["top_vals"][a:b], out["top_ids"][a:b] = top4_non_special(z)
        z[rows, t] = -np.inf
        top = z.max(1, keepdims=True)
        out["others_lse"][a:b] = top[:, 0] + np.log(np.exp(z - top).sum(1))
    return out


def vocabulary_targets(vocab, embedding_table: np.ndarray, *, max_bytes: int | None = None
                       ) -> tuple[list[str], np.ndarray]:
    """The trainable (word, embedding row) pairs of a vocabulary: specials (and, given ``max_bytes``,
    words longer than that) left out."""
    if max_bytes is None:
        max_bytes = max((spelling_length(t) for t in vocab.tokens), default=0)
    words, ids, _ = vocabulary_word_ids(vocab.tokens, max_bytes)
    return words, np.asarray(embedding_table)[ids]

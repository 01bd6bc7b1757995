"""Character-level word encoder: UTF-8 bytes -> CNN -> max-pool -> tied embedding space.

Shenoy & Nguyen (OOV adapter): byte embeddings E=100, a convolution with D=200
channels and kernel K=4, max-pooled over the spelling, then projected to the
model's embedding dimension (96 in Hard et al.). Trained centrally to reproduce
the embeddings of in-vocabulary words (a regression on the frozen tied table),
so unseen spellings land near words spelled alike.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keyboard_lm.errors import ConfigError

PAD, BOW, EOW = 0, 1, 2  # byte ids are shifted by 3 to leave room for these


@dataclasses.dataclass(frozen=True)
class CharEncoderConfig:
    """Hyperparameters of the char encoder; defaults are Shenoy & Nguyen's."""

    byte_dim: int = 100
    channels: int = 200
    kernel: int = 4
    max_bytes: int = 24
    embedding_dim: int = 96

    def __post_init__(self):
        for name in ("byte_dim", "channels", "kernel", "max_bytes", "embedding_dim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"char encoder {name} must be >= 1, got {getattr(self, name)}")
        if self.max_bytes + 2 < self.kernel:
            raise ConfigError(f"char encoder max_bytes {self.max_bytes} + 2 is shorter than kernel {self.kernel}")


def encode_spellings(words, max_bytes: int) -> np.ndarray:
    """Words -> int32 [n, max_bytes + 2] byte ids with begin/end markers.

    Raises ConfigError naming the word if it is empty/whitespace or longer than
    ``max_bytes`` UTF-8 bytes (no silent truncation: two long words must not collide).
    """
    out = np.full((len(words), max_bytes + 2), PAD, dtype=np.int32)
    for i, word in enumerate(words):
        if not isinstance(word, str) or not word.strip():
            raise ConfigError(f"word {i} is empty or whitespace: {word!r}")
        raw = word.encode("utf-8")
        if len(raw) > max_bytes:
            raise ConfigError(f"word {i} {word[:40]!r} is {len(raw)} UTF-8 bytes, above the encoder's limit of {max_bytes}")
        ids = [BOW] + [b + 3 for b in raw] + [EOW]
        out[i, : len(ids)] = ids
    return out


def build_char_encoder(config: CharEncoderConfig = CharEncoderConfig()) -> tf.keras.Model:
    """Keras model: int32 [batch, max_bytes + 2] byte ids -> float [batch, embedding_dim]."""
    ids = tf.keras.Input(shape=(config.max_bytes + 2,), dtype=tf.int32, name="bytes")
    x = tf.keras.layers.Embedding(256 + 3, config.byte_dim, name="byte_embedding")(ids)  # [b, L, E]
    x = tf.keras.layers.Conv1D(config.channels, config.kernel, activation="relu", name="conv")(x)  # [b, L-K+1, D]
    # padding positions also pass the conv; they are mostly ReLU(bias) and the
    # max-pool over the whole window keeps the encoder one fixed-shape graph for TFLite
    x = tf.keras.layers.GlobalMaxPooling1D(name="max_pool")(x)  # [b, D]
    out = tf.keras.layers.Dense(config.embedding_dim, name="projection")(x)  # [b, 96]
    return tf.keras.Model(ids, out, name="char_encoder")


def train_char_encoder(
    words,
    embeddings: np.ndarray,
    *,
    config: CharEncoderConfig = CharEncoderConfig(),
    epochs: int = 30,
    batch_size: int = 128,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> tuple[tf.keras.Model, list[float]]:
    """Fit the encoder so encoder(spelling of w) ~= E[w] for in-vocabulary words.

    Args:
      words: spellings (special tokens excluded by the caller).
      embeddings: float [len(words), embedding_dim], rows of the frozen tied table.
    Returns:
      (encoder, per-epoch mean squared error).
    """
    if len(words) != len(embeddings):
        raise ConfigError(f"{len(words)} words but {len(embeddings)} embedding rows")
    if embeddings.shape[1] != config.embedding_dim:
        raise ConfigError(f"embeddings are {embeddings.shape[1]}-dim, char encoder expects {config.embedding_dim}")
    tf.keras.utils.set_random_seed(seed)
    x = encode_spellings(list(words), config.max_bytes)
    y = np.asarray(embeddings, dtype=np.float32)
    encoder = build_char_encoder(config)
    encoder.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss="mse")
    hist = encoder.fit(x, y, epochs=epochs, batch_size=batch_size, shuffle=True, verbose=0)
    return encoder, [float(v) for v in hist.history["loss"]]


def vocabulary_targets(vocab, embedding_table: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The trainable (word, embedding row) pairs of a vocabulary: specials and over-long words left out."""
    n_special = len(vocab.special.tokens)
    words, rows = [], []
    for i, tok in enumerate(vocab.tokens[n_special:], start=n_special):
        words.append(tok)
        rows.append(i)
    return words, np.asarray(embedding_table)[rows]

"""Int8 weight quantization, one definition for training and export.

Scheme: symmetric, per tensor, 8 bits: ``scale = max|w| / 127`` and
``q = clip(round_half_even(w / scale), -127, 127)``; the weight used is
``q * scale``.  It is what the exporter writes (int8 tensor + scale, expanded
by a TFLite DEQUANTIZE op) and what a model built with
``weight_quantization="int8"`` computes with during training
(quantization-aware training, straight-through gradients; Jacob et al. 2018).
A model trained that way is exported without changing a single weight, so
the phone computes what the trainer evaluated.

Per-tensor, not per-channel: per-channel scales with TFLite's int64 zero
points cost 12 bytes per output channel (120 KB for the 10k-word embedding),
more than the 1.4 MiB budget leaves.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

QMAX = 127


def int8_scale_np(w: np.ndarray) -> np.float32:
    """The per-tensor scale, in float32 exactly as ``fake_quant_int8`` computes it."""
    m = np.float32(np.abs(w).max())
    return np.float32(m / np.float32(QMAX)) if m > 0 else np.float32(1.0)


def quantize_int8_np(w: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """``w`` (float32) -> (int8 values, float32 scale)."""
    w = np.asarray(w, np.float32)
    s = int8_scale_np(w)
    return np.clip(np.round(w / s), -QMAX, QMAX).astype(np.int8), s


def fake_quant_int8(w: tf.Tensor) -> tf.Tensor:
    """``q * scale`` in the forward pass, identity gradient (straight-through).

    ``x + stop_gradient(round(x) - x)`` is exact in float32 here (|x| <= 127,
    |round(x) - x| <= 0.5), so the forward value equals ``quantize_int8_np``'s.
    """
    m = tf.stop_gradient(tf.reduce_max(tf.abs(w)))
    s = tf.where(m > 0.0, m / float(QMAX), tf.ones_like(m))
    x = tf.clip_by_value(w / s, -float(QMAX), float(QMAX))
    return (x + tf.stop_gradient(tf.round(x) - x)) * s

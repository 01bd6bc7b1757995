"""Int8 quantization, one definition for training and export.

Two schemes, named as the exporter's modes (``keyboard-lm export --quantization``):

* ``weight-only``: every weight matrix is used as its int8 rounding,
  symmetric per tensor: ``scale = max|w| / 127``,
  ``q = clip(round_half_even(w / scale), -127, 127)``, weight ``q * scale``.
  The exporter stores ``q`` and ``scale`` and a TFLite DEQUANTIZE op expands
  them; arithmetic stays float32.
* ``dynamic-range``: the same weights, and in addition every input of a
  matrix product is rounded to int8 per row, asymmetrically, exactly as
  TFLite's hybrid FULLY_CONNECTED kernels do at run time
  (``asymmetric_quantize_inputs``, which TF 2.14's converter sets).

A model built with ``ModelConfig(quantization=...)`` computes with these
roundings during training (quantization-aware training; straight-through
gradients, Jacob et al. 2018), so exporting it in the same mode changes
nothing: the phone computes what the trainer evaluated, up to float32
summation order.

Per-tensor weight scales, not per-channel: per-channel scales with TFLite's
int64 zero points cost 12 bytes per output channel (120 KB for the 10k-word
embedding), more than the 1.4 MiB budget leaves.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keyboard_lm.models.config import QUANTIZATION

QMAX = 127


# --- weights: symmetric int8 per tensor -------------------------------------------------------

def int8_scale_np(w: np.ndarray) -> np.float32:
    """The per-tensor scale, in float32 exactly as ``fake_quant_weights`` computes it."""
    m = np.float32(np.abs(w).max())
    return np.float32(m / np.float32(QMAX)) if m > 0 else np.float32(1.0)


def quantize_int8_np(w: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """``w`` (float32) -> (int8 values, float32 scale)."""
    w = np.asarray(w, np.float32)
    s = int8_scale_np(w)
    return np.clip(np.round(w / s), -QMAX, QMAX).astype(np.int8), s


def rounding_error_steps(w: np.ndarray) -> float:
    """How far int8 rounding moves ``w``, in quantization steps: 0 on the grid, at most 0.5."""
    q, s = quantize_int8_np(w)
    return float(np.abs(np.asarray(w, np.float32) / s - q.astype(np.float32)).max())


def _ste(x: tf.Tensor, rounded: tf.Tensor) -> tf.Tensor:
    """``rounded`` forward, identity gradient.  Exact in float32 when |x| <= 255 and
    |rounded - x| <= 0.5 (Sterbenz), so the forward value is ``rounded`` bit for bit."""
    return x + tf.stop_gradient(rounded - x)


def fake_quant_weights(w: tf.Tensor) -> tf.Tensor:
    """``q * scale`` in the forward pass, identity gradient; equals ``quantize_int8_np``'s."""
    m = tf.stop_gradient(tf.reduce_max(tf.abs(w)))
    s = tf.where(m > 0.0, m / float(QMAX), tf.ones_like(m))
    x = tf.clip_by_value(w / s, -float(QMAX), float(QMAX))
    return _ste(x, tf.round(x)) * s


# --- activations: TFLite's asymmetric int8 input quantization, per row --------------------------

def _round_half_away(x):
    """C's round(): halves away from zero (TFLite's TfLiteRound)."""
    return tf.sign(x) * tf.floor(tf.abs(x) + 0.5)


def fake_quant_activations(x: tf.Tensor) -> tf.Tensor:
    """Each row (last axis) of ``x`` as a hybrid kernel sees it after int8 rounding.

    TFLite (tensor_utils AsymmetricQuantizeFloats): rmin = min(0, min x),
    rmax = max(0, max x), scale = (rmax - rmin) / 255 in double, the zero
    point from whichever end has less error, rounded and clamped to
    [-128, 127]; q = clamp(round(zp + x * float(1 / scale)), -128, 127); the
    product then uses (q - zp) * scale.  Straight-through gradient.
    """
    xs = tf.stop_gradient(x)
    rmin = tf.cast(tf.minimum(0.0, tf.reduce_min(xs, axis=-1, keepdims=True)), tf.float64)
    rmax = tf.cast(tf.maximum(0.0, tf.reduce_max(xs, axis=-1, keepdims=True)), tf.float64)
    scale = tf.where(rmax > rmin, (rmax - rmin) / 255.0, tf.ones_like(rmax))
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    zero_point = tf.where(128.0 + tf.abs(rmin / scale) < 127.0 + tf.abs(rmax / scale), from_min, from_max)
    zero_point = tf.cast(tf.clip_by_value(_round_half_away(zero_point), -128.0, 127.0), tf.float32)
    scale32 = tf.cast(scale, tf.float32)
    inverse = tf.cast(1.0 / tf.cast(scale32, tf.float64), tf.float32)
    y = zero_point + x * inverse
    q = tf.clip_by_value(_ste(y, _round_half_away(y)), -128.0, 127.0)
    return (q - zero_point) * scale32


class Quantizer:
    """What a layer applies to its weights and to the inputs of its matrix products."""

    def __init__(self, mode: str = "none"):
        if mode not in QUANTIZATION:
            raise ValueError(f"unknown quantization {mode!r}")
        self.mode = mode

    def weights(self, w):
        return w if self.mode == "none" else fake_quant_weights(w)

    def inputs(self, x):
        return fake_quant_activations(x) if self.mode == "dynamic-range" else x

"""Next-word metrics as Keras metrics (sum-based, so TFF can aggregate them).

* recall@k (Hard et al. 2018, sec. 5): share of next-word events whose target
  is among the k most likely predictions.  Events are all targets except pad
  and EOS.  Special tokens (pad, BOS, EOS, OOV) are never predicted, so an OOV
  target is always a miss.
* in-vocabulary accuracy@k (Ro et al.): the same over targets that are
  neither OOV, EOS nor special.
* loss: mean cross-entropy over all non-pad targets (EOS and OOV included);
  perplexity = exp(loss).
* OOV rate: share of events whose target is OOV.
"""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.text.spec import SPECIAL_TOKENS

_SP = SPECIAL_TOKENS
# Comparisons use tf.equal/tf.not_equal, never == / !=: in TFF's graph-mode
# serialization Python's operators compare tensor objects, not values.


def mask_special_logits(logits: tf.Tensor) -> tf.Tensor:
    """Logits with the special tokens pushed to -inf along the last axis."""
    v = tf.shape(logits)[-1]
    special_ids = tf.constant(_SP.ids, dtype=tf.int32)  # built per graph, never captured eagerly
    is_special = tf.reduce_any(tf.equal(tf.range(v)[:, None], special_ids[None, :]), axis=-1)
    return tf.where(is_special, tf.constant(-1e9, logits.dtype), logits)


def _hits(y_true, logits, k):
    """[N] bool: target in top-k of non-special predictions; y_true flat [N]."""
    _, top = tf.math.top_k(mask_special_logits(logits), k=k)  # [N, k]
    return tf.reduce_any(tf.equal(top, y_true[:, None]), axis=-1)


class _RatioMetric(tf.keras.metrics.Metric):
    """numerator / denominator accumulated over batches."""

    def __init__(self, name, **kwargs):
        super().__init__(name=name, **kwargs)
        self.numerator = self.add_weight("numerator", initializer="zeros", dtype=tf.float64)
        self.denominator = self.add_weight("denominator", initializer="zeros", dtype=tf.float64)

    def _add(self, num, den):
        self.numerator.assign_add(tf.cast(num, tf.float64))
        self.denominator.assign_add(tf.cast(den, tf.float64))

    def result(self):
        return tf.math.divide_no_nan(self.numerator, self.denominator)

    def reset_state(self):
        self.numerator.assign(0.0)
        self.denominator.assign(0.0)


def _flatten(y_true, y_pred):
    y_true = tf.cast(tf.reshape(y_true, [-1]), tf.int32)
    logits = tf.reshape(y_pred, [-1, tf.shape(y_pred)[-1]])
    return y_true, logits


class RecallAtK(_RatioMetric):
    """Hard et al.'s recall@k; OOV targets count as misses."""

    def __init__(self, k: int, name: str | None = None, **kwargs):
        super().__init__(name or f"recall_at_{k}", **kwargs)
        self.k = k

    def update_state(self, y_true, y_pred, sample_weight=None):
        y, logits = _flatten(y_true, y_pred)
        event = tf.not_equal(y, _SP.pad_id) & tf.not_equal(y, _SP.eos_id)
        y, logits = tf.boolean_mask(y, event), tf.boolean_mask(logits, event)
        self._add(tf.reduce_sum(tf.cast(_hits(y, logits, self.k), tf.int64)), tf.size(y))

    def get_config(self):
        return {**super().get_config(), "k": self.k}


class InVocabAccuracyAtK(RecallAtK):
    """Ro et al.'s in-vocabulary accuracy@k: OOV and EOS targets excluded."""

    def __init__(self, k: int, name: str | None = None, **kwargs):
        super().__init__(k, name or f"iv_accuracy_at_{k}", **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y, logits = _flatten(y_true, y_pred)
        event = y >= len(_SP.tokens)
        y, logits = tf.boolean_mask(y, event), tf.boolean_mask(logits, event)
        self._add(tf.reduce_sum(tf.cast(_hits(y, logits, self.k), tf.int64)), tf.size(y))


class MaskedCrossEntropy(_RatioMetric):
    """Mean cross-entropy over non-pad targets (perplexity = exp of it)."""

    def __init__(self, name: str = "loss", **kwargs):
        super().__init__(name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y, logits = _flatten(y_true, y_pred)
        keep = tf.not_equal(y, _SP.pad_id)
        y, logits = tf.boolean_mask(y, keep), tf.boolean_mask(logits, keep)
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        self._add(tf.reduce_sum(tf.cast(ce, tf.float64)), tf.size(y))


class OOVRate(_RatioMetric):
    """Share of next-word events (non-pad, non-EOS targets) that are OOV."""

    def __init__(self, name: str = "oov_rate", **kwargs):
        super().__init__(name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y, _ = _flatten(y_true, y_pred)
        event = tf.not_equal(y, _SP.pad_id) & tf.not_equal(y, _SP.eos_id)
        self._add(tf.reduce_sum(tf.cast(tf.equal(tf.boolean_mask(y, event), _SP.oov_id), tf.int64)),
                  tf.reduce_sum(tf.cast(event, tf.int64)))


class TokenCount(_RatioMetric):
    """Number of next-word events seen (numerator only), for weighting and reports."""

    def __init__(self, name: str = "num_events", **kwargs):
        super().__init__(name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y = tf.reshape(tf.cast(y_true, tf.int32), [-1])
        self._add(tf.reduce_sum(tf.cast(tf.not_equal(y, _SP.pad_id) & tf.not_equal(y, _SP.eos_id), tf.int64)), 0)

    def result(self):
        return self.numerator


def metric_list():
    """Fresh metric objects, the same set for Keras, TFF and ``keyboard-lm eval``."""
    return [RecallAtK(1), RecallAtK(3), InVocabAccuracyAtK(1), InVocabAccuracyAtK(3),
            MaskedCrossEntropy(), OOVRate(), TokenCount()]


def loss_fn():
    """Training loss: sparse cross-entropy from logits, pad targets ignored."""
    return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=_SP.pad_id)


def mixed_target_loss(y_true, y_pred):
    """Cross-entropy against a sparse soft target, averaged over non-pad positions.

    ``y_true`` is [B, S, k, 2]: (word id, probability mass) pairs per position
    (``training.ngram_teacher.mixed_targets``), mass 0 at pad positions;
    ``y_pred`` is [B, S, V] logits.  With all mass on one id this equals
    ``loss_fn()`` (Hinton et al. 2015's distillation loss, one term per kept id).
    """
    ids = tf.cast(y_true[..., 0], tf.int32)  # [B, S, k]
    mass = tf.cast(y_true[..., 1], y_pred.dtype)  # [B, S, k]
    log_q = tf.gather(tf.nn.log_softmax(y_pred), ids, batch_dims=2)  # [B, S, k]
    positions = tf.reduce_sum(tf.cast(tf.reduce_sum(mass, axis=-1) > 0, y_pred.dtype))
    return -tf.reduce_sum(mass * log_q) / tf.maximum(positions, 1.0)

"""The numpy evaluation and the Keras metrics agree, and follow the papers' definitions."""

import numpy as np
import tensorflow as tf

from keyboard_lm.evaluation import position_stats
from keyboard_lm.models.metrics import metric_list


def test_special_tokens_are_never_predicted_and_oov_targets_miss():
    v = 10
    logits = np.zeros((3, v), np.float32)
    logits[:, 3] = 50.0  # OOV scores highest everywhere
    logits[0, 7] = 5.0
    logits[1, 8] = 5.0
    logits[2, 2] = 60.0  # EOS highest
    targets = np.array([7, 3, 9])
    s = position_stats(logits, targets)
    assert s["hit1"].tolist() == [True, False, False]  # OOV target: a miss, though OOV scored highest
    assert s["events"].tolist() == [True, True, True]
    assert s["iv_events"].tolist() == [True, False, True]


def test_numpy_metrics_equal_keras_metrics():
    rng = np.random.RandomState(0)
    logits = rng.randn(4, 6, 40).astype(np.float32)
    y = rng.randint(0, 40, size=(4, 6)).astype(np.int32)
    y[0, :3] = [0, 2, 3]
    s = position_stats(logits.reshape(-1, 40), y.reshape(-1))
    keras = {m.name: float(m.result()) for m in metric_list() if not m.update_state(y, logits)}
    assert np.isclose(keras["recall_at_1"], s["hit1"].sum() / s["events"].sum())
    assert np.isclose(keras["recall_at_3"], s["hit3"].sum() / s["events"].sum())
    assert np.isclose(keras["iv_accuracy_at_3"], s["iv_hit3"].sum() / s["iv_events"].sum())
    assert np.isclose(keras["loss"], s["ce"].sum() / s["tokens"].sum(), rtol=1e-5)
    assert np.isclose(keras["oov_rate"], s["oov"].sum() / s["events"].sum())
    ce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)(y, logits)
    assert np.isclose(float(ce), keras["loss"], rtol=1e-5)

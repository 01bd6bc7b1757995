"""Pretraining's compute choices change nothing computed: the fused recurrence trains through the same
function and gradients as Keras's loop, and the XLA-compilable sampled softmax is TF's."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import build_model
from keyboard_lm.training.sampled_softmax import draw_candidates, loss_and_gradients, sampled_losses


def _tokens(v, n=4, t=7, seed=0):
    return np.random.default_rng(seed).integers(0, v, size=(n, t)).astype(np.int32)


def _outputs_and_gradients(model, x):
    with tf.GradientTape() as tape:
        out = model(x, training=True)
        loss = tf.reduce_sum(tf.square(out))
    return out.numpy(), [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, model.trainable_variables)]


def _pair(config: ModelConfig, seed=1):
    tf.keras.utils.set_random_seed(seed)
    loop = build_model(config)
    fused = build_model(config, fused=True)
    fused.set_weights(loop.get_weights())
    return loop, fused


@pytest.mark.parametrize("model_type,quantization", [("cifg", "none"), ("lstm", "none"), ("si-cifg", "none"),
                                                     ("cifg", "weight-only")])
def test_fused_recurrence_trains_what_the_loop_does(model_type, quantization):
    loop, fused = _pair(ModelConfig(model_type, 60, 8, 12, quantization))
    assert [w.name for w in fused.weights] == [w.name for w in loop.weights]  # the saved layout is the same
    x = _tokens(60)
    out_loop, grads_loop = _outputs_and_gradients(loop, x)
    out_fused, grads_fused = _outputs_and_gradients(fused, x)
    np.testing.assert_allclose(out_fused, out_loop, rtol=1e-5, atol=1e-6)
    for g_fused, g_loop in zip(grads_fused, grads_loop):
        # SI-CIFG divides by a max over units, which amplifies float32 summation-order differences
        np.testing.assert_allclose(g_fused, g_loop, rtol=1e-4, atol=1e-4 * np.abs(g_loop).max())


def test_fused_recurrence_is_training_only_and_skips_row_rounded_cells():
    loop, fused = _pair(ModelConfig("cifg", 60, 8, 12))
    x = _tokens(60)
    np.testing.assert_array_equal(fused(x, training=False).numpy(), loop(x, training=False).numpy())
    q_loop, q_fused = _pair(ModelConfig("cifg", 60, 8, 12, "dynamic-range"))
    assert not q_fused.get_layer("rnn").cell.can_fuse  # rows of [x, h] are rounded together
    np.testing.assert_array_equal(q_fused(x, training=True).numpy(), q_loop(x, training=True).numpy())


def test_sampled_losses_are_tfs_sampled_softmax_with_accidental_hits_removed():
    v, n, s = 40, 64, 30  # most labels are among the candidates: accidental hits in nearly every row
    rng = np.random.default_rng(0)
    labels = tf.constant(rng.integers(0, v, n), tf.int64)
    inputs = tf.constant(rng.normal(size=(n, 8)), tf.float32)
    table = tf.Variable(rng.normal(size=(v, 8)).astype(np.float32))
    candidates = draw_candidates(labels, s, v)
    hits = np.isin(labels.numpy(), candidates[0].numpy()).sum()
    assert hits > n // 2
    with tf.GradientTape(persistent=True) as tape:
        theirs = tf.nn.sampled_softmax_loss(table, tf.zeros([v]), labels[:, None], inputs, s, v,
                                            sampled_values=candidates, remove_accidental_hits=True)
        ours = sampled_losses(table, labels, inputs, candidates)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)
    np.testing.assert_allclose(tf.convert_to_tensor(tape.gradient(ours, table)).numpy(),
                               tf.convert_to_tensor(tape.gradient(theirs, table)).numpy(), rtol=1e-5, atol=1e-6)


def test_the_xla_step_computes_the_plain_steps_loss_and_gradients():
    v = 80
    tf.keras.utils.set_random_seed(2)
    model = build_model(ModelConfig("cifg", v, 8, 12), seq_len=6, fused=True)
    x = _tokens(v, n=8, t=6)
    labels = tf.reshape(tf.constant(np.roll(x, -1, axis=1), tf.int64), [-1])
    candidates = draw_candidates(labels, 20, v)
    loss, grads = loss_and_gradients(model)(x, labels, candidates)
    loss_xla, grads_xla = loss_and_gradients(model, jit_compile=True)(x, labels, candidates)
    np.testing.assert_allclose(float(loss_xla), float(loss), rtol=1e-5)
    for g_xla, g in zip(grads_xla, grads):
        g = tf.convert_to_tensor(g).numpy()
        np.testing.assert_allclose(tf.convert_to_tensor(g_xla).numpy(), g, rtol=1e-4, atol=1e-5 * np.abs(g).max())

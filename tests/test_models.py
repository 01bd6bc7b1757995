"""Model architecture: parameter counts at the paper defaults, shapes, SI invariance, int8 weights."""

import numpy as np
import pytest
import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.cells import ProjectedCell, si_sigmoid, si_tanh
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import build_model
from keyboard_lm.models.quantization import fake_quant_activations, fake_quant_weights, quantize_int8_np


def test_cifg_has_hard_et_al_parameter_count():
    # 10000*96 + 3*(96+96+1)*670 + 670*96 (Hard et al. 2018: "1.4 million").
    model = build_model(ModelConfig("cifg"))
    assert model.count_params() == 1_412_250
    assert ModelConfig("cifg").num_parameters() == 1_412_250


@pytest.mark.parametrize("model_type,expected", [("si-cifg", 1_412_250), ("lstm", 1_541_560), ("gru", 2_565_990)])
def test_other_models_parameter_counts(model_type, expected):
    assert build_model(ModelConfig(model_type)).count_params() == expected == ModelConfig(model_type).num_parameters()


@pytest.mark.parametrize("model_type", ["cifg", "si-cifg", "lstm", "gru"])
def test_output_shape_and_tied_embedding(model_type):
    model = build_model(ModelConfig(model_type, vocab_size=50, embedding_dim=8, units=16))
    logits = model(np.array([[1, 5, 7], [1, 2, 0]], np.int32))
    assert logits.shape == (2, 3, 50)
    # Tied: the embedding is the only [V, D] matrix and the only one the output uses.
    assert sum(1 for w in model.weights if tuple(w.shape) == (50, 8)) == 1


@pytest.mark.parametrize("scale", [1e-3, 0.5, 7.0, 1e4])
def test_si_sigma_and_si_tanh_are_scale_invariant(scale):
    x = tf.constant(np.random.RandomState(0).randn(4, 33).astype(np.float32))
    np.testing.assert_allclose(si_sigmoid(scale * x), si_sigmoid(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(si_tanh(scale * x), si_tanh(x), rtol=1e-5, atol=1e-7)


def test_si_activations_have_the_right_range_and_guard_zero():
    x = tf.constant([[-2.0, 0.5, 1.0], [0.0, 0.0, 0.0], [-1.0, -3.0, -0.5]])
    s = si_sigmoid(x).numpy()
    np.testing.assert_allclose(s[0], [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(s[1], 0.0)
    np.testing.assert_array_equal(s[2], 0.0)  # all negative: ReLU is zero everywhere
    t = si_tanh(x).numpy()
    np.testing.assert_allclose(t[2], [-1 / 3, -1.0, -1 / 6])
    np.testing.assert_array_equal(t[1], 0.0)


def test_cifg_input_gate_is_one_minus_forget_gate():
    cell = ProjectedCell(units=4, projection=3, coupled=True)
    cell.build((None, 2))
    kernel = np.zeros((5, 12), np.float32)
    cell.kernel.assign(kernel)
    bias = np.zeros(12, np.float32)
    bias[:4] = 100.0  # forget gate saturated at 1 -> input gate 0 -> cell state kept
    cell.bias.assign(bias)
    c = tf.constant([[0.3, -0.2, 0.1, 0.9]])
    _, c_new = cell.step(tf.ones((1, 2)), tf.zeros((1, 3)), c)
    np.testing.assert_allclose(c_new, c, atol=1e-6)


def test_step_matches_keras_rnn_loop():
    config = ModelConfig("cifg", vocab_size=30, embedding_dim=6, units=10)
    model = build_model(config)
    x = np.array([[1, 4, 9, 2]], np.int32)
    logits = model(x).numpy()
    emb = model.get_layer("embedding").embeddings
    cell = model.get_layer("rnn").cell
    h, c = tf.zeros((1, 6)), tf.zeros((1, 10))
    for t in range(4):
        h, c = cell.step(tf.gather(emb, x[:, t]), h, c)
        np.testing.assert_allclose(tf.matmul(h, emb, transpose_b=True).numpy(), logits[:, t], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs,match", [
    ({"model_type": "transformer"}, "unknown model type"),
    ({"vocab_size": 4}, "exceed the 4 special"),
    ({"units": 0}, "units"),
    ({"embedding_dim": -1}, "embedding_dim"),
])
def test_model_config_rejects_bad_settings(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ModelConfig(**kwargs)


def test_int8_rounding_is_the_same_in_numpy_and_in_the_training_graph():
    rng = np.random.RandomState(0)
    for w in (rng.randn(37, 19).astype(np.float32) * 0.07, np.zeros((4, 4), np.float32),
              np.array([[0.5, -1.0, 0.25, 0.0078740157]], np.float32)):
        q, s = quantize_int8_np(w)
        assert q.dtype == np.int8 and np.abs(q).max() <= 127
        np.testing.assert_array_equal(fake_quant_weights(tf.constant(w)).numpy(), q.astype(np.float32) * s)
        assert np.abs(w - q * s).max() <= s / 2 + 1e-9


def test_activation_rounding_is_per_row_int8_and_keeps_zero():
    rng = np.random.RandomState(2)
    rows = np.stack([rng.randn(50) * 3, np.abs(rng.randn(50)), -np.abs(rng.randn(50)) * 1e-3, np.zeros(50),
                     np.r_[rng.randn(49), 0.0]]).astype(np.float32)
    out = fake_quant_activations(tf.constant(rows)).numpy()
    for x, y in zip(rows, out):
        levels = np.unique(y)
        assert len(levels) <= 256
        span = max(x.max(), 0) - min(x.min(), 0)
        step = span / 255 if span else 1.0
        assert np.abs(x - y).max() <= step / 2 * (1 + 1e-5) + 1e-12  # rounded to the nearest level
        np.testing.assert_array_equal(y[x == 0], 0.0)  # zero is a level (asymmetric, zero point in range)
        if span:
            np.testing.assert_allclose(np.diff(levels) / step, np.round(np.diff(levels) / step), atol=1e-3)


@pytest.mark.parametrize("model_type,mode", [("cifg", "weight-only"), ("si-cifg", "weight-only"), ("gru", "weight-only"),
                                             ("cifg", "dynamic-range")])
def test_quantization_aware_model_computes_with_int8_rounded_weights(model_type, mode):
    config = ModelConfig(model_type, vocab_size=60, embedding_dim=8, units=16, quantization=mode)
    plain_config = ModelConfig(model_type, vocab_size=60, embedding_dim=8, units=16)
    qat, rounded, raw = build_model(config), build_model(plain_config), build_model(plain_config)
    x = np.array([[1, 5, 7, 9], [1, 2, 44, 0]], np.int32)
    qat(x), rounded(x), raw(x)
    rng = np.random.RandomState(1)
    for w_qat, w_rounded, w_raw in zip(qat.weights, rounded.weights, raw.weights):
        value = (rng.randn(*w_qat.shape) * 0.5).astype(np.float32)
        w_qat.assign(value)
        w_raw.assign(value)
        if value.ndim == 2:  # matrices are used as their int8 rounding, biases as they are
            q, s = quantize_int8_np(value)
            value = q.astype(np.float32) * s
        w_rounded.assign(value)
    if mode == "weight-only":
        np.testing.assert_allclose(qat(x).numpy(), rounded(x).numpy(), rtol=1e-5, atol=1e-6)
    else:  # dynamic-range also rounds matrix inputs: close to, not equal to, weight rounding alone
        assert 1e-6 < np.abs(qat(x).numpy() - rounded(x).numpy()).max() < 0.2
    assert np.abs(qat(x).numpy() - raw(x).numpy()).max() > 1e-3  # the same raw weights, unrounded, differ


@pytest.mark.parametrize("mode", ["weight-only", "dynamic-range"])
def test_quantization_aware_training_gets_straight_through_gradients(mode):
    model = build_model(ModelConfig("cifg", vocab_size=40, embedding_dim=8, units=12, quantization=mode))
    x = np.array([[1, 5, 7, 9, 11]], np.int32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(x[:, 1:], model(x[:, :-1])))
    grads = tape.gradient(loss, model.trainable_weights)
    # round() has zero gradient almost everywhere; straight-through passes it as identity.
    assert all(g is not None and np.abs(tf.convert_to_tensor(g).numpy()).max() > 0 for g in grads)


def test_model_config_rejects_unknown_quantization():
    with pytest.raises(ConfigError, match="unknown quantization 'int4'"):
        ModelConfig(quantization="int4")

"""FedAtt against its numpy reference, and the non-finite zeroing wrapper."""

import numpy as np
import pytest

from keyboard_lm.federated.fed_att import FedAttFactory, fedatt_reference
from keyboard_lm.federated.robustness import NonFiniteZeroingFactory, UnweightedNonFiniteZeroingFactory
from keyboard_lm.federated.runtime import start_runtime

tff = start_runtime()


def _layers_type():
    return tff.to_type([(np.float32, [3]), (np.float32, [2, 2])])


@pytest.mark.parametrize("p,scales,norm", [(2.0, (1.0, 50.0, 300.0), "flat"), (1.0, (0.1, 0.2, 0.3), "flat"),
                                           (2.0, (1e3, 2e3, 5e3), "flat"), (2.0, (1.0, 3.0, 9.0), "spectral")])
def test_fedatt_matches_numpy_reference(p, scales, norm):
    rng = np.random.RandomState(0)
    server = [rng.randn(3).astype(np.float32) * 10, rng.randn(2, 2).astype(np.float32)]
    clients = [[w + rng.randn(*w.shape).astype(np.float32) * s for w in server] for s in scales]
    process = FedAttFactory(p, norm).create(_layers_type())
    deltas = [[server[0] - c[0], server[1] - c[1]] for c in clients]
    out = process.next(process.initialize(), deltas).result
    eps = 0.7
    got = [server[0] - eps * out[0], server[1] - eps * out[1]]
    want = fedatt_reference(server, clients, eps, p, norm)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)
        assert np.isfinite(g).all()  # norms of 5e3 would overflow a naive softmax


def test_spectral_norm_is_the_largest_singular_value_and_differs_from_the_flat_one():
    import tensorflow as tf

    from keyboard_lm.federated.fed_att import layer_norms

    m = np.diag([3.0, 4.0]).astype(np.float32)  # singular values 4 and 3: spectral 4, Frobenius 5
    v = np.array([3.0, 4.0], np.float32)
    spectral = [float(x) for x in layer_norms([tf.constant(m), tf.constant(v)], 2.0, "spectral")]
    flat = [float(x) for x in layer_norms([tf.constant(m), tf.constant(v)], 2.0, "flat")]
    assert spectral == pytest.approx([4.0, 5.0]) and flat == pytest.approx([5.0, 5.0])
    with pytest.raises(ValueError, match="spectral"):
        FedAttFactory(2.0, "nuclear")


def test_fedatt_attention_is_per_layer():
    # Client 2 is far in layer 0 only: it dominates layer 0, while layer 1 is a plain mean.
    clients = [[np.full(3, 1.0, np.float32), np.full((2, 2), 1.0, np.float32)],
               [np.full(3, 9.0, np.float32), np.full((2, 2), 3.0, np.float32)]]
    process = FedAttFactory(2.0).create(_layers_type())
    out = process.next(process.initialize(), [[-c[0], -c[1]] for c in clients]).result
    assert out[0][0] < -8.9  # softmax of norms (1.7, 15.6) puts ~all weight on client 2
    # Layer 1 norms are 2 and 6: weights softmax(2, 6) = (0.018, 0.982).
    a = np.exp([2.0, 6.0]) / np.exp([2.0, 6.0]).sum()
    np.testing.assert_allclose(out[1], -(a[0] * 1.0 + a[1] * 3.0) * np.ones((2, 2)), rtol=1e-5)


def test_non_finite_update_is_zeroed_weight_dropped_and_counted():
    value_type = tff.to_type([np.float32, (np.float32, [2])])
    process = NonFiniteZeroingFactory(tff.aggregators.MeanFactory()).create(value_type, tff.TensorType(np.float32))
    values = [[np.float32(1), np.array([1, 1], np.float32)],
              [np.float32(np.nan), np.array([5, 5], np.float32)],
              [np.float32(3), np.array([np.inf, 3], np.float32)],
              [np.float32(5), np.array([5, 5], np.float32)]]
    out = process.next(process.initialize(), values, [1.0, 1.0, 1.0, 1.0])
    assert out.result[0] == pytest.approx(3.0)  # mean of clients 1 and 4 only
    np.testing.assert_allclose(out.result[1], [3.0, 3.0])
    assert out.measurements["non_finite_zeroed"] == 2


def test_unweighted_zeroing_counts():
    value_type = tff.to_type([(np.float32, [2])])
    process = UnweightedNonFiniteZeroingFactory(tff.aggregators.SumFactory()).create(value_type)
    out = process.next(process.initialize(), [[np.array([1, np.nan], np.float32)], [np.array([2, 2], np.float32)]])
    np.testing.assert_allclose(out.result[0], [2.0, 2.0])
    assert out.measurements["non_finite_zeroed"] == 1


def test_nesterov_matches_keras_sgd_nesterov():
    import tensorflow as tf

    from keyboard_lm.federated.nesterov import NesterovSGD

    rng = np.random.RandomState(1)
    w0 = [rng.randn(3, 2).astype(np.float32), rng.randn(4).astype(np.float32)]
    grads = [[rng.randn(*w.shape).astype(np.float32) for w in w0] for _ in range(4)]
    opt = NesterovSGD(0.3, 0.9)
    state = opt.initialize([tf.TensorSpec(w.shape, tf.float32) for w in w0])
    weights = [tf.constant(w) for w in w0]
    keras_vars = [tf.Variable(w) for w in w0]
    keras_opt = tf.keras.optimizers.SGD(0.3, momentum=0.9, nesterov=True)
    for g in grads:
        state, weights = opt.next(state, weights, [tf.constant(x) for x in g])
        keras_opt.apply_gradients(zip([tf.constant(x) for x in g], keras_vars))
    for ours, theirs in zip(weights, keras_vars):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)


def _steps_against_keras(opt, keras_opt, w0, grads):
    """``opt`` (a TFF optimizer) and ``keras_opt`` stepped on the same gradients from ``w0``: the weights must
    agree after every step list; returns ``opt``'s (state, weights)."""
    import tensorflow as tf

    state = opt.initialize([tf.TensorSpec(w.shape, tf.float32) for w in w0])
    weights = [tf.constant(w) for w in w0]
    keras_vars = [tf.Variable(w) for w in w0]
    for g in grads:
        state, weights = opt.next(state, weights, [tf.constant(x) for x in g])
        keras_opt.apply_gradients(zip([tf.constant(x) for x in g], keras_vars))
    for ours, theirs in zip(weights, keras_vars):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)
    return state, weights


def test_clipped_sgd_matches_keras_sgd_with_global_clipnorm():
    import tensorflow as tf

    from keyboard_lm.federated.client_optimizer import ClippedSGD

    rng = np.random.RandomState(2)
    w0 = [rng.randn(3, 2).astype(np.float32), rng.randn(4).astype(np.float32)]
    # steps with gradients far above and below the norm: only the large ones are scaled
    grads = [[(scale * rng.randn(*w.shape)).astype(np.float32) for w in w0] for scale in (10.0, 0.1, 50.0)]
    opt = ClippedSGD(0.2, 1.5)
    state, weights = _steps_against_keras(opt, tf.keras.optimizers.SGD(0.2, global_clipnorm=1.5), w0, grads)
    # the small step is not touched: one step of 0.1-scale gradients moves w by exactly lr * g
    state, after = opt.next(state, weights, [tf.constant(x) for x in grads[1]])
    np.testing.assert_allclose(after[0], weights[0] - 0.2 * grads[1][0], rtol=1e-6)
    assert opt.get_hparams(state)["clipnorm"] == 1.5


def test_clipped_sgd_rejects_a_norm_that_is_not_positive():
    from keyboard_lm.federated.client_optimizer import ClippedSGD

    with pytest.raises(ValueError, match="clipnorm > 0"):
        ClippedSGD(0.1, 0.0)


def test_clipped_sgd_with_momentum_matches_keras_sgd_momentum_when_nothing_is_clipped():
    import tensorflow as tf

    from keyboard_lm.federated.client_optimizer import ClippedSGD

    rng = np.random.RandomState(3)
    w0 = [rng.randn(3, 2).astype(np.float32), rng.randn(4).astype(np.float32)]
    grads = [[(0.1 * rng.randn(*w.shape)).astype(np.float32) for w in w0] for _ in range(4)]
    opt = ClippedSGD(0.05, 1e6, momentum=0.5)
    state, _ = _steps_against_keras(opt, tf.keras.optimizers.SGD(0.05, momentum=0.5), w0, grads)
    # the hyper-parameters the rate decay reads and writes, without the accumulator
    hp = opt.get_hparams(state)
    assert set(hp) == {"learning_rate", "clipnorm", "momentum"}
    hp["learning_rate"] = 0.01
    assert opt.get_hparams(opt.set_hparams(state, hp))["learning_rate"] == 0.01


def test_client_momentum_reaches_tff_sgdm_without_a_clip_and_clipped_sgd_with_one():
    from keyboard_lm.federated.client_optimizer import ClippedSGD
    from keyboard_lm.federated.process import client_optimizer_for

    import tensorflow as tf

    spec = [tf.TensorSpec([2], tf.float32)]
    plain = client_optimizer_for(0.01, None, 0.5)
    assert float(plain.get_hparams(plain.initialize(spec))["momentum"]) == 0.5
    clipped = client_optimizer_for(0.01, 2.0, 0.5)
    assert isinstance(clipped, ClippedSGD) and clipped.get_hparams(clipped.initialize(spec))["momentum"] == 0.5


def test_noisy_sgd_adds_seeded_gaussian_noise_of_the_asked_sd_and_resumes_the_same_stream():
    import tensorflow as tf

    from keyboard_lm.federated.server_noise import NoisySGD

    w0 = [np.zeros((400, 50), np.float32), np.zeros(7, np.float32)]
    g = [np.ones((400, 50), np.float32), np.ones(7, np.float32)]
    opt = NoisySGD(0.5, 0.01, seed=3)
    s0 = opt.initialize([tf.TensorSpec(w.shape, tf.float32) for w in w0])
    s1, w1 = opt.next(s0, [tf.constant(w) for w in w0], [tf.constant(x) for x in g])
    noise = w1[0].numpy() + 0.5  # w - lr * g + noise, with w = 0 and g = 1
    assert abs(noise.mean()) < 1e-3 and noise.std() == pytest.approx(0.01, rel=0.03)
    # the same state gives the same noise (a resumed run); the next round and another seed do not
    _, again = opt.next(s0, [tf.constant(w) for w in w0], [tf.constant(x) for x in g])
    np.testing.assert_array_equal(again[0], w1[0])
    _, w2 = opt.next(s1, [tf.constant(w) for w in w0], [tf.constant(x) for x in g])
    _, other = NoisySGD(0.5, 0.01, seed=4).next(NoisySGD(0.5, 0.01, seed=4).initialize(
        [tf.TensorSpec(w.shape, tf.float32) for w in w0]), [tf.constant(w) for w in w0], [tf.constant(x) for x in g])
    assert not np.allclose(w2[0], w1[0]) and not np.allclose(other[0], w1[0])
    # the two tensors draw different noise (the tensor index is folded into the seed)
    assert not np.allclose(w1[1].numpy() + 0.5, noise.ravel()[:7])
    # no noise: plain SGD
    _, quiet = NoisySGD(0.5, 0.0).next(NoisySGD(0.5, 0.0).initialize([tf.TensorSpec([7], tf.float32)]),
                                       [tf.constant(w0[1])], [tf.constant(g[1])])
    np.testing.assert_array_equal(quiet[0], -0.5 * np.ones(7, np.float32))

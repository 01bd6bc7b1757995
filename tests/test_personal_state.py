"""TF-free personal state: adapter math, its numpy trainer, the cap, and the per-user file."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personal import MAX_PERSONAL_WORDS, PersonalState


def _state(n=3, d=8, fp="model-a"):
    s = PersonalState(fp, d, hidden=16)
    s.add_words([f"w{i}" for i in range(n)], np.random.default_rng(1).standard_normal((n, d)))
    return s


def test_untrained_adapter_is_zero_shot_and_logits_concatenate():
    s = _state()
    np.testing.assert_allclose(s.adapted(), s.base)
    h, vl = np.ones((2, 8), np.float32), np.zeros((2, 5), np.float32)
    z = s.logits(h, vl)
    assert z.shape == (2, 8)
    np.testing.assert_allclose(z[:, 5:], h @ s.base.T, rtol=1e-6)


def test_numpy_trainer_gradient_matches_finite_difference():
    s = _state()
    rng = np.random.default_rng(2)
    s.w2 = rng.standard_normal(s.w2.shape).astype(np.float32) * 0.1
    h, vl, t = rng.standard_normal((6, 8)), rng.standard_normal((6, 5)), np.array([5, 6, 7, 0, 5, 1])

    def loss(st):
        z = st.logits(h, vl)
        z = z - z.max(1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(6), t]))

    s2 = _state(); s2.w2 = s.w2.copy()
    eps = 1e-3
    s2.b2 = s2.b2.astype(np.float64); s2.b2[0] += eps
    numeric = (loss(s2) - loss(s)) / eps
    before = s.b2.copy()
    s.train(h, vl, t, epochs=1, learning_rate=1.0)
    analytic = before[0] - s.b2[0]
    assert analytic == pytest.approx(numeric, rel=0.05, abs=1e-4)


def test_training_lowers_loss_on_personal_targets():
    s = _state()
    rng = np.random.default_rng(3)
    h, vl = rng.standard_normal((40, 8)).astype(np.float32), rng.standard_normal((40, 5)).astype(np.float32)
    t = 5 + (h[:, 0] > 0).astype(int)  # which personal word follows depends on the context
    losses = s.train(h, vl, t, epochs=100, learning_rate=0.1)
    assert losses[-1] < 0.8 * losses[0]


def test_cap_refuses_and_keeps_what_was_there():
    s = _state(n=2)
    with pytest.raises(ConfigError, match="cap of 1000"):
        s.add_words([f"x{i}" for i in range(MAX_PERSONAL_WORDS)], np.zeros((MAX_PERSONAL_WORDS, 8)))
    assert s.words == ["w0", "w1"]


@pytest.mark.parametrize("word", ["", "  "])
def test_empty_word_refused(word):
    with pytest.raises(ConfigError, match="empty or whitespace"):
        _state().add_words([word], np.zeros((1, 8)))


def test_state_round_trips_and_refuses_other_model(tmp_path):
    s = _state()
    s.w2 += 0.5
    path = str(tmp_path / "user.npz")
    s.save(path)
    back = PersonalState.load(path, "model-a")
    assert back.words == s.words
    np.testing.assert_allclose(back.adapted(), s.adapted())
    with pytest.raises(ConfigError, match="belongs to model"):
        PersonalState.load(path, "model-b")
    (tmp_path / "junk").write_bytes(b"not a state")
    with pytest.raises(ConfigError, match="not a keyboard_lm personal state"):
        PersonalState.load(str(tmp_path / "junk"), "model-a")


def _two_words_same_spelling_signal(per_word, seed=0):
    """Two personal words with the same char-encoder embedding, each following its own context."""
    s = PersonalState("fp", 8, hidden=16, per_word=per_word)
    s.add_words(["alpha", "beta"], np.ones((2, 8), np.float32))
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((200, 8)).astype(np.float32)
    vl = rng.standard_normal((200, 5)).astype(np.float32)
    t = np.where(h[:, 0] > 0, 5, 6)  # which word follows depends on the context
    s.train(h, vl, t, epochs=200, learning_rate=0.03, optimizer="adam")
    z = s.logits(h, vl)
    return float(np.mean(z.argmax(1) == t))


def test_per_word_parameters_separate_words_the_shared_mlp_cannot():
    # the residual MLP maps equal inputs to equal outputs: at best one of the two words wins everywhere
    assert _two_words_same_spelling_signal(per_word=False) <= 0.6
    assert _two_words_same_spelling_signal(per_word=True) >= 0.9


def test_adam_with_validation_keeps_the_best_epoch_and_state_round_trips(tmp_path):
    s = PersonalState("fp", 8, hidden=16, per_word=True)
    s.add_words(["alpha", "beta"], np.random.default_rng(0).standard_normal((2, 8)))
    rng = np.random.default_rng(1)
    h, vl = rng.standard_normal((60, 8)).astype(np.float32), rng.standard_normal((60, 5)).astype(np.float32)
    t = rng.integers(0, 7, 60)  # noise: training overfits, validation loss rises
    val = (rng.standard_normal((30, 8)).astype(np.float32), rng.standard_normal((30, 5)).astype(np.float32),
           rng.integers(0, 7, 30))
    s.train(h, vl, t, epochs=300, learning_rate=0.05, optimizer="adam", validation=val, patience=10)
    info = s.last_training
    assert len(info["train_loss"]) < 300  # stopped early
    best = min([info["initial_validation_loss"], *info["validation_loss"]])
    assert best < info["validation_loss"][-1]  # it got worse after the kept epoch
    now = s._loss_and_grads(val[0], s._frozen_part(val[1], val[2]), val[2], grads=False)[0]
    assert now == pytest.approx(best, abs=1e-6)  # the kept epoch's adapter is restored
    path = str(tmp_path / "s.personal")
    s.save(path)
    back = PersonalState.load(path, "fp")
    assert back.per_word and back.words == ["alpha", "beta"]
    np.testing.assert_allclose(back.logits(h, vl), s.logits(h, vl), rtol=1e-6)

"""TF-free personal state: adapter math, its numpy trainer, the cap, and the per-user file."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.adapter_research import ResearchAdapter
from keyboard_lm.inference.personal_words import MAX_PERSONAL_WORDS, PersonalState


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
    s = ResearchAdapter("fp", 8, hidden=16, per_word=per_word)
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
    s = ResearchAdapter("fp", 8, hidden=16, per_word=True)
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


@pytest.mark.parametrize("options", [
    {"hidden": (12, 20, 12), "layer_norm": True, "init_scale": 0.3},  # Shenoy & Nguyen's shape
    {"hidden": 16, "vocab_bias": True, "per_word": True},  # the adapter plus the output bias
])
def test_every_gradient_of_the_adapter_variants_matches_finite_differences(options):
    rng = np.random.default_rng(4)
    s = ResearchAdapter("fp", 8, seed=1, **options)
    s.add_words(["alpha", "beta", "gamma"], rng.standard_normal((3, 8)))
    if s.use_vocab_bias:
        s.vocab_bias = rng.standard_normal(5).astype(np.float32) * 0.1
    for k in s._PARAMS:  # no parameter at zero: every path of the backward pass carries a signal
        setattr(s, k, (getattr(s, k) + 0.05 * rng.standard_normal(getattr(s, k).shape)).astype(np.float64))
    s.base = s.base.astype(np.float64)
    h, vl = rng.standard_normal((7, 8)), rng.standard_normal((7, 5))
    t = np.array([5, 6, 7, 0, 4, 1, 5])
    frozen = s._frozen_part(vl, t)  # float64 throughout for the finite differences
    _, grads = s._loss_and_grads(h, frozen, t)
    assert set(grads) >= set(s._PARAMS)
    eps = 1e-6
    for k in s._PARAMS:
        value = getattr(s, k)
        for index in list(np.ndindex(value.shape))[:: max(1, value.size // 6)]:
            value[index] += eps
            up = s._loss_and_grads(h, frozen, t, grads=False)[0]
            value[index] -= 2 * eps
            down = s._loss_and_grads(h, frozen, t, grads=False)[0]
            value[index] += eps
            assert grads[k][index] == pytest.approx((up - down) / (2 * eps), rel=1e-3, abs=1e-7), (k, index)


def test_random_output_layer_moves_the_embeddings_and_zero_keeps_them():
    base = np.random.default_rng(0).standard_normal((2, 8))
    zero, rand = PersonalState("fp", 8), ResearchAdapter("fp", 8, hidden=(32,), layer_norm=True, init_scale=0.5)
    for s in (zero, rand):
        s.add_words(["a", "b"], base)
    np.testing.assert_allclose(zero.adapted(), base, rtol=1e-6)
    assert np.abs(rand.adapted() - base).max() > 0.05
    with pytest.raises(ConfigError, match="hidden sizes"):
        PersonalState("fp", 8, hidden=(16, 0))


def test_emr3_counts_top3_hits_and_never_counts_a_suppressed_id():
    s = PersonalState("fp", 4)
    s.add_words(["p"], np.array([[1.0, 0, 0, 0]]))
    h = np.array([[5.0, 0, 0, 0], [0, 0, 0, 0]])
    vl = np.array([[0, 1, 2, 3, 4, 9], [0, 1, 2, 3, 4, 9]], np.float64)  # V = 6; id 5 is the best but never shown
    never = np.array([False] * 5 + [True])
    # row 0: scores 4, 3, personal 5 -> top 3 = {p, 4, 3}; row 1: personal 0 -> top 3 = {4, 3, 2}
    assert s.emr3(h, vl, np.array([6, 1]), never) == 0.5  # p hit; 1 is fifth
    assert s.emr3(h, vl, np.array([5, 4]), never) == 0.5  # the suppressed id 5 is a miss
    assert s.emr3(h, vl, np.array([5, 4]), None) == 1.0  # without never, id 5 is the best


def test_emr3_early_stopping_keeps_the_best_epoch_and_variant_state_round_trips(tmp_path):
    rng = np.random.default_rng(5)
    s = ResearchAdapter("fp", 8, hidden=(12, 24, 12), layer_norm=True, init_scale=0.1, vocab_bias=True)
    s.add_words(["alpha", "beta"], rng.standard_normal((2, 8)))
    h, vl = rng.standard_normal((80, 8)).astype(np.float32), rng.standard_normal((80, 5)).astype(np.float32)
    t = np.where(h[:, 0] > 0, 5, 6)
    val = (h[:20] + 0.1, vl[:20], t[:20])
    s.train(h, vl, t, epochs=60, learning_rate=0.02, optimizer="adam", validation=val, patience=60,
            stop_on="emr3", never=np.zeros(5, bool))
    info = s.last_training
    assert info["stop_on"] == "emr3" and s.has_vocab_bias
    best = max([info["initial_validation_emr3"], *info["validation_emr3"]])
    assert info["validation_emr3"][info["kept_epoch"] - 1] == best
    assert s.emr3(*val, np.zeros(5, bool)) == pytest.approx(best)  # the kept epoch is restored
    assert best > 0.8  # the context decides which word follows: learnt
    path = str(tmp_path / "variant.personal")
    s.save(path)
    back = PersonalState.load(path, "fp")
    assert back.hidden == (12, 24, 12) and back.layer_norm and back.has_vocab_bias
    np.testing.assert_allclose(back.logits(h, vl), s.logits(h, vl), rtol=1e-5)
    with pytest.raises(ConfigError, match="stopping criterion"):
        s.train(h, vl, t, stop_on="accuracy")

"""The numpy evaluation and the Keras metrics agree, and follow the papers' definitions."""

import numpy as np
import pytest
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


def test_the_three_perplexities_leave_out_what_the_papers_leave_out():
    """Over all targets, without end-of-sentence (Ro et al.'s simulation), without EOS and OOV (their DP table)."""
    from keyboard_lm.evaluation import _metrics

    logits = np.log(np.array([[0.1, 0.1, 0.4, 0.2, 0.1, 0.1]] * 3))  # p(EOS = 2) 0.4, p(OOV = 3) 0.2, p(5) 0.1
    s = position_stats(logits, np.array([2, 3, 5]))
    m = _metrics({k: float(v.sum()) for k, v in s.items()})
    assert np.isclose(m["perplexity"], (1 / (0.4 * 0.2 * 0.1)) ** (1 / 3))
    assert np.isclose(m["perplexity_no_eos"], (1 / (0.2 * 0.1)) ** (1 / 2))
    assert np.isclose(m["perplexity_no_eos_oov"], 10.0)
    assert (m["num_tokens"], m["num_events"], m["num_iv_events"]) == (3, 2, 1)


def test_user_bootstrap_intervals_pool_resampled_users_and_are_seeded(default_corpus):
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.evaluation import evaluate_predict_fn, intervals
    from keyboard_lm.text.vocabulary import Vocabulary

    vocab = Vocabulary.from_sentences(default_corpus.sentences(default_corpus.client_ids), 200)
    freq = np.zeros(len(vocab), np.float32)
    freq[10:13] = 5.0  # three fixed suggestions: recall varies by user
    result = evaluate_predict_fn(lambda x: np.broadcast_to(freq, (*x.shape, len(vocab))), default_corpus,
                                 default_corpus.client_ids[:30], vocab)
    found = intervals(result, replicates=400, seed=1)
    pooled = result["pooled"]
    for name in ("recall_at_1", "recall_at_3", "perplexity", "perplexity_no_eos", "perplexity_no_eos_oov"):
        lo, hi = found[name]
        assert lo <= pooled[name] <= hi and lo < hi, name
    assert found == intervals(result, replicates=400, seed=1)  # seeded
    # one user drawn 30 times: the interval of a result with one user repeated is that user's figure
    only = {"pooled": pooled, "clients": {f"u{i}": next(iter(result["clients"].values())) for i in range(30)}}
    one = next(iter(result["clients"].values()))
    assert np.allclose(intervals(only, ("recall_at_3",))["recall_at_3"], one["recall_at_3"])
    with pytest.raises(ConfigError, match="at least 2 evaluated users"):
        intervals({"pooled": pooled, "clients": {"a": one}})
    with pytest.raises(ConfigError, match="no interval for"):
        intervals(result, ("accuracy",))


def test_paired_intervals_are_of_the_ratio_over_the_same_users(default_corpus):
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.evaluation import evaluate_predict_fn, intervals, paired_intervals
    from keyboard_lm.text.vocabulary import Vocabulary

    vocab = Vocabulary.from_sentences(default_corpus.sentences(default_corpus.client_ids), 200)
    users = default_corpus.client_ids[:30]
    results = []
    for hot in ((10, 11, 12), (10, 11, 13)):  # two of the three fixed suggestions shared: correlated per user
        freq = np.zeros(len(vocab), np.float32)
        freq[list(hot)] = 5.0
        results.append(evaluate_predict_fn(lambda x, f=freq: np.broadcast_to(f, (*x.shape, len(vocab))),
                                           default_corpus, users, vocab))
    a, b = results
    same = paired_intervals(a, a, replicates=300)
    assert all(np.allclose(v, 1.0) for v in same.values())  # a model against itself: exactly 1 in every draw
    ratio = paired_intervals(a, b, ("recall_at_3",), replicates=300)["recall_at_3"]
    point = a["pooled"]["recall_at_3"] / b["pooled"]["recall_at_3"]
    assert point != 1.0 and ratio[0] <= point <= ratio[1]
    # by hand: one draw of users, both results pooled over it
    n = len(users)
    weights = np.random.default_rng(0).multinomial(n, np.full(n, 1 / n), size=300)
    hits = [np.array([r["clients"][u]["recall_at_3"] * r["clients"][u]["num_events"] for u in users]) for r in (a, b)]
    events = np.array([a["clients"][u]["num_events"] for u in users])
    by_hand = (weights @ hits[0]) / (weights @ hits[1])  # the events cancel: same users, same text
    assert np.allclose(ratio, np.percentile(by_hand, [2.5, 97.5]))
    assert np.allclose(intervals(a, ("recall_at_3",), replicates=300)["recall_at_3"],
                       np.percentile((weights @ hits[0]) / (weights @ events), [2.5, 97.5]))
    with pytest.raises(ConfigError, match="same evaluated users"):
        paired_intervals(a, {**b, "clients": dict(list(b["clients"].items())[:5])})


def test_the_in_graph_evaluation_of_a_keras_model_equals_the_numpy_one(default_corpus):
    """evaluate_model summarizes each batch inside the model's graph (cross-entropy and top three words);
    it must give evaluate_predict_fn's figures for every user: hits exactly, losses to float32 rounding."""
    from keyboard_lm.evaluation import evaluate_model, evaluate_predict_fn
    from keyboard_lm.text.vocabulary import Vocabulary

    vocab = Vocabulary.from_sentences(default_corpus.sentences(default_corpus.client_ids), 300)
    tf.keras.utils.set_random_seed(3)
    layers = tf.keras.layers
    model = tf.keras.Sequential([layers.Embedding(len(vocab), 16), layers.LSTM(16, return_sequences=True),
                                 layers.Dense(len(vocab))])
    users = default_corpus.client_ids[:12]
    graph = evaluate_model(model, default_corpus, users, vocab)
    numpy = evaluate_predict_fn(lambda x: model(x, training=False).numpy(), default_corpus, users, vocab)
    assert graph["pooled"]["num_events"] > 100
    for user in [None, *users]:
        g, n = (graph["pooled"], numpy["pooled"]) if user is None else (graph["clients"][user], numpy["clients"][user])
        for name in ("recall_at_1", "recall_at_3", "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate", "num_events"):
            assert g[name] == n[name], (user, name)
        for name in ("loss", "loss_no_eos", "loss_no_eos_oov"):
            assert g[name] == pytest.approx(n[name], rel=1e-6, nan_ok=True), (user, name)
    assert graph["pooled"]["recall_at_3"] > 0  # an untrained model still hits the frequent words sometimes

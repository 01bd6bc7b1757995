"""The Kneser-Ney baseline: proper distributions and it learns from counts."""

import numpy as np
import pytest

from keyboard_lm.baselines.ngram import KneserNey
from keyboard_lm.errors import ConfigError
from keyboard_lm.evaluation import evaluate_predict_fn
from keyboard_lm.text import Vocabulary


@pytest.fixture(scope="module")
def fitted(default_corpus):
    ids = default_corpus.client_ids
    vocab = Vocabulary.from_sentences(default_corpus.sentences(ids), 1000)
    model = KneserNey(len(vocab), 3).fit(vocab.encode(s) for s in default_corpus.sentences(ids))
    return vocab, model


def test_distributions_sum_to_one(fitted):
    vocab, model = fitted
    for context in ([1], [1, vocab.id_of("how")], [1, vocab.id_of("how"), vocab.id_of("are")], [999, 998]):
        p = model.distribution(context)
        assert p.shape == (len(vocab),)
        assert np.isclose(p.sum(), 1.0) and (p > 0).all()


def test_frequent_continuation_ranks_first(fitted):
    vocab, model = fitted
    p = model.distribution([1, vocab.id_of("how"), vocab.id_of("are")])
    assert vocab.token_of(int(np.argmax(p))) == "you"


def test_higher_order_beats_unigram_on_heldout(default_corpus):
    ids = default_corpus.client_ids
    train, heldout = ids[::2], ids[1::2]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(train), 1000)
    ppl = {}
    for order in (1, 3):
        model = KneserNey(len(vocab), order).fit(vocab.encode(s) for s in default_corpus.sentences(train))
        ppl[order] = evaluate_predict_fn(model.predict_log_probs, default_corpus, heldout[:200], vocab, 20)["pooled"]["perplexity"]
    assert ppl[3] < 0.7 * ppl[1]


def test_bad_order_and_unfitted_model():
    with pytest.raises(ConfigError, match="order"):
        KneserNey(10, 0)
    with pytest.raises(ConfigError, match="not fitted"):
        KneserNey(10, 3).distribution([1])

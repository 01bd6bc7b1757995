"""The tensorflow-text implementation of the spec and the tf.data example pipeline."""

import pytest
import tensorflow as tf

from keyboard_lm.data import examples, preprocessing
from keyboard_lm.errors import ConfigError
from keyboard_lm.text import Vocabulary, tokenizer


def _decode(t):
    return [b.decode("utf-8") for b in t.numpy().tolist()]


def test_tf_ops_match_golden_vectors(golden_cases):
    for case in golden_cases:
        text = tf.constant(case["input"])
        assert preprocessing.normalize(text).numpy().decode("utf-8") == case["normalized"], case["name"]
        got = [_decode(row) for row in preprocessing.sentences(text)]
        assert got == case["sentences"], case["name"]


def _python_vs_tf_examples(texts, vocab_size, seq_len):
    sents = [s for t in texts for s in tokenizer.sentences(t)]
    vocab = Vocabulary.from_sentences(sents, vocab_size)
    ds = preprocessing.texts_to_examples(
        tf.data.Dataset.from_tensor_slices(texts), preprocessing.vocab_table(vocab), seq_len)
    got = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    ref = [(x, y) for x, y in examples.corpus_examples(sents, vocab, seq_len)]
    return got, ref


def test_tf_examples_equal_python_examples_on_default_corpus(default_corpus):
    texts = [t for c in default_corpus.client_ids for t in default_corpus.clients[c]]
    got, ref = _python_vs_tf_examples(texts, 800, seq_len=6)
    assert len(got) > 4000
    assert got == ref


@pytest.mark.shakespeare
def test_tf_examples_equal_python_examples_on_shakespeare(shakespeare):
    texts = [t for c in shakespeare.client_ids[:60] for t in shakespeare.clients[c]]
    got, ref = _python_vs_tf_examples(texts, 2000, seq_len=20)
    assert len(got) > 3000
    assert got == ref


def test_long_sentence_is_chunked_without_losing_words():
    ids = list(range(10, 35))  # 25 words -> 27 tokens with BOS/EOS -> 26 predictions
    chunks = examples.sentence_examples(ids, seq_len=10)
    assert len(chunks) == 3
    targets = [t for _, y in chunks for t in y if t != 0]
    assert targets == ids + [2]
    x, y = preprocessing.sentence_chunks(tf.constant(ids), 10)
    assert x.numpy().tolist() == [c[0] for c in chunks]
    assert y.numpy().tolist() == [c[1] for c in chunks]


def test_client_dataset_batches_and_caps(default_corpus):
    texts = default_corpus.clients["tech_support/0"] * 20
    vocab = Vocabulary.from_sentences([s for t in texts for s in tokenizer.sentences(t)], 100)
    config = preprocessing.ClientDataConfig(max_seq_len=8, batch_size=4, epochs=2, max_batches=5, seed=3)
    batches = list(preprocessing.client_dataset(
        tf.data.Dataset.from_tensor_slices(texts), preprocessing.vocab_table(vocab), config))
    assert len(batches) == 5
    assert all(x.shape == (4, 8) and y.shape == (4, 8) for x, y in batches)
    assert batches[0][0].numpy()[:, 0].tolist().count(1) >= 1  # some example starts with BOS


@pytest.mark.parametrize("field,value", [("max_seq_len", 0), ("batch_size", 0), ("epochs", 0),
                                         ("max_batches", 0), ("shuffle_buffer", -1)])
def test_client_data_config_rejects_bad_values(field, value):
    with pytest.raises(ConfigError, match=field):
        preprocessing.ClientDataConfig(**{field: value})

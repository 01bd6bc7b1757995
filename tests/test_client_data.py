"""Corpora as TFF ClientData of token-id batches."""

import numpy as np
import pytest

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.split import SplitConfig
from keyboard_lm.federated.client_data import build_federated_data, text_client_data
from keyboard_lm.text import Vocabulary, tokenizer


def _vocab(corpus, ids, size):
    return Vocabulary.from_sentences(
        (s for c in ids for t in corpus.clients[c] for s in tokenizer.sentences(t)), size)


def test_text_client_data_holds_each_clients_records(default_corpus):
    ids = default_corpus.client_ids[:5]
    cd = text_client_data(default_corpus, ids)
    assert cd.client_ids == ids
    got = [t.decode() for t in cd.create_tf_dataset_for_client(ids[0]).as_numpy_iterator()]
    assert got == default_corpus.clients[ids[0]]


@pytest.mark.shakespeare
def test_federated_data_on_shakespeare_is_split_by_role(shakespeare):
    config = ClientDataConfig(max_seq_len=20, batch_size=10, max_batches=3, seed=1)
    vocab = _vocab(shakespeare, shakespeare.client_ids, 10_000)
    fd = build_federated_data(shakespeare, vocab, config, SplitConfig(0.1, seed=0))
    assert len(fd.train.client_ids) == 269 and len(fd.heldout.client_ids) == 30
    assert not set(fd.train.client_ids) & set(fd.heldout.client_ids)
    batches = list(fd.train.create_tf_dataset_for_client("First Citizen").as_numpy_iterator())
    assert len(batches) == 3
    x, y = batches[0]
    assert x.shape == (10, 20) and x.dtype == np.int32
    follows = x[:, 1:] != 0
    assert (x[:, 1:][follows] == y[:, :-1][follows]).all()  # targets are the inputs shifted by one


def test_same_seed_gives_same_client_batches(default_corpus):
    config = ClientDataConfig(max_seq_len=10, batch_size=2, seed=5)
    vocab = _vocab(default_corpus, default_corpus.client_ids, 500)
    runs = []
    for _ in range(2):
        fd = build_federated_data(default_corpus, vocab, config, SplitConfig(0.1, seed=3))
        runs.append([b[0].tolist() for b in fd.train.create_tf_dataset_for_client("tech_support/0").as_numpy_iterator()])
    assert runs[0] == runs[1] and runs[0]


def test_the_drivers_eager_batches_are_the_graphs_batches():
    # The driver builds a round's batches eagerly; a TFF worker builds them in a graph (worker_data): the
    # same arrays and seed must give the same batches, epoch boundaries, cap and all.
    import numpy as np
    import tensorflow as tf

    from keyboard_lm.federated.client_data import client_batches

    for n, epochs, max_batches, batch, shuffle in [(7, 1, 120, 3, 200), (7, 3, 5, 3, 200), (50, 2, 4, 10, 200),
                                                     (5, 4, 120, 2, 200), (9, 2, 3, 4, 0), (1, 3, 2, 2, 200)]:
        x = np.arange(n * 2, dtype=np.int32).reshape(n, 2)
        y = x + 1000
        config = ClientDataConfig(max_seq_len=2, batch_size=batch, epochs=epochs, max_batches=max_batches,
                                  shuffle_buffer=shuffle)
        eager = [(a.tolist(), b.tolist()) for a, b in client_batches(x, y, config, 17).as_numpy_iterator()]
        graph = tf.data.Dataset.range(1).flat_map(lambda _: client_batches(x, y, config, 17))  # traced: graph mode
        assert eager == [(a.tolist(), b.tolist()) for a, b in graph.as_numpy_iterator()], (n, epochs, max_batches)
        assert len(eager) == min(max_batches, -(-n * epochs // batch))

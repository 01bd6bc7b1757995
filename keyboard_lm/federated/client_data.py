"""Corpora as ``tff.simulation.datasets.ClientData`` of token-id batches.

Text is encoded once with the tensorflow-text pipeline in this process
(``encode_clients``); the ClientData then holds int32 examples, so the
datasets TFF receives use only core TensorFlow ops, which its C++ worker can
run (it has no tensorflow-text kernels).
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import tensorflow as tf

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.preprocessing import batch_examples, encode_clients
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import DataError
from keyboard_lm.federated.runtime import import_tff
from keyboard_lm.text.vocabulary import Vocabulary

tff = import_tff()


def text_client_data(corpus: Corpus, client_ids=None):
    """ClientData whose datasets yield the raw text records (tf.string) of each client."""
    ids = corpus.client_ids if client_ids is None else sorted(client_ids)
    sub = corpus.subset(ids)
    return tff.simulation.datasets.TestClientData({c: list(sub.clients[c]) for c in ids})


def example_client_data(encoded: dict):
    """ClientData of {"x": [S], "y": [S]} int32 examples from ``encode_clients`` output.

    Clients without examples are left out (a dataset needs at least one row).
    """
    data = {cid: collections.OrderedDict(x=x, y=y) for cid, (x, y) in encoded.items() if len(x)}
    if not data:
        raise DataError("no client has any example")
    return tff.simulation.datasets.TestClientData(data)


def batched(examples: tf.data.Dataset, config: ClientDataConfig) -> tf.data.Dataset:
    """{"x", "y"} examples -> (x, y) batches per ``config`` (core ops only)."""
    return batch_examples(examples.map(lambda e: (e["x"], e["y"])), config)


def client_batches(x, y, config: ClientDataConfig, seed) -> tf.data.Dataset:
    """One client's round: its [n, S] examples shuffled, repeated, batched and capped.

    The same function builds a round's data in the driver (from numpy arrays)
    and on a TFF worker that reads the client's shard itself
    (``keyboard_lm.federated.distributed.worker_data``), so both give the same batches for
    the same ``seed``.  The shuffle is a stateless permutation of the whole
    client, redrawn each epoch from (seed, epoch): it depends on nothing but
    its arguments (tf.data's ``shuffle`` also depends on the process-wide
    seed, which differs between the driver and a worker).  A
    ``shuffle_buffer`` of 0 or 1 keeps the order.  Core TF ops only.
    """
    if tf.executing_eagerly():
        return _client_batches_now(x, y, config, seed)
    x = tf.convert_to_tensor(x, tf.int32)
    y = tf.convert_to_tensor(y, tf.int32)
    seed = tf.cast(seed, tf.int64)
    n = tf.shape(x, out_type=tf.int64)[0]

    def epoch(e):
        if config.shuffle_buffer > 1:
            order = tf.argsort(tf.random.stateless_uniform(tf.reshape(n, [1]), tf.stack([seed, e])))
            return tf.data.Dataset.from_tensor_slices((tf.gather(x, order), tf.gather(y, order)))
        return tf.data.Dataset.from_tensor_slices((x, y))

    return (tf.data.Dataset.range(config.epochs).flat_map(epoch)
            .batch(config.batch_size).take(config.max_batches))


def _client_batches_now(x, y, config: ClientDataConfig, seed) -> tf.data.Dataset:
    """``client_batches`` computed in the driver's eager mode: the same permutations (the same stateless
    draws), only for the epochs the batch cap reaches, gathered now; the dataset then only slices and
    batches. A graph ``flat_map`` traced its epoch function for every client of every round."""
    x, y = np.asarray(x, np.int32), np.asarray(y, np.int32)
    n = len(x)
    epochs = min(config.epochs, -(-config.batch_size * config.max_batches // max(n, 1)))  # what the cap reaches
    if config.shuffle_buffer > 1:
        seed = tf.cast(seed, tf.int64)
        order = np.concatenate([tf.argsort(tf.random.stateless_uniform([n], tf.stack([seed, tf.constant(e, tf.int64)])))
                                .numpy() for e in range(epochs)])
    else:
        order = np.tile(np.arange(n), epochs)
    return (tf.data.Dataset.from_tensor_slices((x[order], y[order]))
            .batch(config.batch_size).take(config.max_batches))


@dataclasses.dataclass(frozen=True)
class FederatedData:
    """Train and held-out ClientData of token batches, with the vocabulary built on train."""

    train: object
    heldout: object
    vocab: Vocabulary
    train_ids: tuple[str, ...]
    heldout_ids: tuple[str, ...]


def build_federated_data(corpus: Corpus, vocab: Vocabulary, config: ClientDataConfig,
                         split: SplitConfig = SplitConfig(),
                         eval_config: ClientDataConfig | None = None) -> FederatedData:
    """Split ``corpus`` by client and build batched ClientData for both sides.

    Held-out clients are evaluated on all their text once, unshuffled, unless
    ``eval_config`` says otherwise.
    """
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    if eval_config is None:
        eval_config = dataclasses.replace(config, epochs=1, shuffle_buffer=0, max_batches=10**9)
    encoded = encode_clients(corpus.clients, vocab, config.max_seq_len)
    train = example_client_data({c: encoded[c] for c in train_ids})
    heldout = example_client_data({c: encoded[c] for c in heldout_ids})
    return FederatedData(
        train=train.preprocess(lambda ds: batched(ds, config)),
        heldout=heldout.preprocess(lambda ds: batched(ds, eval_config)),
        vocab=vocab, train_ids=tuple(train_ids), heldout_ids=tuple(heldout_ids))


def load_stackoverflow(cache_dir: str | None = None):
    """TFF's Stack Overflow ClientData (train, heldout, test); needs internet on first use.

    Each example's ``tokens`` field is its text.  Raises DataError when the
    download fails (for instance offline).
    """
    try:
        return tff.simulation.datasets.stackoverflow.load_data(cache_dir=cache_dir)
    except Exception as e:  # the loader raises whatever the HTTP stack raises
        raise DataError(
            f"could not load the Stack Overflow dataset (it is downloaded on first use, "
            f"about 1.3 GB, into {cache_dir or '~/.tff'}): {type(e).__name__}: {e}") from None


def stackoverflow_corpus(cache_dir: str | None = None, max_clients: int | None = 1000) -> Corpus:
    """The first ``max_clients`` Stack Overflow training users as a ``Corpus``.

    Each post (its space-joined ``tokens`` field) is one record.
    """
    train, _, _ = load_stackoverflow(cache_dir)
    ids = train.client_ids if max_clients is None else train.client_ids[:max_clients]
    clients = {}
    for cid in ids:
        texts = [ex["tokens"].numpy().decode("utf-8") for ex in train.create_tf_dataset_for_client(cid)]
        if texts:
            clients[cid] = texts
    if not clients:
        raise DataError("Stack Overflow: the selected clients have no text")
    return Corpus(f"stackoverflow:{len(clients)} train users", clients)

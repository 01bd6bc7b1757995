"""Corpora as ``tff.simulation.datasets.ClientData`` of token-id batches."""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from keyboard_lm.data.corpora import Corpus
from keyboard_lm.data.preprocessing import ClientDataConfig, client_dataset, vocab_table
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import DataError
from keyboard_lm.federated.runtime import import_tff
from keyboard_lm.text.vocabulary import Vocabulary

tff = import_tff()


def text_client_data(corpus: Corpus, client_ids=None) -> "tff.simulation.datasets.ClientData":
    """ClientData whose datasets yield the raw text records (tf.string) of each client."""
    ids = corpus.client_ids if client_ids is None else sorted(client_ids)
    sub = corpus.subset(ids)
    return tff.simulation.datasets.TestClientData({c: list(sub.clients[c]) for c in ids})


def preprocess(text_data, vocab: Vocabulary, config: ClientDataConfig):
    """Turn text ClientData into ClientData of (inputs, targets) int32 batches."""

    def fn(texts: tf.data.Dataset) -> tf.data.Dataset:
        return client_dataset(texts, vocab_table(vocab), config)

    return text_data.preprocess(fn)


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
    """Split ``corpus`` by client and build preprocessed ClientData for both sides.

    Held-out clients are evaluated on all their text once, unshuffled, unless
    ``eval_config`` says otherwise.
    """
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    if eval_config is None:
        eval_config = dataclasses.replace(config, epochs=1, shuffle_buffer=0, max_batches=10**9)
    return FederatedData(
        train=preprocess(text_client_data(corpus, train_ids), vocab, config),
        heldout=preprocess(text_client_data(corpus, heldout_ids), vocab, eval_config),
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

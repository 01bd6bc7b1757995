"""The text spec and example building as tensorflow-text / tf.data ops.

Mirrors ``keyboard_lm.text.tokenizer`` (spec) and ``keyboard_lm.data.examples``
(chunking) with graph ops, so client datasets can be built inside TFF's
dataset computations.  The golden vectors and a test comparing both pipelines
on real text keep them equal.
"""

from __future__ import annotations

import collections
import hashlib

import tensorflow as tf
import tensorflow_text as tft

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.text import spec
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary


def normalize(texts: tf.Tensor) -> tf.Tensor:
    """Spec step 1 on a string tensor of any shape."""
    x = tf.strings.regex_replace(texts, spec.RE2_CONTROL, " ")
    x = tft.normalize_utf8(x, "NFKC")
    x = tf.strings.lower(x, encoding="utf-8")
    return tf.strings.regex_replace(x, "[" + "".join(spec.APOSTROPHE_VARIANTS) + "]", "'")


def tokens_and_terminators(text: tf.Tensor) -> tf.Tensor:
    """Spec step 2 on a scalar string: the kept matches (tokens and terminators), 1-D."""
    batch = tf.reshape(normalize(text), [1])  # regex_split wants a batch of strings
    return tft.regex_split(batch, spec.RE2_ANY, spec.RE2_KEEP).values


def sentences(text: tf.Tensor) -> tf.RaggedTensor:
    """Spec step 3 on a scalar string: [sentences, (words)] with empty sentences dropped."""
    pieces = tokens_and_terminators(text)  # [pieces]
    is_end = tf.strings.regex_full_match(pieces, spec.RE2_TERMINATOR)
    sentence_of = tf.cumsum(tf.cast(is_end, tf.int64), exclusive=True)
    words = tf.boolean_mask(pieces, ~is_end)
    rows = tf.RaggedTensor.from_value_rowids(words, tf.boolean_mask(sentence_of, ~is_end))
    return tf.ragged.boolean_mask(rows, rows.row_lengths() > 0)  # [sentences, (words)]


def vocab_table(vocab: Vocabulary) -> tf.lookup.StaticHashTable:
    """Word -> id lookup with the OOV id as default."""
    init = tf.lookup.KeyValueTensorInitializer(
        tf.constant(vocab.tokens), tf.range(len(vocab), dtype=tf.int64))
    return tf.lookup.StaticHashTable(init, default_value=SPECIAL_TOKENS.oov_id)


def sentence_chunks(ids: tf.Tensor, seq_len: int) -> tuple[tf.Tensor, tf.Tensor]:
    """One sentence's ids -> ([chunks, seq_len] inputs, [chunks, seq_len] targets)."""
    sp = SPECIAL_TOKENS
    full = tf.concat([[sp.bos_id], tf.cast(ids, tf.int32), [sp.eos_id]], axis=0)  # [L]
    n_pred = tf.shape(full)[0] - 1
    n_chunks = (n_pred + seq_len - 1) // seq_len
    pad = n_chunks * seq_len - n_pred
    x = tf.pad(full[:-1], [[0, pad]], constant_values=sp.pad_id)
    y = tf.pad(full[1:], [[0, pad]], constant_values=sp.pad_id)
    return tf.reshape(x, [n_chunks, seq_len]), tf.reshape(y, [n_chunks, seq_len])


def texts_to_examples(texts: tf.data.Dataset, table: tf.lookup.StaticHashTable,
                      seq_len: int) -> tf.data.Dataset:
    """A dataset of text records -> a dataset of (inputs[S], targets[S]) int32 pairs."""
    return texts.flat_map(lambda text: text_examples(text, table, seq_len))


def text_examples(text: tf.Tensor, table: tf.lookup.StaticHashTable, seq_len: int) -> tf.data.Dataset:
    """One text record (scalar string) -> its (inputs[S], targets[S]) examples."""
    rows = tf.ragged.map_flat_values(table.lookup, sentences(text))  # [sentences, (ids)]
    return tf.data.Dataset.from_tensor_slices(rows).flat_map(
        lambda ids: tf.data.Dataset.from_tensor_slices(sentence_chunks(ids, seq_len)))


def client_dataset(texts: tf.data.Dataset, table: tf.lookup.StaticHashTable,
                   config: ClientDataConfig) -> tf.data.Dataset:
    """One client's text records -> shuffled, repeated, batched, capped batches."""
    return batch_examples(texts_to_examples(texts, table, config.max_seq_len), config)


#: The last few ``encode_clients`` results of this process, keyed by (text, vocabulary, seq_len) digests: a
#: process that trains several runs on one corpus (a sweep, a notebook, the test suite) encodes it once.
_ENCODED: collections.OrderedDict = collections.OrderedDict()
_ENCODED_KEEP = 4


def encode_clients(clients: dict[str, list[str]], vocab: Vocabulary, seq_len: int) -> dict:
    """Every client's text -> (inputs [n, S], targets [n, S]) int32 numpy arrays (read-only).

    Runs the tensorflow-text pipeline once over all records (eagerly, in this
    process).  TFF's C++ runtime has no tensorflow-text kernels, so datasets
    handed to TFF computations are built from these arrays with core ops only.
    Clients without any sentence get arrays with zero rows.  The same text,
    vocabulary and length again return the arrays already computed.
    """
    digest = hashlib.sha256()
    for cid in sorted(clients):
        digest.update(f"{cid}\0{len(clients[cid])}\0".encode("utf-8"))
        for text in clients[cid]:
            digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    key = (digest.hexdigest(), vocab.fingerprint(), seq_len)
    if key not in _ENCODED:
        _ENCODED[key] = _encode_clients(clients, vocab, seq_len)
        while len(_ENCODED) > _ENCODED_KEEP:
            _ENCODED.popitem(last=False)
    _ENCODED.move_to_end(key)
    return dict(_ENCODED[key])


def _encode_clients(clients: dict[str, list[str]], vocab: Vocabulary, seq_len: int) -> dict:
    import numpy as np

    ids = sorted(clients)
    owners = [i for i, cid in enumerate(ids) for _ in clients[cid]]
    texts = [t for cid in ids for t in clients[cid]]
    table = vocab_table(vocab)

    def encode(owner, text):
        return text_examples(text, table, seq_len).map(lambda x, y: (x, y, owner))

    ds = tf.data.Dataset.from_tensor_slices((owners, texts)).flat_map(encode).batch(4096)
    xs, ys, os_ = [], [], []
    for x, y, o in ds.as_numpy_iterator():
        xs.append(x)
        ys.append(y)
        os_.append(o)
    x = np.concatenate(xs) if xs else np.zeros((0, seq_len), np.int32)
    y = np.concatenate(ys) if ys else np.zeros((0, seq_len), np.int32)
    owner = np.concatenate(os_) if os_ else np.zeros((0,), np.int32)
    out = {cid: (x[owner == i], y[owner == i]) for i, cid in enumerate(ids)}
    for arrays in out.values():
        for a in arrays:
            a.flags.writeable = False  # shared by every caller with the same text
    return out


def batch_examples(examples: tf.data.Dataset, config: ClientDataConfig) -> tf.data.Dataset:
    """(x, y) examples -> shuffled, repeated, batched, capped; core TF ops only.

    The shuffle covers the whole client (when its size is known) and is redone
    every epoch, so the ``max_batches`` cap samples from all of a client's
    examples, not from its first few hundred.
    """
    ds = examples
    if config.shuffle_buffer > 1:
        n = int(ds.cardinality())
        ds = ds.shuffle(max(n, config.shuffle_buffer), seed=config.seed, reshuffle_each_iteration=True)
    return ds.repeat(config.epochs).batch(config.batch_size).take(config.max_batches)

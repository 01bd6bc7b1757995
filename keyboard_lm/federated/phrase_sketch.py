"""What one client computes for phrase discovery, and how the server reads the summed sketches: plain TensorFlow.

A client turns its sentences into short strings, at most ``max_pairs_per_user`` (context, next word) pairs
(its most frequent ones, split across context lengths) and the distinct contexts among them, one count per
string, and inserts them into an invertible Bloom lookup table (IBLT; Goodrich and Mitzenmacher 2011) with
TFF's ``tff.analytics.heavy_hitters.iblt.IbltEncoder``. The IBLT is linear: the sum of a cohort's tables is
the table of every string its clients sent with its number of users, so the server only adds tables and decodes
each cohort's sum. This module holds the TF side (as TFF's ``simple_fedavg_tf.py``); ``phrase_discovery`` wires
it into TFF.

Strings: a marker (``P`` for a pair, ``C`` for a context) then one Unicode character per vocabulary id
(code point id + 1, skipping the surrogates), so ``P`` + (<bos>, "thanks") + "for" is 4 characters; UTF-8
keeps the frequent (small) ids at one byte. ``decode_strings`` inverts it.

Decoding peels every pure cell of the table at once, pass after pass (parallel peeling, Jiang, Mitzenmacher
and Thaler 2014), with TFF's own hashes, checksum and chunker: the same strings and counts as TFF's
``decode_iblt_tf``, which peels one cell per loop step and copies the whole table at each (hours for a table of
a few hundred thousand strings; this takes seconds).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from keyboard_lm.config_checks import check_range
from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spec import SPECIAL_TOKENS

PAIR, CONTEXT = "P", "C"
_SURROGATES = 0xD800  # code points U+D800..U+DFFF cannot be encoded: ids from there up shift past them
_SURROGATE_SPAN = 0x800
_RANK_SUM_SPAN = 1 << 20
_REPETITIONS = 3  # TFF's default: 3 hash functions, 1.222 cells per string (iblt_lib)


def code_point(token_id: int) -> int:
    """The character that stands for ``token_id`` in a phrase string."""
    cp = int(token_id) + 1
    return cp + _SURROGATE_SPAN if cp >= _SURROGATES else cp


def _utf8_bytes(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


@dataclasses.dataclass(frozen=True)
class SketchSpec:
    """The shape of every client's sketch: all clients and the server must agree on it.

    Attributes:
      vocab_size: ids are in [0, vocab_size) (at most 65,536: the phrase table stores u16 ids).
      quotas: pairs a client reports per context length (quotas[n - 1] for n-word contexts).
      capacity: distinct strings the summed table decodes (with high probability; TFF's sizing).
      seed: the IBLT's hash seed.
    """

    vocab_size: int
    quotas: tuple[int, ...]
    capacity: int
    seed: int = 0

    def __post_init__(self):
        check_range("vocab_size", self.vocab_size, 4, 65536, low_open=True)
        if not self.quotas or min(self.quotas) < 1:
            raise ConfigError(f"every context length needs a quota of at least 1 pair, got {self.quotas}")
        check_range("capacity", self.capacity, 1)

    @property
    def max_order(self) -> int:
        return len(self.quotas)

    @property
    def strings_per_user(self) -> int:
        """The most strings a client inserts: its pairs and at most as many contexts (each with count 1)."""
        return 2 * sum(self.quotas)

    @property
    def string_max_bytes(self) -> int:
        """The longest string: the marker, a context of max_order ids and the next word, in UTF-8."""
        return 1 + (self.max_order + 1) * _utf8_bytes(code_point(self.vocab_size - 1))

    def encoder(self):
        """TFF's IBLT encoder for this shape (its hashes, chunker and checksum are the decoder's too)."""
        from keyboard_lm.federated.runtime import import_tff

        iblt = import_tff().analytics.heavy_hitters.iblt
        return iblt.IbltEncoder(capacity=self.capacity, string_max_bytes=self.string_max_bytes,
                                repetitions=_REPETITIONS, seed=self.seed)

    @property
    def shape(self) -> tuple[int, int, int]:
        """[repetitions, table size, chunks + 2]: what each client sends and the server keeps."""
        return tuple(int(d) for d in self.encoder().iblt_shape)


def sentence_stream(dataset: tf.data.Dataset) -> tf.Tensor:
    """A client's sentences (each an int32 [n] of ids, without <bos>/<eos>) as one stream int32 [T], each
    sentence framed as <bos> w1..wn <eos>."""
    parts = tf.TensorArray(tf.int32, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
    for sentence in dataset:
        parts = parts.write(parts.size(), tf.concat([[SPECIAL_TOKENS.bos_id], sentence, [SPECIAL_TOKENS.eos_id]], 0))
    return parts.concat()


def _characters(ids: tf.Tensor) -> tf.Tensor:
    cp = ids + 1
    return tf.where(cp >= _SURROGATES, cp + _SURROGATE_SPAN, cp)


def client_strings(stream: tf.Tensor, spec: SketchSpec) -> tf.Tensor:
    """The strings one client reports: string [m], each once.

    For each context length n, the pairs (the n tokens before position i, token i) whose context holds no
    <eos> (no pair spans two sentences) and no <oov>, and whose target is not <oov>; the ``quotas[n - 1]``
    most frequent of them (ties: the smallest sum of ids, then the first typed), then the distinct contexts of
    the pairs kept.
    """
    special = SPECIAL_TOKENS
    kept = []
    for n, quota in enumerate(spec.quotas, start=1):
        frames = tf.signal.frame(stream, n + 1, 1, axis=0)  # [T - n, n + 1]: context, then the next token
        context, target = frames[:, :n], frames[:, n]
        # tf.not_equal, not !=: TFF traces with tensor equality off, where != compares the objects
        ok = (tf.reduce_all(tf.not_equal(context, special.eos_id) & tf.not_equal(context, special.oov_id), axis=1)
              & tf.not_equal(target, special.oov_id) & tf.not_equal(target, special.bos_id))
        frames = tf.boolean_mask(frames, ok)  # [m, n + 1]
        marker = tf.fill([tf.shape(frames)[0], 1], ord(PAIR))
        strings = tf.strings.unicode_encode(tf.concat([marker, _characters(frames)], 1), "UTF-8")  # [m]
        unique, index, counts = tf.unique_with_counts(strings)
        # The user's most frequent pairs of this length; among equally frequent ones (most pairs are typed
        # once) those of the commonest words (ids are frequency ranks: the smallest sum), which other users
        # are likeliest to share, then the first typed. On the mail this releases 40% more pairs at k = 5.
        ranks = tf.math.unsorted_segment_max(tf.reduce_sum(tf.cast(frames, tf.int64), 1), index, tf.size(unique))
        key = tf.cast(counts, tf.int64) * _RANK_SUM_SPAN - ranks  # a sum of <= 5 ids < 2^16 is below the span
        top = tf.argsort(-key, stable=True)[:quota]
        kept.append(tf.gather(unique, top))
    pairs = tf.concat(kept, 0)
    chars = tf.strings.length(pairs, unit="UTF8_CHAR")
    contexts = tf.strings.join([CONTEXT, tf.strings.substr(pairs, tf.ones_like(chars), chars - 2, unit="UTF8_CHAR")])
    return tf.concat([pairs, tf.unique(contexts).y], 0)


def client_sketch(dataset: tf.data.Dataset, spec: SketchSpec) -> tf.Tensor:
    """What a client sends: the IBLT of its strings, each with count 1. int64 [repetitions, table, chunks + 2]."""
    encoder = spec.encoder()  # held: compute_iblt is a tf.function method, which keeps only a weak reference
    return encoder.compute_iblt(client_strings(sentence_stream(dataset), spec))


def _inverse_mod(x: tf.Tensor, p: int) -> tf.Tensor:
    """x^(p - 2) mod p (Fermat; p prime), elementwise by squaring: every product is below p^2 < 2^62."""
    result, base, e = tf.ones_like(x), x % p, p - 2
    while e:
        if e & 1:
            result = result * base % p
        base = base * base % p
        e >>= 1
    return result


def decode_sketch(sketch: tf.Tensor, spec: SketchSpec) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The strings of a summed sketch and their counts: (string [m], int64 [m], int64 not decoded).

    Each pass finds every pure cell (its checksum matches the one string it decodes to, and that string hashes
    to it), removes those strings from all their cells, and repeats until no cell is pure. ``not decoded`` is
    the count left in the table (TFF's ``num_not_decoded``): 0 when the capacity held every string.
    """
    encoder = spec.encoder()
    p, rows, cols = encoder.field_size, encoder.repetitions, encoder.num_chunks
    count, check = cols, cols + 1
    table = tf.math.floormod(tf.cast(sketch, tf.int64), p)  # [R, T, cols + 2]
    strings = tf.TensorArray(tf.string, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
    counts = tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None])
    progress = tf.constant(True)
    while progress:
        tf.autograph.experimental.set_loop_options(shape_invariants=[(table, tf.TensorShape(table.shape))])
        where = tf.where(tf.not_equal(table[:, :, count], 0))  # [m, 2]: (repetition, index) of the non-empty cells
        cells = tf.gather_nd(table, where)  # [m, cols + 2]
        chunks = cells[:, :cols] * _inverse_mod(cells[:, count], p)[:, None] % p
        found = encoder.chunker.decode_tensorflow(chunks)  # [m]
        hashes = encoder.hyperedge_hasher.get_hash_indices_tf(found)  # [m, R, 3]: (string, repetition, index)
        at_cell = tf.gather(hashes[:, :, 2], where[:, 0], axis=1, batch_dims=1)
        pure = ((tf.strings.length(found) > 0)
                & tf.equal(cells[:, check], cells[:, count] * encoder._compute_hash_check(found)[:, 0] % p)
                & tf.equal(tf.cast(at_cell, tf.int64), where[:, 1]))
        unique, first = tf.unique(tf.boolean_mask(found, pure))  # a string pure in two cells is removed once
        n = tf.size(unique)
        progress = n > 0
        if progress:
            # A pure cell holds exactly the string's contribution (count * chunks, count, count * check), the
            # same in each of its cells: subtracting that row from its R cells removes the string.
            one = tf.math.unsorted_segment_max(tf.boolean_mask(cells, pure), first, n)  # [n, cols + 2]
            index = tf.cast(encoder.hyperedge_hasher.get_hash_indices_tf(unique)[:, :, 1:], tf.int64)  # [n, R, 2]
            table = tf.math.floormod(table - tf.scatter_nd(tf.reshape(index, [-1, 2]),
                                                           tf.repeat(one, rows, axis=0),
                                                           tf.shape(table, out_type=tf.int64)), p)
            strings = strings.write(strings.size(), unique)
            counts = counts.write(counts.size(), one[:, count])
    not_decoded = tf.reduce_sum(table[:, :, count]) // rows
    return strings.concat(), counts.concat(), not_decoded


def decode_strings(strings) -> tuple[dict, dict]:
    """({context ids: count}, {(context ids, next id): count}) of decoded (string, count) pairs (Python)."""
    contexts, pairs = {}, {}
    for text, users in strings:
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        ids = tuple((cp - _SURROGATE_SPAN if cp >= _SURROGATES + _SURROGATE_SPAN else cp) - 1
                    for cp in map(ord, text[1:]))
        if text[:1] == PAIR and len(ids) >= 2:
            pairs[(ids[:-1], ids[-1])] = users
        elif text[:1] == CONTEXT and ids:
            contexts[ids] = users
        else:
            raise ConfigError(f"decoded phrase string {text!r} is neither a pair nor a context: "
                              "the sketch was built with another spec")
    return contexts, pairs

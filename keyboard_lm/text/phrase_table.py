"""The phrase table: frequent (context, next word) pairs that many users typed, and its compact binary form.

A phrase memory beside the model (the 5-gram's lead over the neural models is phrases seen verbatim in
training: mailing-list footers, greetings, quoted text). Its counts come from federated discovery
(``keyboard_lm.federated.phrase_discovery``: each client reports only through a summed IBLT sketch, one
count per distinct pair and per distinct context, at most a bounded number of pairs per user, and a pair is
kept only when at least ``k`` distinct users typed it). This module holds what is known without TensorFlow:
the counts (``PhraseCounts``), the table built from them (``PhraseTable``: the top next words of each
context, their conditional frequencies, pruned to a byte budget), and its file format, which the exporter
appends to the .tflite as ``phrases.bin`` and the Python predictor and the Java core read.

A context is the last n tokens (1 <= n <= ``max_order``) of the sentence typed so far, ``<bos>`` included,
so "what starts a sentence" is the context ``(<bos>,)``. A context with ``<oov>`` (or a personal word) in
it is never stored and never matches. The table's distribution at a context is
``q(w | c) = users(c, w) / users(c)``: the share of the users who typed the context that followed it with
``w``, so one prolific sender counts as one user.

File format (``phrases.bin``, little-endian, version 1)::

    magic      4 bytes  b"KLPT"
    version    u16      1
    max_order  u8       longest context, 1..4
    reserved   u8       0
    vocab_size u32      the model's vocabulary size (a table for another vocabulary is refused)
    contexts   u32      C
    entries    u32      E
    hashes     u32[C]   context_hash of each context, strictly ascending (binary search)
    users      u16[C]   users(c), capped at 65535 (the mixture's confidence)
    counts     u8[C]    how many next words the context has (1..255); entries are in context order
    ids        u16[E]   next-word vocabulary ids, most frequent first within a context
    scores     u8[E]    q(w | c) quantized: round(255 * q), at least 1

``context_hash`` is 32-bit FNV-1a over the bytes of ``n`` (u32) then each id (u32), all little-endian: the
same few lines in Java. Two stored contexts never share a hash (the builder drops the less-used one); a
context outside the table hashes onto a stored one with probability about C / 2^32 (2e-6 for 8,000 contexts).
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from typing import Iterable, Sequence

import numpy as np

from keyboard_lm.config_checks import check_range
from keyboard_lm.errors import ConfigError

MAGIC = b"KLPT"
VERSION = 1
MAX_ORDER = 4
_HEADER = struct.Struct("<4sHBBIII")
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


class PhraseTableError(ConfigError):
    """A phrase table that is damaged, foreign (another vocabulary) or of an unknown version."""


def context_hash(context: Sequence[int]) -> int:
    """32-bit FNV-1a over n then each id, each as 4 little-endian bytes (the Java core computes the same)."""
    return _hash(tuple(context))


@functools.lru_cache(maxsize=8192)
def _hash(context: tuple) -> int:
    # Cached: a typing session looks up the same few contexts at every key (its strip, then completions).
    h = _FNV_OFFSET
    for byte in struct.pack(f"<{len(context) + 1}I", len(context), *(int(v) & 0xFFFFFFFF for v in context)):
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


@dataclasses.dataclass
class PhraseCounts:
    """What discovery released: distinct users per context and per (context, next word), after its floor.

    ``contexts``: {context ids: users}; ``pairs``: {(context ids, next id): users}. Counts may be noisy
    (floats) under differential privacy. ``info``: how they were found (clients, bounds, k, noise, ...).
    """

    contexts: dict
    pairs: dict
    info: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: {"contexts": [[ids..., users]], "pairs": [[context ids..., next id, users]], "info"}."""
        return {"contexts": [[*c, u] for c, u in sorted(self.contexts.items())],
                "pairs": [[*c, w, u] for (c, w), u in sorted(self.pairs.items())], "info": self.info}

    @classmethod
    def from_dict(cls, d, where: str = "phrase counts") -> "PhraseCounts":
        """The counts ``to_dict`` wrote; PhraseTableError naming ``where`` for anything else."""
        try:
            contexts = {tuple(int(i) for i in row[:-1]): float(row[-1]) for row in d["contexts"]}
            pairs = {(tuple(int(i) for i in row[:-2]), int(row[-2])): float(row[-1]) for row in d["pairs"]}
            info = d.get("info") or {}
        except (TypeError, KeyError, ValueError, IndexError, AttributeError) as e:
            raise PhraseTableError(f"{where}: not phrase counts ({type(e).__name__}: {str(e)[:60]})") from None
        if any(not 1 <= len(c) <= MAX_ORDER for c in (*contexts, *(c for c, _ in pairs))):
            raise PhraseTableError(f"{where}: a context outside 1..{MAX_ORDER} words")
        return cls(contexts, pairs, info)


@dataclasses.dataclass(frozen=True)
class TableConfig:
    """How a table is cut from the counts.

    Attributes:
      max_next: next words kept per context (the strip shows 3; a few more let the mixture re-rank).
      min_share: a next word below this share of its context's users is dropped (it rarely wins a slot).
      max_bytes: the table's size budget in bytes (``phrases.bin``); contexts are dropped, least-used first.
    """

    max_next: int = 4
    min_share: float = 0.05
    max_bytes: int = 64 * 1024

    def __post_init__(self):
        check_range("max_next", self.max_next, 1, 255)
        check_range("min_share", self.min_share, 0, 1, high_open=True)
        check_range("max_bytes", self.max_bytes, _HEADER.size)


class PhraseTable:
    """Sorted context hashes and their top next words: the lookup a keyboard does at every position."""

    def __init__(self, vocab_size: int, max_order: int, hashes: np.ndarray, users: np.ndarray,
                 counts: np.ndarray, ids: np.ndarray, scores: np.ndarray):
        self.vocab_size = int(vocab_size)
        self.max_order = int(max_order)
        self.hashes = np.asarray(hashes, np.uint32)
        self.users = np.asarray(users, np.uint16)
        self.counts = np.asarray(counts, np.uint8)
        self.ids = np.asarray(ids, np.uint16)
        self.scores = np.asarray(scores, np.uint8)
        self.offsets = np.concatenate([[0], np.cumsum(self.counts, dtype=np.int64)])
        self._hash_index = {int(h): i for i, h in enumerate(self.hashes.tolist())}

    # -- building ----------------------------------------------------------------
    @classmethod
    def build(cls, counts: PhraseCounts, vocab_size: int, config: TableConfig = TableConfig(),
              max_order: int = MAX_ORDER, exclude: Iterable[int] = ()) -> "PhraseTable":
        """The table of ``counts``: each context's ``max_next`` most used next words (ties by id), pruned.

        ``exclude``: ids never stored as next words (special tokens other than end of sentence is the
        caller's choice; blocklisted words). Contexts longer than ``max_order`` or with ids outside the
        vocabulary are refused (PhraseTableError): the counts are for another vocabulary.
        """
        excluded = set(int(i) for i in exclude)
        by_context: dict[tuple, list] = {}
        for (context, word), users in counts.pairs.items():
            context = tuple(int(i) for i in context)
            _check_ids(context, word, vocab_size, max_order)
            if users <= 0 or int(word) in excluded:
                continue
            by_context.setdefault(context, []).append((int(word), float(users)))
        rows = []  # (users(c), hash, [(id, q)])
        for context, words in by_context.items():
            total = float(counts.contexts.get(context, 0.0))
            total = max(total, max(u for _, u in words))  # noisy counts may leave a context below one of its pairs
            if total <= 0:
                continue
            words.sort(key=lambda wu: (-wu[1], wu[0]))
            kept = [(w, u / total) for w, u in words[:config.max_next] if u / total >= config.min_share]
            if kept:
                rows.append((total, context_hash(context), kept))
        # Hash collisions: keep the more used context (its entry is the one a lookup would want).
        rows.sort(key=lambda r: (-r[0], r[1]))
        seen, unique = set(), []
        for row in rows:
            if row[1] not in seen:
                seen.add(row[1])
                unique.append(row)
        # The byte budget: most used contexts first.
        budget, used, chosen = config.max_bytes - _HEADER.size, 0, []
        for row in unique:
            cost = 7 + 3 * len(row[2])
            if used + cost > budget:
                continue
            used += cost
            chosen.append(row)
        chosen.sort(key=lambda r: r[1])
        return cls(vocab_size, max_order,
                   hashes=[r[1] for r in chosen],
                   users=[min(65535, max(1, int(round(r[0])))) for r in chosen],
                   counts=[len(r[2]) for r in chosen],
                   ids=[w for r in chosen for w, _ in r[2]],
                   scores=[max(1, min(255, int(round(255 * q)))) for r in chosen for _, q in r[2]])

    # -- the file format --------------------------------------------------------
    def to_bytes(self) -> bytes:
        header = _HEADER.pack(MAGIC, VERSION, self.max_order, 0, self.vocab_size, len(self.hashes), len(self.ids))
        return b"".join([header, self.hashes.astype("<u4").tobytes(), self.users.astype("<u2").tobytes(),
                         self.counts.astype("u1").tobytes(), self.ids.astype("<u2").tobytes(),
                         self.scores.astype("u1").tobytes()])

    @classmethod
    def from_bytes(cls, data: bytes, vocab_size: int, where: str = "phrase table") -> "PhraseTable":
        """Parse and check a ``phrases.bin``; every problem is one PhraseTableError naming ``where``."""
        if len(data) < _HEADER.size:
            raise PhraseTableError(f"{where}: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
        magic, version, max_order, _, v, c, e = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise PhraseTableError(f"{where}: not a phrase table (magic {magic!r})")
        if version != VERSION:
            raise PhraseTableError(f"{where}: phrase table version {version}, this version reads {VERSION}")
        if not 1 <= max_order <= MAX_ORDER:
            raise PhraseTableError(f"{where}: max_order {max_order} outside [1, {MAX_ORDER}]")
        if v != vocab_size:
            raise PhraseTableError(f"{where}: the table is for a vocabulary of {v} words, the model has {vocab_size}")
        expected = _HEADER.size + 7 * c + 3 * e
        if len(data) != expected:
            raise PhraseTableError(f"{where}: {len(data)} bytes, the header's {c} contexts and {e} entries "
                                   f"need {expected}")
        at = _HEADER.size
        parts = []
        for dtype, n in (("<u4", c), ("<u2", c), ("u1", c), ("<u2", e), ("u1", e)):
            width = np.dtype(dtype).itemsize
            parts.append(np.frombuffer(data, dtype, n, at).astype(dtype[-2:]))
            at += width * n
        hashes, users, counts, ids, scores = parts
        if c and np.any(np.diff(hashes.astype(np.int64)) <= 0):
            raise PhraseTableError(f"{where}: context hashes are not strictly ascending")
        if np.any(counts == 0) or int(counts.sum(dtype=np.int64)) != e:
            raise PhraseTableError(f"{where}: the contexts' next-word counts do not add up to {e} entries")
        if e and int(ids.max()) >= vocab_size:
            raise PhraseTableError(f"{where}: next-word id {int(ids.max())} outside the vocabulary [0, {vocab_size})")
        if np.any(scores == 0) or np.any(users == 0):
            raise PhraseTableError(f"{where}: a zero score or user count (the builder writes at least 1)")
        return cls(v, max_order, hashes, users, counts, ids, scores)

    # -- lookup ------------------------------------------------------------------
    def lookup(self, tokens: Sequence[int]) -> tuple[int, int, np.ndarray, np.ndarray] | None:
        """The longest stored context ending ``tokens`` (the sentence so far, ``<bos>`` first).

        Returns (n, users(c), next ids [m], q [m] float32) or None when no context of 1..max_order
        tokens matches. ``tokens`` may hold -1 for a word outside the vocabulary: no context spans it.
        """
        for n in range(min(self.max_order, len(tokens)), 0, -1):
            context = tokens[len(tokens) - n:]
            if any(t < 0 for t in context):
                continue  # a shorter context may still not span the unknown word
            i = self._hash_index.get(context_hash(context))
            if i is not None:
                lo, hi = self.offsets[i], self.offsets[i + 1]
                return n, int(self.users[i]), self.ids[lo:hi].astype(np.int64), self.scores[lo:hi] / np.float32(255)
        return None

    def __len__(self) -> int:
        return len(self.hashes)

    @property
    def size_bytes(self) -> int:
        return _HEADER.size + 7 * len(self.hashes) + 3 * len(self.ids)


def _check_ids(context: tuple, word, vocab_size: int, max_order: int) -> None:
    if not 1 <= len(context) <= max_order:
        raise PhraseTableError(f"a context of {len(context)} words; contexts have 1..{max_order}")
    for i in (*context, word):
        if not 0 <= int(i) < vocab_size:
            raise PhraseTableError(f"id {int(i)} outside the vocabulary [0, {vocab_size}): counts for another "
                                   "vocabulary")

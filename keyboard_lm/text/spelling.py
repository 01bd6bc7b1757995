"""A word's spelling as the char encoder reads it: UTF-8 bytes between begin and end markers (no TensorFlow).

One encoding for every reader of spellings: the char encoder's training (``keyboard_lm.char_encoder``),
the exported encoder run on the device (``keyboard_lm.inference.personal_words``) and the choice of which
words it can take (``keyboard_lm.inference.personalization``). Training and the device must agree byte for
byte, or a personal word lands somewhere in the embedding space the encoder never learnt.

A word of n UTF-8 bytes becomes ``[BOW, b_1 + 3, ..., b_n + 3, EOW, PAD, ...]``, ``max_bytes + 2`` ids
long (Shenoy & Nguyen's byte-level CNN input). A word longer than ``max_bytes`` is refused, never cut:
two long words sharing their first ``max_bytes`` bytes would get one embedding.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from keyboard_lm.errors import ConfigError

PAD, BOW, EOW = 0, 1, 2
#: Byte b has id b + BYTE_OFFSET, leaving room for PAD, BOW and EOW.
BYTE_OFFSET = 3
#: Number of distinct ids: 256 bytes and the three markers (the encoder's embedding table has this many rows).
ALPHABET_SIZE = 256 + BYTE_OFFSET


def spelling_length(word: str) -> int:
    """The word's length in UTF-8 bytes, the unit of the encoder's limit."""
    return len(word.encode("utf-8"))


def fits(word: str, max_bytes: int) -> bool:
    """True when the encoder can take ``word`` whole (at most ``max_bytes`` UTF-8 bytes)."""
    return spelling_length(word) <= max_bytes


def encode_spellings(words: Sequence[str], max_bytes: int) -> np.ndarray:
    """Words -> int32 [n, max_bytes + 2] byte ids with begin/end markers, PAD after.

    Raises ConfigError naming the word if it is empty/whitespace or longer than
    ``max_bytes`` UTF-8 bytes (no silent truncation: two long words must not collide).
    """
    out = np.full((len(words), max_bytes + 2), PAD, dtype=np.int32)
    for i, word in enumerate(words):
        if not isinstance(word, str) or not word.strip():
            raise ConfigError(f"word {i} is empty or whitespace: {word!r}")
        raw = word.encode("utf-8")
        if len(raw) > max_bytes:
            raise ConfigError(f"word {i} {word[:40]!r} is {len(raw)} UTF-8 bytes, above the encoder's limit of {max_bytes}")
        out[i, : len(raw) + 2] = [BOW, *(b + BYTE_OFFSET for b in raw), EOW]
    return out

"""Word vocabulary: top-N words by count, special tokens first.

The file format is plain UTF-8 text, one token per line, in id order; the
first lines are the special tokens of ``SpecialTokens`` so any reader (Python,
TFLite metadata, Java) can check them.  No TensorFlow here.
"""

from __future__ import annotations

import collections
import hashlib
import os
from typing import Iterable, Mapping, Sequence

from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spec import SPECIAL_TOKENS, SpecialTokens

DEFAULT_VOCAB_SIZE = 10_000


class Vocabulary:
    """An immutable mapping between words and ids; ids 0-3 are special tokens."""

    def __init__(self, tokens: Sequence[str], special: SpecialTokens = SPECIAL_TOKENS):
        tokens = list(tokens)
        n_special = len(special.tokens)
        if tuple(tokens[:n_special]) != special.tokens:
            raise ConfigError(
                f"vocabulary must start with the special tokens {list(special.tokens)}, "
                f"got {tokens[:n_special]}"
            )
        seen: dict[str, int] = {}
        for i, tok in enumerate(tokens):
            if not tok or any(c in tok for c in "\n\r"):
                raise ConfigError(f"vocabulary entry {i} is empty or contains a line break: {tok!r}")
            if tok in seen:
                raise ConfigError(f"vocabulary entry {i} {tok!r} duplicates entry {seen[tok]}")
            seen[tok] = i
        self._tokens = tuple(tokens)
        self._ids = seen
        self.special = special

    @classmethod
    def build(
        cls,
        token_counts: Mapping[str, int],
        size: int = DEFAULT_VOCAB_SIZE,
        special: SpecialTokens = SPECIAL_TOKENS,
    ) -> "Vocabulary":
        """The ``size - 4`` most frequent words plus the special tokens.

        Ties are broken alphabetically so the result is deterministic.
        """
        n_special = len(special.tokens)
        if size <= n_special:
            raise ConfigError(f"vocabulary size must exceed {n_special} (the special tokens), got {size}")
        words = [w for w in token_counts if w not in special.tokens]
        words.sort(key=lambda w: (-token_counts[w], w))
        return cls(list(special.tokens) + words[: size - n_special], special)

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[str]], size: int = DEFAULT_VOCAB_SIZE) -> "Vocabulary":
        counts: collections.Counter[str] = collections.Counter()
        for sentence in sentences:
            counts.update(sentence)
        return cls.build(counts, size)

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._ids

    @property
    def tokens(self) -> tuple[str, ...]:
        return self._tokens

    def id_of(self, token: str) -> int:
        """Id of ``token``, or the OOV id."""
        return self._ids.get(token, self.special.oov_id)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return [self._ids.get(t, self.special.oov_id) for t in tokens]

    def token_of(self, idx: int) -> str:
        return self._tokens[idx]

    def fingerprint(self) -> str:
        """sha256 of the saved file's bytes, to detect a vocabulary mismatch."""
        return hashlib.sha256(self.to_text().encode("utf-8")).hexdigest()

    def to_text(self) -> str:
        return "".join(t + "\n" for t in self._tokens)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(self.to_text())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocabulary":
        try:
            with open(path, encoding="utf-8", newline="\n") as f:
                text = f.read()
        except OSError as e:
            raise ConfigError(f"cannot read vocabulary {path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"vocabulary {path} is not UTF-8 (byte {e.start})") from None
        return cls.from_text(text, source=str(path))

    @classmethod
    def from_text(cls, text: str, source: str = "<text>") -> "Vocabulary":
        if not text.endswith("\n"):
            raise ConfigError(f"vocabulary {source} is empty or truncated (no final newline)")
        try:
            return cls(text[:-1].split("\n"))
        except ConfigError as e:
            raise ConfigError(f"vocabulary {source}: {e}") from None

"""Pure-Python implementation of the text spec (no TensorFlow).

Used by the inference side and by corpus statistics.  It follows the rules in
``keyboard_lm.text.spec`` character by character, so it agrees with the RE2
patterns used by the tensorflow-text pipeline; the golden vectors check both.
"""

from __future__ import annotations

import unicodedata

from keyboard_lm.text import spec

_APOSTROPHES = str.maketrans({c: "'" for c in spec.APOSTROPHE_VARIANTS})
_CONTROLS = str.maketrans({c: " " for lo, hi in spec.CONTROL_RANGES for c in range(lo, hi + 1)})
_TERMINATORS = frozenset(spec.TERMINATOR_CHARS)
_SKIN_TONES = frozenset(spec.EMOJI_SKIN_TONES)


def normalize(text: str) -> str:
    """Spec step 1: controls to spaces, NFKC, lowercase, unify apostrophes."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    text = text.translate(_CONTROLS)
    return unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)


def _is_w(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LMN"


def _is_digit(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "N"


def _is_so(ch: str) -> bool:
    return unicodedata.category(ch) == "So"


def _match_url(s: str, i: int) -> int:
    for prefix in spec.URL_PREFIXES:
        if s.startswith(prefix, i):
            start = i + len(prefix)
            j = start
            while j < len(s) and s[j] not in spec.URL_STOP:
                j += 1
            # Backtrack over trailing punctuation, never into the prefix.
            while j > start and s[j - 1] in spec.URL_TRAILING_STRIP:
                j -= 1
            return j if j > start else i
    return i


def _run(s: str, i: int, pred) -> int:
    while i < len(s) and pred(s[i]):
        i += 1
    return i


def _match_number(s: str, i: int) -> int:
    j = _run(s, i, _is_digit)
    if j == i:
        return i
    end = i
    while j < len(s) and s[j] in spec.NUMBER_JOINERS:
        k = _run(s, j + 1, _is_digit)
        if k == j + 1:
            break
        end = j = k
    return end  # i when no join followed: not a NUMBER


def _match_word(s: str, i: int) -> int:
    j = _run(s, i, _is_w)
    if j == i:
        return i
    while j < len(s) and s[j] == spec.WORD_JOINER:
        k = _run(s, j + 1, _is_w)
        if k == j + 1:
            break
        j = k
    return j


def _match_emoji(s: str, i: int) -> int:
    if not _is_so(s[i]):
        return i
    j = i + 1
    while j < len(s):
        if s[j] == spec.EMOJI_VARIATION_SELECTOR or s[j] in _SKIN_TONES:
            j += 1
        elif s[j] == spec.EMOJI_ZWJ and j + 1 < len(s) and _is_so(s[j + 1]):
            j += 2
        else:
            break
    return j


def scan(text: str):
    """Yield (kind, token) over ``text`` in order: kind "token", or "end" for a terminator run."""
    return _scan(normalize(text))


def _scan(normalized: str):
    """Yield (kind, token) with kind 'token' or 'end' (a terminator)."""
    s, i, n = normalized, 0, len(normalized)
    while i < n:
        for matcher in (_match_url, _match_number, _match_word, _match_emoji):
            j = matcher(s, i)
            if j > i:
                yield "token", s[i:j]
                i = j
                break
        else:
            if s[i] in _TERMINATORS:
                j = _run(s, i, _TERMINATORS.__contains__)
                yield "end", s[i:j]
                i = j
            else:
                i += 1  # separator: dropped by the spec


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` (terminators removed), e.g. "Don't go!" -> ["don't", "go"]."""
    return [tok for kind, tok in _scan(normalize(text)) if kind == "token"]


def sentences(text: str) -> list[list[str]]:
    """Sentences of ``text`` as token lists; empty sentences are dropped."""
    out: list[list[str]] = []
    current: list[str] = []
    for kind, tok in _scan(normalize(text)):
        if kind == "token":
            current.append(tok)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def ends_sentence(text: str) -> bool:
    """True when the last thing in ``text`` (ignoring separators) is a terminator."""
    last = None
    for kind, _ in _scan(normalize(text)):
        last = kind
    return last == "end"

"""Typo candidates for the word being typed: vocabulary prefixes one keyboard slip away from the typed letters.

A noisy channel, as keyboards correct (LatinIME scores proximity and edit distance; Kernighan, Church & Gale
1990 give the channel): the letters typed ``t`` came from an intended word whose first letters ``p`` the
user meant to type, with one slip among

* substitution: one key for another (``wrek`` for ``week``); a key next to the intended one on a phone's
  QWERTY layout is far likelier than any other (``TypoModel.near_substitution`` vs ``far_substitution``, the
  latter from ``far_min_letters`` typed letters on);
* transposition of two adjacent letters (``teh`` for ``the``);
* omission: a letter of ``p`` left out (``wek`` for ``week``);
* insertion: an extra letter typed (``wesek``), likelier when it doubles a neighbouring letter or is the
  key next to it (a finger touching two keys: ``near_insertion`` vs ``far_insertion``, the latter from
  ``far_min_letters`` typed letters on).

Each slip has a factor f, the channel's probability of that slip relative to typing ``p`` as is (f = 1).
A completion ranks every word w that starts with ``t`` (f = 1, as before) or with a typo prefix ``p``
(f < 1) by ``f * P(w | context)``, the stack's probability (``keyboard_lm.inference.ranker``): a correction
outranks a word that starts with the letters as typed only when the model finds it 1/f times likelier
there. One slip per word (Damerau 1964 found 80% of misspellings one slip away); none before
``min_letters`` letters.

Fast: a ``TypoIndex`` is built once per vocabulary. Substitution and omission are looked up in a
deletion-neighbourhood index over prefixes (SymSpell, Garbe 2012), keyed by the position deleted: every
prefix ``p`` is stored under (``p`` without letter j, j) for each j. The typed letters without letter i,
looked up at i, give every prefix that differs from ``t`` in letter i alone, by a neighbouring key or a far
one (one lookup, where trying each neighbouring key would take several); ``t`` itself looked up at j,
every prefix ``t`` lacks letter j of. Transposition and insertion are exact lookups of ``t``'s own
variants. A completion so costs about 4n lookups for n typed letters, never a pass over the vocabulary.
The Java core's ``TypoIndex`` implements the same rules over the same keys, and also keeps the candidates of
every prefix of its vocabulary from the start (the letters typed mostly are one): the same lists.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Sequence

from keyboard_lm.config_checks import check_range
from keyboard_lm.errors import ConfigError

#: A phone's QWERTY letter rows and how far each is shifted right, in quarter key widths (the staggered layout).
QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_ROW_SHIFT = (0, 1, 3)
#: Keys whose centres are at most this far apart, squared, in quarter key widths, are neighbours: the keys
#: beside one in its row (4 apart) and those of the rows above and below at most 3/4 of a key aside
#: (3^2 + 4^2 = 25). Integers, so that Java draws exactly the same neighbours.
NEIGHBOUR_DISTANCE_SQ = 25
_CENTRES = {ch: (4 * col + _ROW_SHIFT[row], 4 * row) for row, keys in enumerate(QWERTY_ROWS)
            for col, ch in enumerate(keys)}
#: Ordered pairs of distinct neighbouring keys, as two-letter strings.
_NEAR = frozenset(a + b for a, (xa, ya) in _CENTRES.items() for b, (xb, yb) in _CENTRES.items()
                  if a != b and (xa - xb) ** 2 + (ya - yb) ** 2 <= NEIGHBOUR_DISTANCE_SQ)
#: The longest typed word corrected; longer ones get prefix matches only (the index holds prefixes up to one
#: letter longer, for an omission).
MAX_LETTERS = 20


def neighbours(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are two distinct neighbouring keys of the QWERTY layout (lower-case letters)."""
    return a + b in _NEAR


@dataclasses.dataclass(frozen=True)
class TypoModel:
    """The channel: each slip's factor (its probability relative to no slip), and from how many letters on.

    The defaults put a neighbouring key and a swap of two letters first (1/50: a correction must be 50 times
    likelier in context than a word that starts with the letters as typed to outrank it), then a left-out
    letter and a doubled or neighbouring extra key (1/100), a far extra key (1/200) and a far key (1/500),
    the order keyboards give them.
    """

    near_substitution: float = 0.02
    far_substitution: float = 0.002
    transposition: float = 0.02
    omission: float = 0.01
    near_insertion: float = 0.01
    far_insertion: float = 0.005
    #: Typed letters before corrections are offered (two letters are one slip away from much of a vocabulary).
    min_letters: int = 3
    #: Typed letters before a far key or a far extra key is corrected too: three or four letters are one far
    #: slip away from dozens of prefixes (an extra last letter from every word that starts with the others)
    #: that almost never win, and ranking them was most of a completion's cost; the misspellings a far slip
    #: fixes (``seperate``) are in longer words.
    far_min_letters: int = 5

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name.endswith("min_letters"):
                check_range(f"typo model {field.name}", value, 2, MAX_LETTERS + 1, integer=True, kind="an int")
            else:
                check_range(f"typo model {field.name}", value, 0, 1, low_open=True, high_open=True,
                            kind="a probability")
        if self.min_letters > MAX_LETTERS:
            raise ConfigError(f"typo model min_letters must be at most {MAX_LETTERS}, got {self.min_letters}")


class TypoIndex:
    """The prefixes of a vocabulary's words and their deletion neighbourhood (module docstring).

    ``words``: the words that may be suggested, sorted in code point order (the ``Ranker``'s completion
    order), so the words that start with a prefix are one range of them. About 0.2 s of CPython and 16 MB
    for the demo model's 9,847 words (138,000 keys): a ranker builds it at its first correction.
    """

    def __init__(self, words: Sequence[str]):
        ranges: dict[str, list[int]] = {}
        for i, word in enumerate(words):
            for n in range(1, min(len(word), MAX_LETTERS + 1) + 1):
                r = ranges.get(word[:n])
                if r is None:
                    ranges[word[:n]] = [i, i + 1]
                else:
                    r[1] = i + 1
        self._ranges = {p: (lo, hi) for p, (lo, hi) in ranges.items()}
        # (prefix without letter j) + tag(j) -> the prefixes (one, or a tuple of several); prefixes of 2+
        # letters, since a typo prefix is at least min_letters - 1 >= 1 letters long after a deletion.
        deleted: dict[str, object] = {}
        for p in self._ranges:
            if len(p) < 2:
                continue
            for j in range(len(p)):
                key = p[:j] + p[j + 1:] + _TAGS[j]
                had = deleted.get(key)
                deleted[key] = p if had is None else (had + (p,) if isinstance(had, tuple) else (had, p))
        self._deleted = deleted

    def __len__(self) -> int:
        """Keys of the deletion index."""
        return len(self._deleted)

    def prefix_range(self, prefix: str) -> tuple[int, int] | None:
        """(lo, hi): ``words[lo:hi]`` start with ``prefix``; None when no word does."""
        return self._ranges.get(prefix)

    def candidates(self, typed: str, model: TypoModel) -> list[tuple[str, float]]:
        """The typo prefixes of ``typed`` (the normalized letters being typed) with their factors, sorted.

        Every prefix ``p != typed`` of a word one slip away (module docstring), with the largest factor
        among the slips that give it; none below ``model.min_letters`` letters nor above MAX_LETTERS.
        """
        n = len(typed)
        if n < model.min_letters or n > MAX_LETTERS:
            return []
        found: dict[str, float] = {}
        get, ranges, near_pairs = self._deleted.get, self._ranges, _NEAR
        near_sub, far_sub, omission = model.near_substitution, model.far_substitution, model.omission
        # A far key for the last letter gives a prefix that starts with typed[:-1], whose words the
        # insertion of that last letter already offers with a factor at least far_insertion: where that is
        # no less than far_substitution only the neighbouring keys matter there.
        # Below far_min_letters no far key (nor far extra key) is corrected: neighbouring keys only, everywhere.
        near_only = n < model.far_min_letters
        last_near_only = near_only or far_sub <= model.far_insertion
        for i in range(n):
            c, rest, tag = typed[i], typed[:i] + typed[i + 1:], _TAGS[i]
            # substitution: p[i] intended, c hit; p is t without letter i, stored at i (one lookup for every
            # key, near or far, where looking each neighbouring key up would take several)
            far = not (near_only or i == n - 1 and last_near_only)
            hit = get(rest + tag)
            if hit is not None:
                for p in (hit,) if isinstance(hit, str) else hit:
                    f = near_sub if p[i] + c in near_pairs else far_sub if far else 0.0
                    if f > found.get(p, 0.0):
                        found[p] = f
            # omission: p[i] left out (i = n would be a word starting with the letters as typed)
            hit = get(typed + tag)
            if hit is not None:
                for p in (hit,) if isinstance(hit, str) else hit:
                    if omission > found.get(p, 0.0):
                        found[p] = omission
            # insertion: c is extra (a far one, like a far key, from far_min_letters on)
            if rest in ranges:
                near = (i > 0 and (typed[i - 1] == c or typed[i - 1] + c in near_pairs)
                        or i + 1 < n and (typed[i + 1] == c or typed[i + 1] + c in near_pairs))
                if near or not near_only:
                    f = model.near_insertion if near else model.far_insertion
                    if f > found.get(rest, 0.0):
                        found[rest] = f
        for i in range(n - 1):  # transposition of letters i and i + 1
            if typed[i] != typed[i + 1]:
                p = typed[:i] + typed[i + 1] + typed[i] + typed[i + 2:]
                if p in ranges and model.transposition > found.get(p, 0.0):
                    found[p] = model.transposition
        found.pop(typed, None)  # a substitution of a letter by itself: the letters as typed
        return sorted(found.items())

    def cover(self, typed: str, typos: Sequence[tuple[str, float]]) -> list[tuple[int, int, float]]:
        """Disjoint ranges (lo, hi, factor) of ``words`` holding every word that starts with ``typed`` (factor 1)
        or with a typo prefix of ``typos`` (sorted, as ``candidates`` gives them), each with its largest factor.

        A prefix whose ancestor among them has a factor at least as large adds nothing; the rest nest (a
        prefix's words are one range, inside its ancestors'), and a word takes the factor of the innermost
        range holding it.
        """
        ranges, chain = [], []  # chain: the kept ancestors of the current prefix, innermost last
        at = bisect.bisect_left(typos, (typed,))
        for p, f in [*typos[:at], (typed, 1.0), *typos[at:]]:  # in code point order, ancestors first
            while chain and not p.startswith(chain[-1][0]):
                chain.pop()
            if chain and f <= chain[-1][1]:
                continue  # every word here already has a factor at least as large
            r = self._ranges.get(p)
            if r is not None:
                chain.append((p, f))
                ranges.append((r[0], r[1], f))
        if len(ranges) == 1:
            return ranges
        segments, enclosing = [], []  # enclosing: [hi, factor, next position not yet given out]
        for lo, hi, f in ranges:
            while enclosing and enclosing[-1][0] <= lo:
                end, g, start = enclosing.pop()
                if start < end:
                    segments.append((start, end, g))
            if enclosing:
                if enclosing[-1][2] < lo:
                    segments.append((enclosing[-1][2], lo, enclosing[-1][1]))
                enclosing[-1][2] = hi
            enclosing.append([hi, f, lo])
        while enclosing:
            end, g, start = enclosing.pop()
            if start < end:
                segments.append((start, end, g))
        return segments


# The position tag after a string with a letter deleted: normalized text holds no control characters (the
# text spec maps them to spaces), so U+0001.. cannot be confused with a letter.
_TAGS = tuple(chr(1 + j) for j in range(MAX_LETTERS + 1))

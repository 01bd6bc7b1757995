"""What one user has typed, remembered on the device: decayed counts of words and word pairs.

The user-history model of production keyboards (Android's LatinIME keeps a
UserHistoryDictionary of what its user typed, words outside the dictionary
included, with counts that fade): every committed word adds one to its count
and to the count of the pair (previous word, word); older counts decay by
half every ``half_life`` learnt words, so a habit that stopped fades. Its
next-word distribution is the pair counts after the previous word, smoothed
towards the unigram counts:

    p(w | prev) = (c(prev, w) + beta * c(w) / C) / (c(prev, .) + beta)

where ``C`` is the decayed total of all words. A sentence's first word has
the previous word ``<s>``.

Bounded: at most ``max_words`` words and ``max_pairs`` pairs; when a bound is
passed, the entries with the smallest decayed counts (then the least recently
seen) are evicted down to 90% of it. The bounds themselves are capped by the
code (``MAX_WORDS``, ``MAX_PAIRS``), and so is every number a file may hold:
a file cannot ask for more memory or time than the code allows. Pure Python
(no numpy, no TensorFlow), so the Java core can compute the same numbers
(golden vectors).
"""

from __future__ import annotations

import bisect
import json
import math
import threading

from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.inference.user_files import read_limited, write_atomic

FORMAT = "keyboard_lm.user_history"
VERSION = 1
START = "<s>"
#: How many of the most counted words are always candidates for a suggestion (``UserHistory.candidates``).
TOP_WORDS = 64
#: The largest bounds a history may have (10 and 5 times the defaults), whatever a file declares: they fix
#: its memory and its cost per learnt word.
MAX_WORDS, MAX_PAIRS = 20_000, 50_000
#: The largest history file ``load`` reads (and ``save`` writes): a full history at MAX_WORDS and MAX_PAIRS
#: is about 3 MB of JSON.
MAX_FILE_BYTES = 8 * 1024 * 1024
#: The parameters' ranges (a half-life under one word means nothing; a larger beta is the unigram alone).
HALF_LIFE_RANGE, BETA_RANGE = (1.0, 1e9), (1e-6, 1e6)
#: The largest word clock a file may hold: 2**53, where floats stop counting every integer.
MAX_CLOCK = 2 ** 53


class UserHistory:
    """Decayed unigram and bigram counts of one user's words (see the module docstring)."""

    def __init__(self, half_life: float = 2000.0, max_words: int = 2000, max_pairs: int = 10000,
                 beta: float = 2.0):
        for name, value, (lo, hi), integer in (("half_life", half_life, HALF_LIFE_RANGE, False),
                                               ("beta", beta, BETA_RANGE, False),
                                               ("max_words", max_words, (1, MAX_WORDS), True),
                                               ("max_pairs", max_pairs, (1, MAX_PAIRS), True)):
            if not _in_range(value, lo, hi, integer):
                raise ConfigError(f"{name} must be {_range(lo, hi, integer)}, got {_shown(value)}")
        self.half_life, self.max_words, self.max_pairs, self.beta = float(half_life), max_words, max_pairs, float(beta)
        # Learning and saving may run on different threads (a keyboard saves in the background): ``to_dict``
        # takes its snapshot under this lock, or a word learnt half-way through it would leave a file whose
        # entries are newer than its clock, which ``load`` refuses.
        self._lock = threading.Lock()
        self._empty()

    def _empty(self) -> None:
        self.clock = 0  # words learnt so far
        self._words: dict[str, list[float]] = {}  # word -> [count, clock when last counted]
        self._pairs: dict[str, dict[str, list[float]]] = {}  # prev -> word -> [count, clock]
        self._num_pairs = 0  # kept as pairs come and go: summing it per learnt word cost O(contexts)
        self._total = [0.0, 0]  # decayed count of all words, clock
        self._contexts: dict[str, list[float]] = {}  # prev -> [decayed count of pairs after it, clock]
        self._top: list[str] | None = None  # top_words(), kept up to date as words are learnt
        self._sorted: list[str] | None = None  # the words in order, for words_with_prefix; built when asked
        #: The mixture weight chosen for this user on their own held-out text (``Session.personalize``);
        #: None: the session's default. Saved with the history.
        self.weight: float | None = None

    # -- counting ----------------------------------------------------------------
    def _decayed(self, entry) -> float:
        return entry[0] * 0.5 ** ((self.clock - entry[1]) / self.half_life)

    def _add(self, entry) -> None:
        entry[0] = self._decayed(entry) + 1.0
        entry[1] = self.clock

    def learn(self, words) -> None:
        """Count one sentence (a list of normalized words, as the tokenizer gives them)."""
        if isinstance(words, str):
            raise ConfigError("learn() takes a list of words (one sentence), not a string")
        prev = START
        for word in words:
            self.learn_word(prev, word)
            prev = word

    def learn_word(self, prev: str | None, word: str) -> None:
        """Count ``word`` typed after ``prev`` (None or ``<s>``: the first word of a sentence)."""
        if not isinstance(word, str) or not word or word == START:
            raise ConfigError(f"not a word to learn: {word!r}")
        prev = START if prev is None else prev
        with self._lock:
            self._learn_word(prev, word)

    def _learn_word(self, prev: str, word: str) -> None:
        self.clock += 1
        if self._sorted is not None and word not in self._words:
            bisect.insort(self._sorted, word)
        self._add(self._words.setdefault(word, [0.0, self.clock]))
        nxt = self._pairs.setdefault(prev, {})
        if word not in nxt:
            self._num_pairs += 1
        self._add(nxt.setdefault(word, [0.0, self.clock]))
        self._add(self._contexts.setdefault(prev, [0.0, self.clock]))
        self._add(self._total)
        self._update_top(word)
        if len(self._words) > self.max_words:
            self._evict_words()
            self._top = self._sorted = None
        if self.num_pairs > self.max_pairs:
            self._evict_pairs()

    @property
    def num_words(self) -> int:
        return len(self._words)

    @property
    def num_pairs(self) -> int:
        return self._num_pairs

    def _evict_words(self) -> None:
        keep = int(self.max_words * 0.9)
        ranked = sorted(self._words.items(), key=lambda kv: (self._decayed(kv[1]), kv[1][1]), reverse=True)
        for word, entry in ranked[keep:]:
            del self._words[word]
            self._total[0] = max(0.0, self._decayed(self._total) - self._decayed(entry))
            self._total[1] = self.clock
        # Pairs that end in an evicted word go with it; their contexts keep their (decayed) totals.
        for prev in list(self._pairs):
            nxt = self._pairs[prev]
            for word in [w for w in nxt if w not in self._words]:
                self._remove_pair(prev, word)

    def _evict_pairs(self) -> None:
        keep = int(self.max_pairs * 0.9)
        ranked = sorted(((self._decayed(e), e[1], p, w) for p, nxt in self._pairs.items() for w, e in nxt.items()),
                        reverse=True)
        for _, _, prev, word in ranked[keep:]:
            self._remove_pair(prev, word)

    def _remove_pair(self, prev: str, word: str) -> None:
        entry = self._pairs[prev].pop(word)
        self._num_pairs -= 1
        ctx = self._contexts[prev]
        ctx[0] = max(0.0, self._decayed(ctx) - self._decayed(entry))
        ctx[1] = self.clock
        if not self._pairs[prev]:
            del self._pairs[prev], self._contexts[prev]

    # -- predicting -------------------------------------------------------------------
    def count(self, word: str, prev: str | None = None) -> float:
        """Decayed count of ``word`` (after ``prev`` when given)."""
        if prev is None:
            entry = self._words.get(word)
        else:
            entry = self._pairs.get(prev, {}).get(word)
        return self._decayed(entry) if entry else 0.0

    def context_count(self, prev: str | None) -> float:
        """Decayed count of the words typed after ``prev`` (None: a sentence start)."""
        entry = self._contexts.get(START if prev is None else prev)
        return self._decayed(entry) if entry else 0.0

    def _probabilities(self, words, prev: str | None) -> dict[str, float]:
        """p(w | prev) of each of ``words`` the history holds; the totals are decayed once for all of them."""
        total = self._decayed(self._total)
        if total <= 0:
            return {}
        prev = START if prev is None else prev
        denom = (self._decayed(self._contexts[prev]) if prev in self._contexts else 0.0) + self.beta
        nxt, held, clock, half_life, beta = self._pairs.get(prev, {}), self._words, self.clock, self.half_life, self.beta
        out = {}
        for w in words:  # ``_decayed`` written out (the same arithmetic): this runs for every suggestion
            entry = held.get(w)
            if entry is not None:
                pair = nxt.get(w)
                out[w] = ((pair[0] * 0.5 ** ((clock - pair[1]) / half_life) if pair else 0.0)
                          + beta * (entry[0] * 0.5 ** ((clock - entry[1]) / half_life)) / total) / denom
        return out

    def probability(self, word: str, prev: str | None) -> float:
        """p(word | prev); 0 for a word the history does not hold."""
        return self._probabilities((word,), prev).get(word, 0.0)

    def _key(self, word: str) -> float:
        """log2 of the word's count at clock 0: decayed counts keep this order whatever the clock."""
        c, t = self._words[word]
        return math.log2(c) + t / self.half_life if c > 0 else -math.inf

    def _rank(self, word: str) -> tuple[float, str]:
        return -self._key(word), word

    def top_words(self, n: int = TOP_WORDS) -> list[str]:
        """The ``n`` words with the largest decayed counts, largest first."""
        if n != TOP_WORDS:
            return sorted(self._words, key=self._rank)[:n]
        if self._top is None:
            self._top = sorted(self._words, key=self._rank)[:TOP_WORDS]
        return list(self._top)

    def _update_top(self, word: str) -> None:
        """Learning raises one word's key and no other's: only that word can enter or move in the top list."""
        if self._top is None:
            return
        if word in self._top or len(self._top) < TOP_WORDS or self._key(word) > self._key(self._top[-1]):
            top = set(self._top) | {word}
            self._top = sorted(top, key=self._rank)[:TOP_WORDS]

    def words_with_prefix(self, prefix: str) -> list[str]:
        """The words the history holds that start with ``prefix``, in code-point order (a completion asks
        at every letter: a range of the sorted words, not a pass over all of them)."""
        if self._sorted is None:
            self._sorted = sorted(self._words)
        return self._sorted[bisect.bisect_left(self._sorted, prefix):
                            bisect.bisect_left(self._sorted, prefix + "\U0010ffff")]

    def candidates(self, prev: str | None, n: int = TOP_WORDS, also=()) -> dict[str, float]:
        """p(w | prev) of the words most likely after ``prev``: the ones typed after it, the ``n`` most
        counted, and ``also``. A word outside them has at most beta/(c(prev) + beta) times the n-th word's
        unigram share: what suggestions need without a pass over every word."""
        words = {*self._pairs.get(START if prev is None else prev, {}), *self.top_words(n), *also}
        return self._probabilities(words, prev)

    def distribution(self, prev: str | None) -> dict[str, float]:
        """p(w | prev) for every word in the history (they sum to 1; empty before anything is learnt)."""
        return self._probabilities(self._words, prev)

    def top(self, prev: str | None, k: int = 3) -> list[tuple[str, float]]:
        """The ``k`` most probable next words after ``prev``."""
        dist = self.distribution(prev)
        return sorted(dist.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

    # -- storing ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A snapshot of the history (copies only: learning may go on while it is written out)."""
        with self._lock:
            return {"format": FORMAT, "version": VERSION, "half_life": self.half_life, "max_words": self.max_words,
                    "max_pairs": self.max_pairs, "beta": self.beta, "clock": self.clock, "total": list(self._total),
                    "words": [[w, *e] for w, e in sorted(self._words.items())],
                    "pairs": [[p, w, *e] for p, nxt in sorted(self._pairs.items()) for w, e in sorted(nxt.items())],
                    "contexts": [[p, *e] for p, e in sorted(self._contexts.items())],
                    **({} if self.weight is None else {"weight": self.weight})}

    @classmethod
    def from_dict(cls, d: dict, where: str = "user history") -> "UserHistory":
        """A history from ``to_dict``'s form; anything out of the code's bounds raises DataError naming
        ``where`` and the field (nothing is clamped: a file that asks for more is damaged or foreign)."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise DataError(f"{where}: not a keyboard_lm user history (format {d.get('format') if isinstance(d, dict) else None!r})")
        if d.get("version") != VERSION:
            raise DataError(f"{where}: user history version {_shown(d.get('version'))}, "
                            f"this keyboard_lm reads {VERSION}")
        try:
            return cls._checked(d)
        except _Bad as e:
            raise DataError(f"{where}: damaged user history: {e}") from None

    @classmethod
    def _checked(cls, d: dict) -> "UserHistory":
        for name, (lo, hi), integer in (("half_life", HALF_LIFE_RANGE, False), ("beta", BETA_RANGE, False),
                                        ("max_words", (1, MAX_WORDS), True), ("max_pairs", (1, MAX_PAIRS), True),
                                        ("clock", (0, MAX_CLOCK), True)):
            _field(d, name, lo, hi, integer)
        h = cls(d["half_life"], d["max_words"], d["max_pairs"], d["beta"])
        h.clock = clock = d["clock"]
        lists = {name: _field(d, name) for name in ("words", "pairs", "contexts")}
        for name, most in (("words", h.max_words), ("pairs", h.max_pairs), ("contexts", h.max_pairs)):
            if len(lists[name]) > most:  # before anything is built: the code's bound, not the file's
                raise _Bad(f"{len(lists[name]):,} {name}, more than its bound of {most:,}")
        h._total = _entry(d.get("total"), "total", clock)
        words, pairs, contexts = lists["words"], lists["pairs"], lists["contexts"]
        checks = (("words", words, 1, False), ("pairs", pairs, 2, False), ("contexts", contexts, 1, True))
        if not all(_rows_ok(rows, n, clock, context) for _, rows, n, context in checks):
            for name, rows, n, context in checks:  # a damaged file: find and name its first bad row
                for i, row in enumerate(rows):
                    _row(row, f"{name}[{i}]", n, clock, context)
        h._words = {w: [float(c), t] for w, c, t in words}
        for p, w, c, t in pairs:
            h._pairs.setdefault(p, {})[w] = [float(c), t]
        h._num_pairs = sum(len(nxt) for nxt in h._pairs.values())
        h._contexts = {p: [float(c), t] for p, c, t in contexts}
        for name, rows, held in (("words", words, len(h._words)), ("pairs", pairs, h._num_pairs),
                                 ("contexts", contexts, len(h._contexts))):
            if held != len(rows):
                raise _Bad(f"{name} repeat {len(rows) - held:,} of their entries")
        if set(h._pairs) != set(h._contexts):
            raise _Bad("the contexts are not the pairs' first words")
        if d.get("weight") is not None:
            h.weight = float(_field(d, "weight", 0.0, 1.0))
        return h

    def save(self, path: str) -> None:
        """Write the history as JSON, atomically and durably (``keyboard_lm.inference.user_files``): readers
        see the old file or the new one, concurrent savers of one path serialize, a crash or a full disk
        leaves the old file; a path that is a symbolic link is refused."""
        d = self.to_dict()
        try:
            data = json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:  # a word holding a lone surrogate: JSON's \u escapes keep it, exactly
            data = json.dumps(d, separators=(",", ":")).encode("ascii")
        if len(data) > MAX_FILE_BYTES:  # what load would refuse is not written: the old file stays
            raise DataError(f"{path}: the user history would be {len(data):,} bytes, more than the "
                            f"{MAX_FILE_BYTES:,} a history may have; the previous file is unchanged")
        write_atomic(path, data, "user history", DataError)

    @classmethod
    def load(cls, path: str) -> "UserHistory":
        """Read a history ``save`` wrote; a damaged, foreign or oversized file raises DataError naming it."""
        data = read_limited(path, MAX_FILE_BYTES, "user history", DataError)
        try:
            # floats need no hook: float() of any literal is fast, and inf is refused by the field checks
            d = json.loads(data.decode("utf-8"), parse_int=_parse_int, parse_constant=_OutOfRange)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise DataError(f"{path}: not a keyboard_lm user history ({type(e).__name__})") from None
        return cls.from_dict(d, path)

    def clear(self) -> None:
        """Forget everything (the keyboard's settings action)."""
        with self._lock:
            self._empty()


# -- reading a file's numbers within the code's bounds ---------------------------------------------------
class _Bad(Exception):
    """A field out of its bounds (``from_dict`` names the file)."""


class _OutOfRange:
    """What the JSON reader returns for a number the code will not convert (a 5,000-digit integer,
    ``Infinity``, ``NaN``): the field check then names the field that holds it."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 20 else f"a {len(self.text):,}-digit number"


def _parse_int(text: str):
    # int() of a long literal is quadratic, and past 4,300 digits Python refuses it with a ValueError
    return int(text) if len(text) <= 20 else _OutOfRange(text)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _in_range(value, lo, hi, integer: bool = False) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return False
    return math.isfinite(value) and lo <= value <= hi


def _range(lo, hi, integer: bool) -> str:
    return f"an integer in [{lo:,}, {hi:,}]" if integer else f"a finite number in [{lo:g}, {hi:g}]"


def _field(d: dict, name: str, lo=None, hi=None, integer: bool = False):
    """``d[name]``: a number in [lo, hi] (an integer if ``integer``), or a list when no range is given."""
    if name not in d:
        raise _Bad(f"{name} is missing")
    value = d[name]
    if lo is None:
        if not isinstance(value, list):
            raise _Bad(f"{name} is {_shown(value)}, not a list")
    elif not _in_range(value, lo, hi, integer):
        raise _Bad(f"{name} is {_shown(value)}, not {_range(lo, hi, integer)}")
    return value


def _entry(value, name: str, clock: int) -> list:
    """[count, clock when counted]: a decayed count is at most the number of words learnt by then."""
    if not isinstance(value, list) or len(value) != 2:
        raise _Bad(f"{name} is {_shown(value)}, not [count, clock]")
    count, when = value
    if not _in_range(when, 0, clock, integer=True):
        raise _Bad(f"{name}'s clock is {_shown(when)}, not {_range(0, clock, True)} (the history's clock)")
    if not _in_range(count, 0, clock):
        raise _Bad(f"{name}'s count is {_shown(count)}, not a finite number in [0, {clock:,}] (the history's clock)")
    return [float(count), when]


def _rows_ok(rows: list, n_words: int, clock: int, context: bool) -> bool:
    """Whether every row [word(s)..., count, clock] is well formed: ``_row``'s checks in one tight loop, for
    the common case (``_row`` then names the bad row of a damaged file)."""
    try:
        if n_words == 1:
            for w, c, t in rows:
                if not (type(w) is str and w and (context or w != START) and type(t) is int and 0 <= t <= clock
                        and type(c) in (float, int) and 0 <= c <= clock):
                    return False
        else:
            for p, w, c, t in rows:
                if not (type(p) is str and p and type(w) is str and w and w != START and type(t) is int
                        and 0 <= t <= clock and type(c) in (float, int) and 0 <= c <= clock):
                    return False
    except (TypeError, ValueError):  # a row that is not a list of the right length
        return False
    return True


def _row(row, name: str, n_words: int, clock: int, context: bool = False):
    """(word or (prev, word), [count, clock]) from a row [word(s)..., count, clock]; a ``context``'s word
    may be the sentence start."""
    if not isinstance(row, list) or len(row) != n_words + 2:
        raise _Bad(f"{name} is {_shown(row)}, not [{'prev, ' if n_words == 2 else ''}word, count, clock]")
    words = row[:n_words]
    for w in words:
        if not isinstance(w, str) or not w:
            raise _Bad(f"{name} holds {_shown(w)}, not a word")
    if words[-1] == START and not context:
        raise _Bad(f"{name} counts {START} as a word")
    entry = _entry(row[n_words:], name, clock)
    return (words[0] if n_words == 1 else tuple(words)), entry

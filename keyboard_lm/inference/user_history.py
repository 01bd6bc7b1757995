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
seen) are evicted down to 90% of it. Pure Python (no numpy, no TensorFlow),
so the Java core can compute the same numbers (golden vectors).
"""

from __future__ import annotations

import bisect
import json
import math
import os

from keyboard_lm.errors import ConfigError, DataError

FORMAT = "keyboard_lm.user_history"
VERSION = 1
START = "<s>"
#: How many of the most counted words are always candidates for a suggestion (``UserHistory.candidates``).
TOP_WORDS = 64


class UserHistory:
    """Decayed unigram and bigram counts of one user's words (see the module docstring)."""

    def __init__(self, half_life: float = 2000.0, max_words: int = 2000, max_pairs: int = 10000,
                 beta: float = 2.0):
        if not half_life > 0:
            raise ConfigError(f"half_life must be > 0 words, got {half_life}")
        if max_words < 1 or max_pairs < 1:
            raise ConfigError(f"max_words and max_pairs must be >= 1, got {max_words} and {max_pairs}")
        if not beta > 0:
            raise ConfigError(f"beta must be > 0, got {beta}")
        self.half_life, self.max_words, self.max_pairs, self.beta = float(half_life), max_words, max_pairs, beta
        self.clock = 0  # words learnt so far
        self._words: dict[str, list[float]] = {}  # word -> [count, clock when last counted]
        self._pairs: dict[str, dict[str, list[float]]] = {}  # prev -> word -> [count, clock]
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
        self.clock += 1
        if self._sorted is not None and word not in self._words:
            bisect.insort(self._sorted, word)
        self._add(self._words.setdefault(word, [0.0, self.clock]))
        self._add(self._pairs.setdefault(prev, {}).setdefault(word, [0.0, self.clock]))
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
        return sum(len(v) for v in self._pairs.values())

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
        return {"format": FORMAT, "version": VERSION, "half_life": self.half_life, "max_words": self.max_words,
                "max_pairs": self.max_pairs, "beta": self.beta, "clock": self.clock, "total": self._total,
                "words": [[w, *e] for w, e in sorted(self._words.items())],
                "pairs": [[p, w, *e] for p, nxt in sorted(self._pairs.items()) for w, e in sorted(nxt.items())],
                "contexts": [[p, *e] for p, e in sorted(self._contexts.items())],
                **({} if self.weight is None else {"weight": self.weight})}

    @classmethod
    def from_dict(cls, d: dict, where: str = "user history") -> "UserHistory":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise DataError(f"{where}: not a keyboard_lm user history (format {d.get('format') if isinstance(d, dict) else None!r})")
        if d.get("version") != VERSION:
            raise DataError(f"{where}: user history version {d.get('version')!r}, this keyboard_lm reads {VERSION}")
        try:
            h = cls(d["half_life"], d["max_words"], d["max_pairs"], d["beta"])
            h.clock = int(d["clock"])
            h._total = [float(d["total"][0]), int(d["total"][1])]
            h._words = {str(w): [float(c), int(t)] for w, c, t in d["words"]}
            for p, w, c, t in d["pairs"]:
                h._pairs.setdefault(str(p), {})[str(w)] = [float(c), int(t)]
            h._contexts = {str(p): [float(c), int(t)] for p, c, t in d["contexts"]}
            weight = d.get("weight")
            if weight is not None:
                if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
                    raise ValueError(f"weight {weight!r} is not a number in [0, 1]")
                h.weight = float(weight)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise DataError(f"{where}: damaged user history ({type(e).__name__}: {e})") from None
        bad = [x for x in (h._total, *h._words.values(), *h._contexts.values(),
                           *(e for nxt in h._pairs.values() for e in nxt.values()))
               if not (math.isfinite(x[0]) and x[0] >= 0 and 0 <= x[1] <= h.clock)]
        if bad or set(h._pairs) != set(h._contexts) or len(h._words) > h.max_words or h.num_pairs > h.max_pairs:
            raise DataError(f"{where}: damaged user history (counts, clocks or bounds out of range)")
        return h

    def save(self, path: str) -> None:
        """Write the history as JSON (atomically: a crash leaves the previous file).

        Not ``models.run_dir.atomic_write``: that module reaches TensorFlow, which inference never imports.
        """
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str) -> "UserHistory":
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as e:
            raise DataError(f"{path}: cannot read the user history ({e.strerror})") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise DataError(f"{path}: not a keyboard_lm user history ({type(e).__name__})") from None
        return cls.from_dict(d, path)

    def clear(self) -> None:
        """Forget everything (the keyboard's settings action)."""
        self.__init__(self.half_life, self.max_words, self.max_pairs, self.beta)

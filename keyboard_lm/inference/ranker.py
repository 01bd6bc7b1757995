"""The one place where suggestion sources are merged: the model, the phrase table, the user history, personal words.

As LatinIME's ``DictionaryFacilitator`` holds every dictionary behind one interface, a ``Ranker`` holds
what decides a strip: which words may ever be suggested (special tokens and blocklisted words never are),
the vocabulary's words sorted for completion, and the phrase table with its mixture gate. A session asks
it for the k best words at a position; it never reaches into the sources' tables itself.

The merge at a position (the Java core's ``Ranker`` computes the same):

1. The model's probabilities p_m (over the vocabulary, and personal words in their joint softmax).
2. The phrase table (``keyboard_lm.text.phrase_table``): the longest stored context that ends the
   sentence so far gives q(w | c) for a few words; its weight ``lam = gate.weight(n, users(c))``
   depends on the context's length n and on how many users typed it, fitted on validation users
   (``keyboard_lm.inference.phrase_gate``). ``p = (1 - lam) p_m + lam q``; no match: lam = 0.
3. The user history h(w | previous word) with its share a (``Session.effective_history_weight``):
   ``score = (1 - a) p + a h``.

The k best scores win; special tokens, the OOV token and blocklisted words are dropped once, here. Where
only the model ranks (no match, no history) the order is the graph's (log-prob, ties by id ascending);
a merged strip is ordered by score, ties by spelling. Every word outside the model's top k, the table's
words and the history's candidates scores at most ``(1 - a)(1 - lam) p_k + a h``: candidates are
taken by h, largest first, until that bound falls below the k-th best, so the answer is the one
scoring every word would give.

Completion (a word being typed): the candidates are the words that start with the letters typed and, where
the ranker corrects typos (``typos``, a ``keyboard_lm.text.typos.TypoModel``), the words that start with a
typo prefix one slip away; each word's score above is multiplied by its channel factor f (1 for the letters
as typed, the largest slip's factor otherwise), and the model alone ranks by ``ln p_m + ln f`` (ties by id).
Typo prefixes are the vocabulary's, so a word only the user history knows joins by its prefix alone. When a
correction reaches the strip, the letters as typed keep its last place (LatinIME keeps the typed word in its
strip): pressing space commits them, and nothing is corrected on space.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import heapq
import math
import threading
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.text import tokenizer
from keyboard_lm.text.phrase_table import PhraseTable
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.typos import TypoIndex, TypoModel
from keyboard_lm.text.vocabulary import Vocabulary

if TYPE_CHECKING:
    from keyboard_lm.inference.user_history import UserHistory


def check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")


#: Typed letters whose typo candidates a ranker keeps (``Ranker._typed``): about 2 KB each.
TYPED_CACHE_SIZE = 256

#: The history's share after a previous word the user typed n times is ``history_weight * n / (n + K)``:
#: a context the user never typed leaves the model alone, one typed often gets nearly the whole weight.
HISTORY_CONTEXT_K = 4.0


def history_share(history: "UserHistory", weight: float, previous_word: str | None) -> float:
    """The history's share after ``previous_word``: ``weight * n / (n + HISTORY_CONTEXT_K)``, n the (decayed)
    number of words the user typed after it."""
    n = history.context_count(previous_word)
    return weight * n / (n + HISTORY_CONTEXT_K)


@dataclasses.dataclass(frozen=True)
class PhraseGate:
    """The phrase table's weight by context length n (1..max order) and the context's users.

    ``bounds``: ascending user counts that start the buckets 1, 2, ...; ``weights[n - 1][b]``: lam of a
    context of n words in bucket b (a context with fewer users than ``bounds[0]`` is in bucket 0).
    """

    bounds: tuple = (4, 16, 64)
    weights: tuple = ((0.0,) * 4,) * 4

    def __post_init__(self):
        bounds = tuple(int(b) for b in self.bounds)
        if list(bounds) != sorted(set(bounds)) or any(b < 1 for b in bounds):
            raise ConfigError(f"phrase gate bounds must be ascending positive counts, got {list(self.bounds)}")
        rows = tuple(tuple(float(w) for w in row) for row in self.weights)
        for row in rows:
            if len(row) != len(bounds) + 1 or not all(0.0 <= w < 1.0 for w in row):
                raise ConfigError(f"phrase gate rows need {len(bounds) + 1} weights in [0, 1), got {list(row)}")
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "weights", rows)

    def weight(self, n: int, users: int) -> float:
        if not 1 <= n <= len(self.weights):
            return 0.0
        return self.weights[n - 1][bisect.bisect_right(self.bounds, users)]

    def to_dict(self) -> dict:
        return {"bounds": list(self.bounds), "weights": [list(r) for r in self.weights]}

    @classmethod
    def from_dict(cls, d, where: str = "phrase gate") -> "PhraseGate":
        if not isinstance(d, dict) or not isinstance(d.get("bounds"), list) or not isinstance(d.get("weights"), list):
            raise ConfigError(f"{where}: expected an object with lists 'bounds' and 'weights'")
        number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)  # noqa: E731
        if not all(number(b) and b == int(b) for b in d["bounds"]) or not all(
                isinstance(r, list) and all(number(w) for w in r) for r in d["weights"]):
            raise ConfigError(f"{where}: the phrase gate's bounds must be whole numbers and its weights numbers")
        try:
            return cls(tuple(d["bounds"]), tuple(tuple(r) for r in d["weights"]))
        except (TypeError, ValueError, OverflowError) as e:
            raise ConfigError(f"{where}: {e}") from None


@dataclasses.dataclass(frozen=True)
class PhraseMatch:
    """The table's entry at a position: context length, its users, next ids [m], q [m], and lam."""

    n: int
    users: int
    ids: np.ndarray
    q: np.ndarray
    weight: float


@dataclasses.dataclass(frozen=True)
class Completion:
    """What a completion ranks: the words that start with ``prefix`` (the normalized letters typed; factor 1)
    and those that start with a typo prefix (``typos``: (prefix, factor) pairs in code point order)."""

    prefix: str
    typos: tuple = ()

    @functools.cached_property
    def _factors(self) -> tuple[dict, tuple]:
        # (factor of each typo prefix, their lengths): built at the first weight(), which only the phrase
        # table's and the history's words ask for; most completions never do
        return dict(self.typos), tuple(sorted({len(p) for p, _ in self.typos}))

    def weight(self, word: str) -> float:
        """The channel factor of ``word``: 1 if it starts with the letters typed, else the largest factor of
        the typo prefixes it starts with, 0 for none (not a candidate)."""
        if word.startswith(self.prefix):
            return 1.0
        factors, lengths = self._factors
        get = factors.get
        return max((get(word[:n], 0.0) for n in lengths if n <= len(word)), default=0.0)

    def prefixes(self) -> list[str]:
        """The letters typed and every typo prefix."""
        return [self.prefix, *(p for p, _ in self.typos)]


class Ranker:
    """What may be suggested, and the merge of every source (module docstring); shared by a predictor's sessions."""

    def __init__(self, vocab: Vocabulary, blocklist: Iterable[str] = (), phrases: PhraseTable | None = None,
                 gate: PhraseGate | None = None, typos: TypoModel | None = None):
        if typos is not None and not isinstance(typos, TypoModel):
            raise ConfigError(f"typos must be a TypoModel or None, got {type(typos).__name__}")
        self.vocab = vocab
        #: The channel of typo correction in completions (None: the letters typed are matched as they are).
        self.typos = typos
        self._typo_index: TypoIndex | None = None
        self._typed_cache: dict[str, tuple] = {}  # letters typed -> (Completion, ids, factors, ln factors)
        self._typo_lock = threading.Lock()
        self.phrases, self.gate = phrases, gate
        self._blocked: set[str] = set()
        self._never = np.zeros(len(vocab), bool)
        self._never[list(SPECIAL_TOKENS.ids)] = True
        for word in blocklist:
            for token in tokenizer.tokenize(word):
                self._blocked.add(token)  # also kept out of personal words and the history
                if token in vocab:
                    self._never[vocab.id_of(token)] = True
        words = sorted((t, i) for i, t in enumerate(vocab.tokens) if not self._never[i])
        self._sorted_words = [w for w, _ in words]
        self._sorted_ids = np.array([i for _, i in words], np.int64)
        self.suggestable_ids = np.flatnonzero(~self._never)
        self.suggestable_ids.setflags(write=False)  # shared by every session
        self._never_ids = np.flatnonzero(self._never)
        self._never.setflags(write=False)

    # -- what may be suggested -------------------------------------------------
    @property
    def never(self) -> np.ndarray:
        """[V] bool, read-only: special tokens and blocklisted words."""
        return self._never

    def blocked(self, word: str) -> bool:
        """Whether ``word`` (a normalized token) is blocklisted."""
        return word in self._blocked

    def learnable(self, word: str) -> bool:
        """Whether a user's history or personal words may keep ``word``: never a special token nor a blocked word."""
        return word not in SPECIAL_TOKENS.tokens and word not in self._blocked

    def prefix_ids(self, prefix: str) -> np.ndarray:
        """Suggestable vocabulary ids whose word starts with ``prefix``."""
        lo = bisect.bisect_left(self._sorted_words, prefix)
        hi = bisect.bisect_left(self._sorted_words, prefix + "\U0010ffff")
        return self._sorted_ids[lo:hi]

    # -- completion and typos ----------------------------------------------------------
    def typo_index(self) -> TypoIndex:
        """The suggestable words' prefixes and their deletion neighbourhood, built at the first correction
        (about a second for 10,000 words) and shared by the predictor's sessions."""
        if self._typo_index is None:
            with self._typo_lock:
                if self._typo_index is None:
                    self._typo_index = TypoIndex(self._sorted_words)
        return self._typo_index

    def completion(self, prefix: str) -> Completion:
        """The candidates of a completion of ``prefix`` (normalized, stripped), typo prefixes included when
        the ranker corrects typos and ``prefix`` has enough letters."""
        if self.typos is None or len(prefix) < self.typos.min_letters:
            return Completion(prefix)
        return self._typed(prefix)[0]

    def completion_ids(self, completion: Completion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, factors, ln factors) [m] each, read-only: every candidate of ``completion`` once, with its
        largest factor (``TypoIndex.cover``)."""
        if not completion.typos:
            ids = self.prefix_ids(completion.prefix)
            return ids, np.ones(len(ids)), np.zeros(len(ids))
        return self._typed(completion.prefix)[1]

    def _typed(self, prefix: str) -> tuple[Completion, tuple]:
        """(completion, its ids, factors and ln factors) of ``prefix``, from a cache of the last few: the
        letters of common words are typed again and again, and they depend on nothing else."""
        found = self._typed_cache.get(prefix)
        if found is not None:
            return found
        index = self.typo_index()
        completion = Completion(prefix, tuple(index.candidates(prefix, self.typos)))
        segments = index.cover(prefix, completion.typos)
        if len(segments) == 1:  # one range: a view of the sorted ids and two filled rows, no copy or repeat
            lo, hi, f = segments[0]
            ids = self._sorted_ids[lo:hi]
            factors = np.empty((2, hi - lo))
            factors[0], factors[1] = f, math.log(f)
        else:
            ids = (np.concatenate([self._sorted_ids[lo:hi] for lo, hi, _ in segments]) if segments
                   else self._sorted_ids[:0])
            factors = np.repeat(np.array([[f for _, _, f in segments], [math.log(f) for _, _, f in segments]]),
                                [hi - lo for lo, hi, _ in segments], axis=1)  # [2, m]: factors, ln factors
        arrays = (ids, factors[0], factors[1])
        for a in arrays:
            a.setflags(write=False)  # shared by every call that types these letters
        found = (completion, arrays)
        with self._typo_lock:
            if len(self._typed_cache) >= TYPED_CACHE_SIZE:
                del self._typed_cache[next(iter(self._typed_cache))]  # the oldest
            self._typed_cache[prefix] = found
        return found

    def keep_typed(self, strip: list[tuple[str, float]], completion: Completion, k: int,
                   model_probability: Callable[[str], float]) -> list[tuple[str, float]]:
        """``strip`` with the letters as typed in its last place when it shows a correction and not them.

        As LatinIME keeps the typed word: a tap commits them as they are (so does a space). Their score is
        the model's probability (0 outside the vocabulary). Not for a one-word strip, nor for letters that
        may never be suggested (a blocklisted word).
        """
        typed = completion.prefix
        if k < 2 or not completion.typos or not self.learnable(typed):
            return strip
        if all(w.startswith(typed) for w, _ in strip) or any(w == typed for w, _ in strip):
            return strip
        return [*strip[:k - 1], (typed, model_probability(typed))]

    # -- the phrase table --------------------------------------------------------
    def phrase_match(self, context_ids: Sequence[int]) -> PhraseMatch | None:
        """The table's entry for the sentence so far (ids, ``<bos>`` first, -1 for a word outside the
        vocabulary), or None: no table, no stored context, or a gate weight of 0 there."""
        if self.phrases is None or self.gate is None:
            return None
        found = self.phrases.lookup(context_ids)
        if found is None:
            return None
        n, users, ids, q = found
        weight = self.gate.weight(n, users)
        return PhraseMatch(n, users, ids, q, weight) if weight > 0 else None

    # -- the model alone -----------------------------------------------------------
    def top_model(self, log_probs: np.ndarray, ids: np.ndarray, k: int,
                  personal_words: Sequence[str] = ()) -> list[tuple[str, float]]:
        """The k best of ``ids`` by log-prob, ties by id ascending (the graph's top-k order).

        An id V + i (joint softmax of a session) is ``personal_words[i]``.
        """
        check_k(k)
        if len(ids) == 0:
            return []
        scores = log_probs[ids]
        if len(ids) > k:
            kth = np.partition(scores, len(ids) - k)[len(ids) - k]  # the k-th largest score
            pick = np.flatnonzero(scores >= kth)  # k of them, more on a tie with the k-th
        else:
            pick = np.arange(len(ids))
        if len(pick) > 1:
            pick = pick[np.lexsort((ids[pick], -scores[pick]))][:k]
        # One exp over the picked scores (in their float32), then plain Python numbers: per-element numpy
        # calls cost more than the handful of items.
        return self._named(ids[pick].tolist(), np.exp(scores[pick]).tolist(), personal_words)

    def top_all(self, log_probs: np.ndarray, k: int, personal_words: Sequence[str] = ()) -> list[tuple[str, float]]:
        """``top_model(log_probs, every suggestable id (and every personal word), k)`` by k argmax passes.

        An argmax is one linear scan and returns the first (smallest) id of equal maxima: the same k
        words in the same order as ``top_model``'s partition and sort, in a third of its time on an
        emulated aarch64 CPU.
        """
        check_k(k)
        scores = log_probs.copy()  # log_probs may be shared (the sentence start's); masking works on a copy
        scores[self._never_ids] = -np.inf
        picked = []
        for _ in range(min(k, len(scores) - len(self._never_ids))):
            picked.append(int(scores.argmax()))
            scores[picked[-1]] = -np.inf
        return self._named(picked, np.exp(log_probs[picked]).tolist(), personal_words)

    def top_weighted(self, log_probs: np.ndarray, ids: np.ndarray, factors: np.ndarray, log_factors: np.ndarray,
                     k: int, personal_words: Sequence[str] = ()) -> list[tuple[str, float]]:
        """The k best of ``ids`` by ``ln p_m + ln f`` (ties by id ascending), each with ``f * p_m``.

        ``factors``/``log_factors`` [m]: each id's channel factor and its log (``completion_ids``). With
        every factor 1 this is ``top_model``.
        """
        check_k(k)
        if len(ids) == 0:
            return []
        scores = log_probs[ids].astype(np.float64) + log_factors
        if len(ids) > k:
            kth = np.partition(scores, len(ids) - k)[len(ids) - k]
            pick = np.flatnonzero(scores >= kth)
        else:
            pick = np.arange(len(ids))
        if len(pick) > 1:
            pick = pick[np.lexsort((ids[pick], -scores[pick]))][:k]
        picked = ids[pick]
        named = self._named(picked.tolist(), np.exp(log_probs[picked]).tolist(), personal_words)
        return [(w, f * p) for (w, p), f in zip(named, factors[pick].tolist())]

    def _named(self, ids: list[int], probs: list[float], personal_words) -> list[tuple[str, float]]:
        n_vocab, token_of = len(self.vocab), self.vocab.token_of
        return [(token_of(i) if i < n_vocab else personal_words[i - n_vocab], p) for i, p in zip(ids, probs)]

    # -- the merge -----------------------------------------------------------------
    def merge(self, top: list[tuple[str, float]], k: int, *, prefix: str = "", phrase: PhraseMatch | None = None,
              history=None, history_share: float = 0.0, previous_word: str | None = None,
              model_probability: Callable[[str], float], completion: Completion | None = None
              ) -> list[tuple[str, float]]:
        """The k best of the merged scores (module docstring), given the model's own k best ``top``.

        ``model_probability(word)``: p_m of a vocabulary or personal word (0 for a word the model cannot
        produce), read only for the table's and the history's candidates. ``prefix``: the letters typed
        (candidates must start with them); or ``completion``: the candidates and their channel factors f,
        each score multiplied by its word's f (``top`` then holds ``f * p_m``).
        """
        if completion is None:
            completion = Completion(prefix)
        prefix, weight = completion.prefix, completion.weight
        lam = phrase.weight if phrase is not None else 0.0
        a = history_share if history is not None else 0.0
        scale = (1.0 - a) * (1.0 - lam)
        scores = {w: scale * p for w, p in top}
        if phrase is not None:
            token_of = self.vocab.token_of
            for i, q in zip(phrase.ids.tolist(), phrase.q.tolist()):
                word = token_of(i)
                f = 0.0 if self._never[i] else weight(word)
                if f == 0.0:
                    continue
                # f * p_m: back from the model's top (it holds f * p_m), else from the distribution
                fp = scores[word] / scale if word in scores and scale > 0 else f * model_probability(word)
                scores[word] = (1.0 - a) * ((1.0 - lam) * fp + lam * f * q)
        if a <= 0:
            return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        also = [*scores, *(w for p in completion.prefixes() for w in history.words_with_prefix(p))] if prefix \
            else list(scores)
        hist = history.candidates(previous_word, also=also)
        for w in scores:
            scores[w] += a * weight(w) * hist.get(w, 0.0)
        p_k = top[-1][1] if len(top) >= k else 0.0
        kth = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else -math.inf
        for word in sorted(hist, key=hist.get, reverse=True):  # stable: equal h keep their order
            h = hist[word]
            if scale * p_k + a * h < kth:
                break  # every later candidate has a smaller h: none can reach the k best
            if word in scores or word in self._blocked:
                continue
            if word in self.vocab:
                f = 0.0 if self._never[self.vocab.id_of(word)] else weight(word)
            else:  # a word only the history knows: typo prefixes are the vocabulary's, so by its prefix only
                f = 1.0 if word.startswith(prefix) else 0.0
            if f == 0.0:
                continue
            scores[word] = scale * f * model_probability(word) + a * f * h
            if len(scores) >= k:
                kth = heapq.nlargest(k, scores.values())[-1]
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

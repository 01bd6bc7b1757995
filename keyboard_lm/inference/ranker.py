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
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.text import tokenizer
from keyboard_lm.text.phrase_table import PhraseTable
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary

if TYPE_CHECKING:
    from keyboard_lm.inference.user_history import UserHistory


def check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")


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


class Ranker:
    """What may be suggested, and the merge of every source (module docstring); shared by a predictor's sessions."""

    def __init__(self, vocab: Vocabulary, blocklist: Iterable[str] = (), phrases: PhraseTable | None = None,
                 gate: PhraseGate | None = None):
        self.vocab = vocab
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

    def _named(self, ids: list[int], probs: list[float], personal_words) -> list[tuple[str, float]]:
        n_vocab, token_of = len(self.vocab), self.vocab.token_of
        return [(token_of(i) if i < n_vocab else personal_words[i - n_vocab], p) for i, p in zip(ids, probs)]

    # -- the merge -----------------------------------------------------------------
    def merge(self, top: list[tuple[str, float]], k: int, *, prefix: str = "", phrase: PhraseMatch | None = None,
              history=None, history_share: float = 0.0, previous_word: str | None = None,
              model_probability: Callable[[str], float]) -> list[tuple[str, float]]:
        """The k best of the merged scores (module docstring), given the model's own k best ``top``.

        ``model_probability(word)``: p_m of a vocabulary or personal word (0 for a word the model cannot
        produce), read only for the table's and the history's candidates. ``prefix``: the letters typed
        (candidates must start with them).
        """
        lam = phrase.weight if phrase is not None else 0.0
        a = history_share if history is not None else 0.0
        scale = (1.0 - a) * (1.0 - lam)
        scores = {w: scale * p for w, p in top}
        if phrase is not None:
            token_of = self.vocab.token_of
            for i, q in zip(phrase.ids.tolist(), phrase.q.tolist()):
                word = token_of(i)
                if self._never[i] or not word.startswith(prefix):
                    continue
                p_m = scores[word] / scale if word in scores and scale > 0 else model_probability(word)
                scores[word] = (1.0 - a) * ((1.0 - lam) * p_m + lam * q)
        if a <= 0:
            return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        also = [*scores, *(history.words_with_prefix(prefix) if prefix else ())]
        hist = history.candidates(previous_word, also=also)
        for w in scores:
            scores[w] += a * hist.get(w, 0.0)
        p_k = top[-1][1] if len(top) >= k else 0.0
        kth = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else -math.inf
        for word in sorted(hist, key=hist.get, reverse=True):  # stable: equal h keep their order
            h = hist[word]
            if scale * p_k + a * h < kth:
                break  # every later candidate has a smaller h: none can reach the k best
            if word in scores or not word.startswith(prefix) or word in self._blocked:
                continue
            if word in self.vocab and self._never[self.vocab.id_of(word)]:
                continue
            scores[word] = scale * model_probability(word) + a * h
            if len(scores) >= k:
                kth = heapq.nlargest(k, scores.values())[-1]
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

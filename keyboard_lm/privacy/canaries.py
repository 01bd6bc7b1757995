"""Planted canaries for a memorization audit (Carlini et al. 2019): their format, drawing and planting.

"The Secret Sharer" (Carlini et al. 2019) measures unintended memorization by
planting random secrets ("canaries") in the training data and ranking each,
after training, among every secret it could have been.  Ramaswamy et al.
2020 audit Gboard's federated language models this way.  Here:

- A ``CanaryFormat`` is a fixed prefix and S secret slots, each one token of
  an alphabet A; the randomness space R = A^S has |R| = len(A)**S members.
  ``make_canaries`` draws distinct secrets, ``plant_canaries`` inserts each
  ``repeats[i]`` times, as separate records, into one training client, or
  into each of several (a secret many users share, as Ramaswamy et al. 2020
  plant canaries in varying numbers of Gboard users).
- ``exposure`` scores the canaries under a trained model and ranks each
  among every secret it could have been.

The default format is ``my number is`` + 4 slots over ten nouns, ``air body
city dust money paper people power time world``: |R| = 10^4, at most 13.3
bits, scored exhaustively in seconds.  The alphabet and prefix must be in the
vocabulary of a model trained without any canary, or a clean model could not
be audited at all.  With 10,000-word vocabularies (checked with
``Vocabulary.from_sentences`` on each whole corpus, and on the training
clients of 100 held-out split seeds):

- digits fail: the tokenizer keeps "1" as a token, but the embedded default
  corpus never has "6", "8" or "9" and Tiny Shakespeare has only "3";
- the number words fail: "eight" never occurs in the default corpus, "zero"
  never in Tiny Shakespeare, and the other nine occur in 1 to 3 default
  conversations each, so 11 of the 100 splits drop one of "one" .. "ten"
  (without "eight", with "twenty") from the training vocabulary;
- the prefix "my pin is" fails: "pin" never occurs in the default corpus.

Each of the ten nouns is used by at least 10 clients of each corpus ("money":
10 default conversations, "paper": 11 Shakespeare roles), and "number" by 9
of each, so every split keeps them all.  Every token is its own spec token,
so ``" ".join(prefix + secret)`` tokenizes into exactly prefix + secret, one
sentence (``CanaryFormat`` checks this for any format).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from keyboard_lm.config_checks import check_range
from keyboard_lm.data.corpus import Corpus
from keyboard_lm.errors import ConfigError
from keyboard_lm.text.tokenizer import sentences

DEFAULT_PREFIX = ("my", "number", "is")
DEFAULT_ALPHABET = ("air", "body", "city", "dust", "money", "paper", "people", "power", "time", "world")
DEFAULT_SLOTS = 4
# Stream tags: drawing the secrets, planting them and sampling candidates use independent streams of one seed.
_MAKE, _PLANT, _SAMPLE = 1, 2, 3


def _rng(seed: int, tag: int) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"canary seed must be an integer >= 0, got {seed!r}")
    return np.random.default_rng([int(seed), tag])


def _words(what: str, value) -> tuple[str, ...]:
    """A space-separated string or a sequence of words -> a tuple of single spec tokens."""
    words = tuple(value.split()) if isinstance(value, str) else tuple(value)
    for w in words:
        if not isinstance(w, str) or sentences(w) != [[w]]:
            got = sentences(w) if isinstance(w, str) else type(w).__name__
            raise ConfigError(f"canary {what} word {w!r} is not a single token of the text spec "
                              f"(it tokenizes to {got})")
    return words


@dataclasses.dataclass(frozen=True)
class CanaryFormat:
    """A prefix and ``slots`` secret tokens from ``alphabet`` (see the module docstring).

    ``prefix`` and ``alphabet`` may be given as space-separated strings.
    Secret number i is the base-len(alphabet) expansion of i, most
    significant slot first.
    """

    prefix: tuple[str, ...] = DEFAULT_PREFIX
    alphabet: tuple[str, ...] = DEFAULT_ALPHABET
    slots: int = DEFAULT_SLOTS

    def __post_init__(self):
        object.__setattr__(self, "prefix", _words("prefix", self.prefix))
        object.__setattr__(self, "alphabet", _words("alphabet", self.alphabet))
        if len(self.alphabet) < 2:
            raise ConfigError(f"canary alphabet needs at least 2 tokens, got {list(self.alphabet)}")
        dup = next((t for i, t in enumerate(self.alphabet) if t in self.alphabet[:i]), None)
        if dup is not None:
            raise ConfigError(f"canary alphabet lists {dup!r} twice")
        check_range("canary slots", self.slots, 1, integer=True, kind="an integer")

    @property
    def space_size(self) -> int:
        """|R| = len(alphabet) ** slots (an exact Python int)."""
        return len(self.alphabet) ** self.slots

    @property
    def max_exposure(self) -> float:
        """log2 |R|, the exposure of a canary ranked first."""
        return self.slots * math.log2(len(self.alphabet))

    def secret(self, index: int) -> tuple[str, ...]:
        """Secret number ``index`` of R."""
        if not 0 <= index < self.space_size:
            raise ConfigError(f"secret index {index} is outside 0..{self.space_size - 1}")
        k, out = len(self.alphabet), []
        for _ in range(self.slots):
            index, d = divmod(index, k)
            out.append(self.alphabet[d])
        return tuple(reversed(out))

    def index(self, secret: Sequence[str]) -> int:
        """The number of ``secret`` in R (inverse of ``secret``)."""
        if len(secret) != self.slots or any(t not in self.alphabet for t in secret):
            raise ConfigError(f"{list(secret)} is not a secret of {self.slots} tokens from the canary alphabet")
        i = 0
        for t in secret:
            i = i * len(self.alphabet) + self.alphabet.index(t)
        return i

    def text(self, secret: Sequence[str]) -> str:
        """The record planted for ``secret``: prefix and secret joined by spaces."""
        self.index(secret)
        return " ".join((*self.prefix, *secret))

    def parse(self, text: str) -> tuple[str, ...]:
        """The secret of a canary ``text``; ConfigError unless it tokenizes to prefix + secret."""
        tokens = sentences(text)
        n = len(self.prefix)
        if len(tokens) != 1 or tuple(tokens[0][:n]) != self.prefix or len(tokens[0]) != n + self.slots \
                or any(t not in self.alphabet for t in tokens[0][n:]):
            raise ConfigError(f"{text!r} is not a canary of the format {' '.join(self.prefix)!r} + {self.slots} "
                              f"alphabet tokens (it tokenizes to {tokens})")
        return tuple(tokens[0][n:])

    def to_dict(self) -> dict:
        return {"prefix": list(self.prefix), "alphabet": list(self.alphabet), "slots": self.slots}

    @classmethod
    def from_dict(cls, d: dict) -> "CanaryFormat":
        unknown = set(d) - {"prefix", "alphabet", "slots"}
        if unknown:
            raise ConfigError(f"unknown canary format fields {sorted(unknown)}")
        return cls(**d)


@dataclasses.dataclass(frozen=True)
class Canary:
    """One secret of a format; ``text`` is what gets planted."""

    format: CanaryFormat
    secret: tuple[str, ...]

    @property
    def text(self) -> str:
        return self.format.text(self.secret)


def make_canaries(n: int, seed: int, prefix=DEFAULT_PREFIX, alphabet=DEFAULT_ALPHABET,
                  slots: int = DEFAULT_SLOTS) -> list[Canary]:
    """``n`` distinct secrets drawn uniformly from R without replacement, deterministic in ``seed``."""
    fmt = CanaryFormat(prefix, alphabet, slots)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"number of canaries must be an integer >= 1, got {n!r}")
    if n > fmt.space_size:
        raise ConfigError(f"{n} canaries asked for, but the format has only {fmt.space_size} distinct secrets")
    rng = _rng(seed, _MAKE)
    if fmt.space_size < 2 ** 62:
        return [Canary(fmt, fmt.secret(int(i))) for i in rng.choice(fmt.space_size, n, replace=False)]
    # |R| beyond int64: draw slot by slot; a repeat has probability < n^2 / 2^63.
    seen: dict[tuple[str, ...], None] = {}
    while len(seen) < n:
        seen.setdefault(tuple(fmt.alphabet[d] for d in rng.integers(0, len(fmt.alphabet), fmt.slots)))
    return [Canary(fmt, s) for s in seen]


def plant_canaries(corpus: Corpus, canaries: Sequence[Canary], repeats, clients: Sequence[str],
                   seed: int, clients_per_canary: int = 1) -> tuple[Corpus, dict]:
    """A new corpus with canary i inserted ``repeats[i]`` times into each of ``clients_per_canary`` of
    ``clients``.

    The clients are a seeded permutation of ``clients`` taken in turn: a
    canary's clients are distinct, and distinct from other canaries' while
    there are enough.  Its copies go in as separate records at seeded random
    positions among each of its clients' records; every original record
    stays, in its order.  Pass training clients only: a canary in a held-out
    client is never trained on.

    A user-level DP guarantee covers one client: a canary in k clients is
    guarded only by group privacy (k times the epsilon), so what a canary
    shared by many users shows is learning that DP allows, not a leak.

    Args:
      corpus: the corpus to plant into (left unchanged).
      canaries: distinct canaries of one format (``make_canaries``).
      repeats: copies of each canary in each of its clients (>= 1), one int
        for all or one per canary.
      clients: ids of the clients that may receive a canary.
      seed: the placement depends only on this and the arguments.
      clients_per_canary: how many clients hold each canary (>= 1).
    Returns:
      (the new corpus, the placement record): a JSON-serializable dict with
      the format, the seed, the planted corpus's fingerprint and one row per
      canary (text, secret, repeats per client, clients, positions in each
      client's records, and client: the first of them).
    """
    canaries = list(canaries)
    if not canaries:
        raise ConfigError("no canaries to plant")
    fmt = canaries[0].format
    if any(c.format != fmt for c in canaries):
        raise ConfigError("canaries to plant must all share one format (prefix, alphabet, slots)")
    if len(canaries) > fmt.space_size:
        raise ConfigError(f"{len(canaries)} canaries, but the format has only {fmt.space_size} distinct secrets")
    texts = [c.text for c in canaries]
    dup = next((t for i, t in enumerate(texts) if t in texts[:i]), None)
    if dup is not None:
        raise ConfigError(f"canary {dup!r} is listed twice; canaries must be distinct")
    reps = [repeats] * len(canaries) if isinstance(repeats, (int, np.integer)) else list(repeats)
    if len(reps) != len(canaries):
        raise ConfigError(f"{len(reps)} repeat counts for {len(canaries)} canaries")
    for t, r in zip(texts, reps):
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
            raise ConfigError(f"repeats of canary {t!r} must be an integer >= 1, got {r!r}")
    ids = sorted(set(clients))
    if not ids:
        raise ConfigError("no clients to plant canaries into (the client list is empty)")
    k = clients_per_canary
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"clients per canary must be an integer >= 1, got {k!r}")
    if k > len(ids):
        raise ConfigError(f"{k} clients per canary, but only {len(ids)} clients to plant into")
    unknown = [c for c in ids if c not in corpus.clients]
    if unknown:
        raise ConfigError(f"client {unknown[0]!r} is not in {corpus.name}")
    rng = _rng(seed, _PLANT)
    order = rng.permutation(len(ids))
    owners = [[ids[order[(i * k + j) % len(ids)]] for j in range(k)] for i in range(len(canaries))]
    new = {cid: list(records) for cid, records in corpus.clients.items()}
    positions: list[dict[str, list[int]]] = [{cid: [] for cid in o} for o in owners]
    for cid in sorted({c for o in owners for c in o}):
        copies = [i for i, o in enumerate(owners) if cid in o for _ in range(int(reps[i]))]
        copies = [copies[j] for j in rng.permutation(len(copies))]
        total = len(new[cid]) + len(copies)
        at = set(rng.choice(total, len(copies), replace=False).tolist())
        originals, inserted, records = iter(new[cid]), iter(copies), []
        for p in range(total):
            if p in at:
                i = next(inserted)
                positions[i][cid].append(p)
                records.append(texts[i])
            else:
                records.append(next(originals))
        new[cid] = records
    planted = Corpus(f"{corpus.name}, {len(canaries)} canaries planted (seed {seed})", new, corpus.skipped)
    rows = [{"text": t, "secret": list(c.secret), "repeats": int(r), "client": o[0], "clients": o,
             "positions": [p[cid] for cid in o]}
            for t, c, r, o, p in zip(texts, canaries, reps, owners, positions)]
    return planted, {"format": fmt.to_dict(), "seed": int(seed), "corpus": corpus.name,
                     "corpus_fingerprint": planted.fingerprint(), "canaries": rows}


def sample_secrets(fmt: CanaryFormat, n: int, seed: int) -> np.ndarray:
    """``n`` secrets drawn uniformly from R, with replacement, as alphabet positions [n, S] (deterministic in
    ``seed``, in a stream apart from drawing and planting): the candidates an extrapolated exposure fits."""
    return _rng(seed, _SAMPLE).integers(0, len(fmt.alphabet), size=(n, fmt.slots))

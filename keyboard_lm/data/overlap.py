"""Which of a run's sentences a base model saw in pretraining (no TensorFlow).

A warm-started run is only evaluated honestly if its held-out text was not in
the base model's pretraining corpus, and its DP guarantee only covers users
whose text the base did not see without privacy.  The base ships a compact
fingerprint of its corpus's sentences; ``overlap_report`` measures the share
of a run's training and held-out sentences found in it.

The fingerprint (``SentenceFingerprint``):

- a *sentence* is one sentence of the text spec (``text.tokenizer.sentences``:
  normalized, lowercased tokens, terminators removed) of at least
  ``MIN_WORDS`` (5) tokens; shorter ones ("thank you very much") are common
  to any two corpora and say nothing about where a text came from;
- its key is the first 8 bytes of blake2b over the tokens joined by spaces;
- only keys divisible by ``sample`` (4 by default) are kept, so the file
  holds about a quarter of the corpus's sentences; a query checks only its
  sentences whose key is divisible by ``sample`` too, so the share it
  reports is an unbiased estimate from about a quarter of the query's
  sentences (``checked`` says how many);
- of a kept key, its upper 32 bits are stored, sorted and delta-coded
  (``.npz``, compressed): a key absent from the corpus matches a stored one
  with probability about n / 2^32 (under 1e-4 for 400,000 stored sentences).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Iterable

import numpy as np

from keyboard_lm.errors import ConfigError

#: A sentence needs at least this many tokens to be fingerprinted or checked.
MIN_WORDS = 5
#: One sentence in this many (by key) is fingerprinted and checked.
DEFAULT_SAMPLE = 4
#: A share of seen sentences above this is warned about.
WARN_SHARE = 0.01
FORMAT = "keyboard_lm.sentence-fingerprint/1"
#: The fingerprint's file name in a base model's run directory.
FINGERPRINT_FILE = "fingerprint.npz"


def sentence_keys(text: str) -> list[int]:
    """64-bit keys of the sentences of ``text`` with at least ``MIN_WORDS`` tokens."""
    from keyboard_lm.text.tokenizer import sentences

    keys = []
    for tokens in sentences(text):
        if len(tokens) >= MIN_WORDS:
            digest = hashlib.blake2b(" ".join(tokens).encode("utf-8"), digest_size=8).digest()
            keys.append(int.from_bytes(digest, "little"))
    return keys


def _sampled_keys(texts: Iterable[str], sample: int) -> tuple[np.ndarray, int]:
    """The upper 32 bits of the keys divisible by ``sample`` (uint32), and how many sentences there were."""
    kept, total = [], 0
    for text in texts:
        for key in sentence_keys(text):
            total += 1
            if key % sample == 0:
                kept.append(key >> 32)
    return np.asarray(kept, np.uint32), total


@dataclasses.dataclass(frozen=True)
class SentenceFingerprint:
    """The sampled, hashed set of a corpus's sentences (see the module docstring).

    Attributes:
      hashes: sorted unique upper 32 bits of the kept keys, uint32.
      sample: one key in ``sample`` is kept.
      sentences: sentences of at least MIN_WORDS tokens in the corpus (all, before sampling).
    """

    hashes: np.ndarray
    sample: int
    sentences: int

    @classmethod
    def build(cls, texts: Iterable[str], sample: int = DEFAULT_SAMPLE) -> "SentenceFingerprint":
        if sample < 1:
            raise ConfigError(f"fingerprint sample must be >= 1, got {sample}")
        kept, total = _sampled_keys(texts, sample)
        return cls(np.unique(kept), sample, total)

    def save(self, path: str) -> None:
        deltas = np.diff(self.hashes.astype(np.int64), prepend=0).astype(np.uint32)
        with open(path, "wb") as f:
            np.savez_compressed(f, format=np.array(FORMAT), deltas=deltas, sample=np.int64(self.sample),
                                sentences=np.int64(self.sentences), min_words=np.int64(MIN_WORDS))

    @classmethod
    def load(cls, path: str) -> "SentenceFingerprint":
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["format"]) != FORMAT:
                    raise ConfigError(f"{path}: not a sentence fingerprint ({str(z['format'])!r})")
                if int(z["min_words"]) != MIN_WORDS:
                    raise ConfigError(f"{path}: fingerprint of sentences of >= {int(z['min_words'])} words; "
                                      f"this version checks >= {MIN_WORDS}")
                hashes = np.cumsum(z["deltas"].astype(np.int64)).astype(np.uint32)
                return cls(hashes, int(z["sample"]), int(z["sentences"]))
        except (OSError, ValueError, KeyError) as e:
            raise ConfigError(f"{path}: unreadable sentence fingerprint ({e})") from None

    def count(self, texts: Iterable[str]) -> dict:
        """``{"sentences", "checked", "seen", "share"}`` of ``texts``' sentences against the fingerprint.

        ``checked`` is the sampled sentences looked up; ``share`` = seen / checked (None when none checked).
        """
        q, total = _sampled_keys(texts, self.sample)
        if len(q) and len(self.hashes):
            pos = np.minimum(np.searchsorted(self.hashes, q), len(self.hashes) - 1)
            seen = int(np.count_nonzero(self.hashes[pos] == q))
        else:
            seen = 0
        return {"sentences": total, "checked": len(q), "seen": seen,
                "share": round(seen / len(q), 6) if len(q) else None}


def overlap_report(fingerprint: SentenceFingerprint, corpus, split) -> dict:
    """The share of the run's training and held-out clients' sentences the base saw.

    ``corpus`` is a ``data.corpora.Corpus``; ``split`` its ``SplitConfig`` (the run's split).
    The report is what run.json's ``init_from.base_overlap`` and the model card record.
    """
    from keyboard_lm.data.split import split_clients

    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    return count_parts(fingerprint, corpus, {"train": train_ids, "heldout": heldout_ids})


def count_parts(fingerprint: SentenceFingerprint, corpus, parts: dict) -> dict:
    """The report of ``overlap_report`` for any named groups of ``corpus``'s clients (name -> client ids)."""
    counts = {name: fingerprint.count(t for cid in ids for t in corpus.clients[cid]) for name, ids in parts.items()}
    shares = [c["share"] for c in counts.values() if c["share"] is not None]
    return {"min_words": MIN_WORDS, "sample": fingerprint.sample, "warn_above": WARN_SHARE, **counts,
            "warning": bool(shares) and max(shares) > WARN_SHARE}


def describe_overlap(report: dict, base: str = "the base") -> list[str]:
    """One line of figures, and one line of warning when a share is above ``WARN_SHARE``.

    ``report`` has ``heldout`` and ``train`` (``overlap_report``) or ``evaluated`` (``eval``) counts.
    """

    def part(p):
        if p["share"] is None:
            return "no sentence of >= 5 words"
        return f"{100 * p['share']:.1f}% of {p['checked']:,} sampled sentences"

    parts = [f"{label} {part(report[key])}" for key, label in
             (("heldout", "held-out"), ("train", "training"), ("evaluated", "evaluated clients"))
             if report.get(key)]
    lines = [f"{base} saw: {', '.join(parts)}"]
    if report["warning"]:
        lines.append(f"WARNING: {base} was pretrained on part of this run's text (over "
                     f"{100 * report['warn_above']:.0f}% of its sentences): held-out figures overstate what an "
                     "unseen user gets, and a DP guarantee does not cover text the base saw")
    return lines


def load_fingerprint(run_dir: str) -> SentenceFingerprint | None:
    """The fingerprint shipped in a base run directory, or None when it has none."""
    path = os.path.join(run_dir, FINGERPRINT_FILE)
    return SentenceFingerprint.load(path) if os.path.isfile(path) else None

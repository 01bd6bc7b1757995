"""The base corpus's mix: what kind of text each source is, and the word caps that keep any one source and
any one kind to a share of the corpus.

A keyboard's base should read like what people type (Wu et al. 2024, "Prompt
public large language models to synthesize data for private on-device
applications": pretraining text that looks like the users' gains about 20%
relative next-word accuracy over generic text).  Debian's technical manuals
and dictionaries are plentiful, its dialogue, novels and quotations are not;
the caps keep the plentiful kinds from drowning the rest.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import math

from benchmarks.tools.base_corpus.prose import Record, Tally
from keyboard_lm.errors import ConfigError

#: Kinds of text, and which of them are the informal register (dialogue, fiction, quotations).
KINDS = ("technical", "dictionary", "bible", "novel", "game", "quotes")
INFORMAL = frozenset({"novel", "game", "quotes"})

#: The caps of the reference build (measured: benchmarks/records/base_corpus_v2.md): no source over 15% (only
#: Austen's novels reach it); dictionaries at most 8%, the Bible 6%, technical documentation 35% of the words,
#: so the informal kinds (novels, game dialogue, fortunes) make half of the corpus.
DEFAULT_MAX_SOURCE_SHARE = 0.15
DEFAULT_MAX_KIND_SHARE = (("dictionary", 0.08), ("bible", 0.06), ("technical", 0.35))


@dataclasses.dataclass(frozen=True)
class MixConfig:
    """Shares of the final corpus (in whitespace words) that no source / no kind may exceed.

    Attributes:
      max_source_share: a cap on every source's share; None = no cap.
      max_kind_share: (kind, share) pairs; a kind over its share is scaled down, its sources in proportion.
    """

    max_source_share: float | None = None
    max_kind_share: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        shares = [("max_source_share", self.max_source_share)] if self.max_source_share is not None else []
        for kind, share in self.max_kind_share:
            if kind not in KINDS:
                raise ConfigError(f"unknown kind {kind!r} in max_kind_share; choose one of {', '.join(KINDS)}")
            shares.append((f"max_kind_share[{kind}]", share))
        for name, share in shares:
            if not 0 < share <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {share}")
        if len({k for k, _ in self.max_kind_share}) != len(self.max_kind_share):
            raise ConfigError("max_kind_share names a kind twice")

    def as_json(self) -> dict:
        return {"max_source_share": self.max_source_share, "max_kind_share": dict(self.max_kind_share)}


def word_caps(available: dict[str, int], kinds: dict[str, str], config: MixConfig) -> dict[str, int]:
    """Words to keep of each source so that, in the corpus they make, no source and no kind is over its share.

    Shares are of the final total, which the caps themselves shrink, so the caps
    are found by iteration: cap against the current total, recompute the total,
    until nothing changes (the total decreases monotonically; the step shrinks
    by the capped shares' sum each round).
    """
    caps = dict(available)
    for _ in range(500):
        total = sum(caps.values())
        new = {}
        for source, words in available.items():
            limit = words if config.max_source_share is None else math.floor(config.max_source_share * total)
            new[source] = min(words, limit)
        for kind, share in config.max_kind_share:
            members = [s for s in new if kinds[s] == kind]
            kind_words = sum(new[s] for s in members)
            if kind_words > share * total:
                scale = share * total / kind_words
                for s in members:
                    new[s] = math.floor(new[s] * scale)
        if new == caps:
            break
        caps = new
    return caps


def mix_report(words: dict[str, int], kinds: dict[str, str]) -> dict:
    """Words and share of the corpus per kind, and the informal share (``INFORMAL`` kinds)."""
    total = sum(words.values()) or 1
    by_kind = {k: sum(w for s, w in words.items() if kinds[s] == k) for k in KINDS}
    return {"kinds": {k: {"words": w, "share": round(w / total, 4)} for k, w in by_kind.items() if w},
            "informal_share": round(sum(by_kind[k] for k in INFORMAL) / total, 4)}


def _doc_order_key(doc: str) -> str:
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def cap_records(records: list[Record], max_words: int | None, tally: Tally) -> list[Record]:
    """At most ``max_words`` whitespace words of ``records``, by whole documents in a fixed pseudo-random order.

    Documents are taken in the order of the sha256 of their ids (a seeded
    choice that does not depend on the reading order) while they fit; the
    first one that does not fit contributes its leading records that do, and
    then the selection stops.  Kept records stay in their original order.
    The rest is counted as dropped for ``cap``.
    """
    if max_words is None:
        return records
    by_doc: dict[str, list[int]] = collections.defaultdict(list)
    for i, (doc, _) in enumerate(records):
        by_doc[doc].append(i)
    keep: set[int] = set()
    total = 0
    for doc in sorted(by_doc, key=_doc_order_key):
        indices = by_doc[doc]
        words = sum(len(records[i][1].split()) for i in indices)
        if total + words <= max_words:
            keep.update(indices)
            total += words
            continue
        for i in indices:
            w = len(records[i][1].split())
            if total + w > max_words:
                break
            keep.add(i)
            total += w
        break
    out = []
    for i, record in enumerate(records):
        if i in keep:
            out.append(record)
        else:
            tally.drop("cap", record[1])
    return out

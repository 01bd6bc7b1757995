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

import dataclasses
import math

from keyboard_lm.errors import ConfigError

#: Kinds of text, and which of them are the informal register (dialogue, fiction, quotations).
KINDS = ("technical", "dictionary", "bible", "novel", "game", "quotes")
INFORMAL = frozenset({"novel", "game", "quotes"})


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

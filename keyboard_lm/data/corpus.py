"""The corpus type: text records by client, and the records a reader skipped (no TensorFlow).

Readers of each ``--format`` live in ``keyboard_lm.data.corpora`` (and ``keyboard_lm.data.mbox`` for
e-mail); each fills a :class:`Collector`, which names the file and line of every bad record and, with
``skip_bad``, counts it in ``Corpus.skipped`` instead of stopping, so nothing is dropped silently.
"""

from __future__ import annotations

import collections
import dataclasses

from keyboard_lm.errors import DataError


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Text records grouped by client.

    Attributes:
      name: what the corpus is (format and source), for reports.
      clients: client id -> its text records, in file order.
      skipped: one ``SkippedRecord`` per record skipped (by ``skip_bad``, or
        always for the empty speeches/turns of the bundled corpora).
    """

    name: str
    clients: dict[str, list[str]]
    skipped: tuple["SkippedRecord", ...] = ()

    @property
    def client_ids(self) -> list[str]:
        return sorted(self.clients)

    @property
    def num_records(self) -> int:
        return sum(len(v) for v in self.clients.values())

    def fingerprint(self) -> str:
        """sha256 over the sorted client ids and each client's record count and characters.

        Runs record it, so ``eval`` can tell the corpus a run was trained on
        from another one (a different file, format or partition).
        """
        import hashlib

        h = hashlib.sha256()
        for cid in self.client_ids:
            records = self.clients[cid]
            h.update(f"{cid}\t{len(records)}\t{sum(len(t) for t in records)}\n".encode("utf-8"))
        return h.hexdigest()

    def sentences(self, client_ids=None):
        """Tokenized sentences of the given clients (all by default), in order."""
        from keyboard_lm.text.tokenizer import sentences

        for cid in self.client_ids if client_ids is None else client_ids:
            for text in self.clients[cid]:
                yield from sentences(text)

    def skipped_summary(self, limit: int = 3) -> str:
        """One line: how many records were skipped, by reason, and where the first ``limit`` of them are."""
        total = self.num_records + len(self.skipped)
        line = f"{len(self.skipped):,} of {total:,} records skipped in {self.name}"
        if not self.skipped:
            return line
        reasons = collections.Counter(s.reason for s in self.skipped)
        line += " (" + ", ".join(f"{n:,} {reason}" for reason, n in reasons.most_common()) + "): "
        line += "; ".join(s.where for s in self.skipped[:limit])
        return line + ("; ..." if len(self.skipped) > limit else "")

    def subset(self, client_ids) -> "Corpus":
        missing = [c for c in client_ids if c not in self.clients]
        if missing:
            raise DataError(f"{self.name}: unknown client ids {missing[:5]}")
        return Corpus(self.name, {c: self.clients[c] for c in client_ids}, self.skipped)


@dataclasses.dataclass(frozen=True)
class SkippedRecord:
    """A record that was not used: where it is, the kind of problem, details."""

    where: str
    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


def _lone_surrogate(text: str) -> int | None:
    """The index of the first code point UTF-8 cannot encode (a lone surrogate) in ``text``, or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


class Collector:
    """Collects records and bad-record reports for one reader (every reader of ``corpora`` and ``mbox`` uses one)."""

    def __init__(self, source: str, skip_bad: bool):
        self.source = source
        self.skip_bad = skip_bad
        self.clients: dict[str, list[str]] = collections.defaultdict(list)
        self.skipped: list[SkippedRecord] = []

    def bad(self, where: str, reason: str, detail: str = "") -> None:
        record = SkippedRecord(where, reason, detail)
        if not self.skip_bad:
            raise DataError(f"{record}; use --skip-bad to skip such records and count them")
        self.skipped.append(record)

    def add(self, client: str, text: str, where: str, empty_ok: bool = False) -> None:
        """Add a record; an empty one is bad, or with ``empty_ok`` only counted; one that is not valid
        Unicode (a lone surrogate, as a JSON ``\\udc00`` escape decodes to) is bad: no tokenizer, TensorFlow
        string or file can hold it."""
        for what, value in (("text", text), ("client id", client)):
            at = _lone_surrogate(value)
            if at is not None:
                self.bad(where, "not valid Unicode",
                         f"a lone surrogate U+{ord(value[at]):04X} at character {at + 1} of the {what}")
                return
        if not text.strip():
            if empty_ok:
                self.skipped.append(SkippedRecord(where, "empty text", f"client {client!r}"))
            else:
                self.bad(where, "empty text", f"client {client!r}")
            return
        self.clients[client].append(text)

    def corpus(self, name: str) -> Corpus:
        if not self.clients:
            detail = f" ({len(self.skipped)} bad records skipped)" if self.skipped else ""
            raise DataError(f"{self.source}: the corpus has no clients with text{detail}")
        return Corpus(name, dict(self.clients), tuple(self.skipped))

"""User-partitioned text corpora: readers for each ``--format`` (no TensorFlow).

A corpus maps a client (a user, a speaking role, a conversation) to the list
of its text records (messages, speeches, lines).  Readers name the file and
line of every bad record; with ``skip_bad=True`` they skip it and count it in
``Corpus.skipped`` instead, so nothing is dropped silently.
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from typing import Callable

from keyboard_lm.data.corpus import Collector, Corpus
from keyboard_lm.data.mbox import load_maildir, load_mbox
from keyboard_lm.errors import DataError


def _read_lines(path: str, collector: Collector):
    """Yield (line_number, text) of a UTF-8 file; bad bytes are reported per line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a file") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as e:
            collector.bad(f"{path}:{number}", "not valid UTF-8", f"byte {e.start} of the line")


#: The longest whole number a JSONL record may hold: a user id is far shorter; Python refuses to convert
#: integers past 4,300 digits (and converts long ones in quadratic time).
JSON_MAX_DIGITS = 1000


class _NumberTooLong(ValueError):
    """A JSON integer longer than ``JSON_MAX_DIGITS`` digits."""


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > JSON_MAX_DIGITS:
        raise _NumberTooLong(f"a number of {digits:,} digits; at most {JSON_MAX_DIGITS:,}")
    return int(text)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def load_jsonl(path: str, skip_bad: bool = False) -> Corpus:
    """One JSON object per line: ``{"user": "...", "text": "..."}``."""
    collector = Collector(path, skip_bad)
    for number, line in _read_lines(path, collector):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line, parse_int=_json_int)
        except json.JSONDecodeError as e:
            collector.bad(where, "not valid JSON", f"{e.msg} at column {e.colno}")
            continue
        except _NumberTooLong as e:
            collector.bad(where, "JSON beyond the reader's limits", str(e))
            continue
        except RecursionError:  # the parser recurses once per level of nesting
            collector.bad(where, "JSON beyond the reader's limits", "arrays or objects nested too deeply")
            continue
        if not isinstance(obj, dict):
            collector.bad(where, "not a JSON object", f"got {type(obj).__name__}")
            continue
        missing = [k for k in ("user", "text") if k not in obj]
        if missing:
            collector.bad(where, "missing field", ", ".join(repr(m) for m in missing))
            continue
        user, text = obj["user"], obj["text"]
        if not isinstance(user, (str, int)) or isinstance(user, bool) or str(user) == "":
            collector.bad(where, 'bad "user"', f"must be a non-empty string, got {_short(repr(user))}")
            continue
        if not isinstance(text, str):
            collector.bad(where, 'bad "text"', f"must be a string, got {type(text).__name__}")
            continue
        collector.add(str(user), text, where)
    return collector.corpus(f"jsonl:{os.path.basename(path)}")


def load_textdir(path: str, skip_bad: bool = False) -> Corpus:
    """A directory with one UTF-8 text file per user; each non-blank line is a record."""
    if not os.path.isdir(path):
        raise DataError(f"{path}: not a directory (--format textdir wants one text file per user)")
    collector = Collector(path, skip_bad)
    names = sorted(n for n in os.listdir(path) if not n.startswith("."))
    for name in names:
        file_path = os.path.join(path, name)
        if not os.path.isfile(file_path):
            continue
        user = os.path.splitext(name)[0]
        before = len(collector.clients.get(user, ()))
        for number, line in _read_lines(file_path, collector):
            if line.strip():
                collector.add(user, line, f"{file_path}:{number}")
        if len(collector.clients.get(user, ())) == before:
            collector.bad(file_path, "client has no text", f"client {user!r}")
    return collector.corpus(f"textdir:{os.path.basename(os.path.normpath(path))}")


# A speech header: a role name alone on a line after a blank line, e.g. "First Citizen:".
_ROLE_HEADER = re.compile(r"[A-Z][A-Za-z .,'&-]*:")


def load_shakespeare(path: str, skip_bad: bool = False) -> Corpus:
    """Tiny Shakespeare split by speaking role: one client per role, one record per speech.

    A speech starts at a line ``ROLE NAME:`` that follows a blank line (or
    starts the file); its lines are joined with spaces into one record.  The
    file has speeches whose header is followed by no text at all; those are
    always skipped and counted in ``Corpus.skipped`` (they are a property of
    the file, not a reading error).
    """
    collector = Collector(path, skip_bad)
    role, start, lines = None, 0, []
    blank_before = True

    def flush():
        if role is not None:
            collector.add(role, " ".join(lines), f"{path}:{start}", empty_ok=True)

    for number, line in _read_lines(path, collector):
        stripped = line.strip()
        if blank_before and _ROLE_HEADER.fullmatch(stripped):
            flush()
            role, start, lines = stripped[:-1], number, []
        elif stripped:
            if role is None:
                collector.bad(f"{path}:{number}", "text before the first 'ROLE NAME:' header")
            else:
                lines.append(stripped)
        blank_before = not stripped
    flush()
    return collector.corpus(f"shakespeare:{os.path.basename(path)}")


_DEFAULT_EXCLUDED = frozenset({"coding.yml"})


def load_default(path: str | None = None, skip_bad: bool = False) -> Corpus:
    """The embedded default corpus: the English conversations of chatterbot-corpus.

    One client per conversation (``topic/N``), one record per turn.  The
    corpus ships in the ``chatterbot-corpus`` package (BSD-3-Clause), so it
    works offline after setup.  ``path`` is ignored.  The ``coding`` topic is
    left out: it is program listings, not typed conversation.  Empty turns
    are counted in ``Corpus.skipped``.
    """
    import yaml  # only this reader needs it

    # libyaml's parser (in PyYAML's wheels) reads the corpus 30x faster than the pure-Python one; both are safe.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    collector = Collector("chatterbot-corpus", skip_bad)
    english = resources.files("chatterbot_corpus") / "data" / "english"
    for entry in sorted(english.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yml") or entry.name in _DEFAULT_EXCLUDED:
            continue
        where = f"chatterbot_corpus/data/english/{entry.name}"
        try:
            doc = yaml.load(entry.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            collector.bad(where, "unreadable YAML", str(e))
            continue
        topic = entry.name[: -len(".yml")]
        for n, conversation in enumerate(doc.get("conversations") or []):
            for turn in conversation:
                if isinstance(turn, str):
                    collector.add(f"{topic}/{n}", turn, f"{where} conversation {n}", empty_ok=True)
    return collector.corpus("default:chatterbot-corpus/english")


#: --format name -> reader(path, skip_bad).  ``stackoverflow`` is served by
#: ``keyboard_lm.federated.client_data`` because it comes from TFF.
READERS: dict[str, Callable[..., Corpus]] = {
    "jsonl": load_jsonl,
    "textdir": load_textdir,
    "shakespeare": load_shakespeare,
    "mbox": load_mbox,
    "maildir": load_maildir,
    "default": load_default,
}


def load_corpus(path: str | None, fmt: str, skip_bad: bool = False) -> Corpus:
    """Read ``path`` in format ``fmt`` (one of ``READERS``)."""
    if fmt not in READERS:
        raise DataError(f"unknown --format {fmt!r}; choose one of {', '.join(sorted(READERS))}, stackoverflow")
    if fmt != "default" and not path:
        raise DataError(f"--format {fmt} needs --data PATH")
    if fmt != "default" and not os.path.exists(path):
        raise DataError(f"{path}: no such file or directory")
    return READERS[fmt](path, skip_bad=skip_bad)

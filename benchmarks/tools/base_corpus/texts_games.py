"""Game and fortune text in the games' own formats: Endless Sky's data files and fortune(6) cookies.

=====================  ===========================================================  ==============================
source (user prefix)   what is read                                                 one document (one client)
=====================  ===========================================================  ==============================
endless-sky-data       ``data/*.txt``: conversations, choices, dialogs, spaceport   one top-level entry (a mission,
                       and planet descriptions                                      an event, a planet...)
fortunes               ``usr/share/games/fortunes/*.u8`` (UTF-8 fortune files)      one fortune
crawl-common           Dungeon Crawl's text database: monster speech, descriptions  one entry (a monster, a god,
                       of monsters, gods, items, the quotes shown with them         an item...)
=====================  ===========================================================  ==============================

Endless Sky's data files (the game's ``DataFile`` format, ``source/DataFile.cpp``)
are lines of tokens indented by tabs; a token is a word, a ``"double-quoted"``
or a `` `backquoted` `` string.  A line that is one string alone is a paragraph
of a conversation or a choice; ``description``, ``dialog`` and ``spaceport``
lines carry one paragraph of text; every other string (names, phrases,
labels) is counted as ``game_data``.  A sentence with a substitution the game
fills in (``<planet>``, ``<first> <last>``) is dropped as ``placeholder``.

fortune files are quotes, jokes and verse separated by ``%`` lines; the
attribution line (``-- Mark Twain``) is dropped as ``attribution``, the lines
of a fortune are joined.  Not read: the ``ethnic`` file (jokes about peoples:
nothing a keyboard should learn to complete), counted as ``offensive_topic``,
and the ``.dat`` indices.

Dungeon Crawl's database (``dat/database`` and ``dat/descript``, English;
the translations beside them are counted as ``other_language``) is entries
between ``%%%%`` lines: a key line, then text with hard-wrapped lines and
blank lines between paragraphs; ``#`` lines are comments.  An entry whose key
starts with ``_`` is a table the game substitutes into others (``_shouts_``),
and ``w:N`` lines are weights: both ``game_data``; the author line under a
quotation (``-Judas Priest, "Electric Eye"``) is ``attribution``.  Of a speech template
(``@The_monster@ says @to_foe@, "It's nothing personal."``) the quoted words
are kept; a sentence with a substitution left in it is ``placeholder``.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.filters import split_sentences
from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally, clean_whitespace
from benchmarks.tools.base_corpus.sources import require_dir
from keyboard_lm.errors import DataError

_ES_TOKEN = re.compile(r'"([^"]*)"|`([^`]*)`|(\S+)')
_ES_TEXT_KEYS = frozenset({"description", "dialog", "spaceport"})
_ES_PLACEHOLDER = re.compile(r"<[a-z][\w ]*>")


def endless_sky_tokens(line: str) -> list[tuple[str, bool]]:
    """(token, quoted) of one line of an Endless Sky data file."""
    out = []
    for m in _ES_TOKEN.finditer(line):
        if m.group(3) is not None:
            if m.group(3).startswith("#"):
                break  # a comment
            out.append((m.group(3), False))
        else:
            out.append((m.group(1) if m.group(1) is not None else m.group(2), True))
    return out


def endless_sky_pieces(lines: list[str]) -> Iterator[tuple[str, str | None, str]]:
    """(entry, drop reason or None, text) of the strings of one data file; ``entry`` names the top-level node."""
    entry = ""
    for line in lines:
        tokens = endless_sky_tokens(line)
        if not tokens:
            continue
        if not line[:1].isspace():
            entry = " ".join(t for t, _ in tokens[:2])
        if len(tokens) == 1 and tokens[0][1]:
            yield entry, None, tokens[0][0]
        elif len(tokens) == 2 and tokens[1][1] and tokens[0][0] in _ES_TEXT_KEYS and not tokens[0][1]:
            yield entry, None, tokens[1][0]
        else:
            for text, quoted in tokens:
                if quoted:
                    yield entry, "game_data", text


def extract_endless_sky(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """Endless Sky's conversations and descriptions (module docstring)."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/games/endless-sky/data"), "endless-sky data")
    keeper = Keeper(tally)
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if not name.endswith(".txt"):
            tally.skip_file("not_data")
            continue
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: cannot read: {e}") from None
        tally.files_read += 1
        for entry, reason, text in endless_sky_pieces(lines):
            if reason:
                tally.drop(reason, text)
                continue
            kept_sentences = []
            for sentence in split_sentences(clean_whitespace(text)):
                if _ES_PLACEHOLDER.search(sentence):
                    tally.drop("placeholder", sentence)
                else:
                    kept_sentences.append(sentence)
            kept = keeper.keep(" ".join(kept_sentences))
            if kept:
                yield f"endless-sky-data/{name[:-4]}/{entry}", kept


_ATTRIBUTION = re.compile(r"\s*(?:--|―|—)\s*\S.*$")
#: fortune files not read, and why.
FORTUNE_SKIP = {"ethnic": "offensive_topic"}


def fortune_entries(text: str) -> list[str]:
    """The fortunes of a fortune file: blocks between ``%`` lines."""
    entries, cur = [], []
    for line in text.split("\n"):
        if line.strip() == "%":
            entries.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    entries.append("\n".join(cur))
    return [e for e in entries if e.strip()]


def fortune_text(entry: str, tally: Tally) -> str:
    """One fortune as one paragraph: attribution lines dropped, lines joined."""
    lines = entry.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    kept = []
    for i, line in enumerate(lines):
        if _ATTRIBUTION.fullmatch(line) and (i == len(lines) - 1 or line.startswith(("\t", " "))):
            tally.drop("attribution", line)
        else:
            kept.append(line)
    return clean_whitespace(" ".join(kept))


def extract_fortunes(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The English fortunes of the ``fortunes`` package (module docstring)."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/games/fortunes"), "fortunes data")
    keeper = Keeper(tally)
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if os.path.isdir(path) or not name.endswith(".u8"):
            tally.skip_file("not_utf8_text" if not name.endswith(".dat") else "index")
            continue
        topic = name[:-3]
        if topic in FORTUNE_SKIP:
            tally.skip_file(FORTUNE_SKIP[topic])
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: cannot read: {e}") from None
        tally.files_read += 1
        for number, entry in enumerate(fortune_entries(text), start=1):
            kept = keeper.keep(fortune_text(entry, tally))
            if kept:
                yield f"fortunes/{topic}/{number}", kept


_CRAWL_PLACEHOLDER = re.compile(r"@\w+@|\$[A-Za-z_]\w*|<\w+>")
_QUOTED = re.compile(r'"([^"]+)"')


def crawl_entries(text: str, tally: Tally, quotes: bool = False) -> Iterator[tuple[str, list[str]]]:
    """(key, paragraphs) of a Crawl database file: entries between ``%%%%`` lines, comments removed; in the
    quotations file, the ``-Author, "Title"`` line under a quotation is dropped as ``attribution``."""
    for block in text.split("%%%%"):
        lines = [line for line in block.split("\n") if not line.startswith("#")]
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines:
            continue
        paragraphs, cur = [], []
        for line in lines[1:] + [""]:
            if quotes and cur and line.strip().startswith(("-", "—", "―")):
                tally.drop("attribution", line)
            elif line.strip():
                cur.append(line.strip())
            elif cur:
                paragraphs.append(" ".join(cur))
                cur = []
        yield lines[0].strip(), paragraphs


def crawl_text(paragraph: str, tally: Tally) -> str:
    """A paragraph of a Crawl entry without its template parts (module docstring)."""
    if _CRAWL_PLACEHOLDER.search(paragraph) and _QUOTED.search(paragraph):
        quoted = _QUOTED.findall(paragraph)
        tally.drop("game_data", _QUOTED.sub(" ", paragraph))
        paragraph = " ".join(quoted)
    kept = []
    for sentence in split_sentences(clean_whitespace(paragraph)):
        if _CRAWL_PLACEHOLDER.search(sentence):
            tally.drop("placeholder", sentence)
        else:
            kept.append(sentence)
    return " ".join(kept)


def extract_crawl(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """Dungeon Crawl Stone Soup's English text database (module docstring)."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/crawl/dat"), "crawl-common data")
    keeper = Keeper(tally)
    for part in ("database", "descript"):
        folder = require_dir(os.path.join(base, part), f"crawl-common {part}")
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.isdir(path):
                tally.skip_file("other_language", sum(len(f) for _, _, f in os.walk(path)))
                continue
            if not name.endswith(".txt"):
                tally.skip_file("not_text")
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError) as e:
                raise DataError(f"{path}: cannot read: {e}") from None
            tally.files_read += 1
            for key, paragraphs in crawl_entries(text, tally, quotes=name == "quotes.txt"):
                if key.startswith("_"):
                    tally.drop("game_data", " ".join(paragraphs))
                    continue
                for paragraph in paragraphs:
                    if re.fullmatch(r"w:\d+", paragraph):
                        continue
                    kept = keeper.keep(crawl_text(paragraph, tally))
                    if kept:
                        yield f"crawl-common/{name[:-4]}/{key}", kept


SOURCES = (
    ("endless-sky-data", extract_endless_sky),
    ("fortunes", extract_fortunes),
    ("crawl-common", extract_crawl),
)

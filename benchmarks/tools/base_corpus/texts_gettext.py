"""Game text read from gettext catalogs: the English source strings (msgids) of a package's ``.mo`` files.

A translated program ships one compiled catalog per language and text domain
(``<locale>/LC_MESSAGES/<domain>.mo``); each holds the English original of
every string translated into that language: dialogue, quest logs, item and
monster descriptions, in-game notes, help.  The union over all languages of a
domain is the English text the game shows, less what no translator reached.
The format is GNU gettext's (manual, "The Format of GNU MO Files"): magic
``0x950412de`` in the file's byte order, revision, N, and the offsets of two
tables of (length, offset) pairs, originals first.  A msgid ``ctxt\\x04text`` has
its context removed; of a plural entry (``one\\x00many``) the singular is read.

Per string: formatting markup (``<color_red>``, ``<span>``, Wesnoth's help
``<ref>``; Naev's ``#r`` colour codes where the source says so) is removed; the
string is split into lines (one record each, as the game shows them); a
sentence with a placeholder the game fills in (``%s``, ``%1$d``, ``<npcname>``,
``$unit.name``, ``{player}``) is dropped as ``placeholder``.  One document
(client) is a text domain's strings in one of 64 buckets by hash, so a domain
of 50,000 strings is not one giant client.  Sources (package -> what is read)
are listed in ``SOURCES``.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
from typing import Callable, Iterator

from benchmarks.tools.base_corpus.filters import split_sentences
from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally, clean_whitespace
from keyboard_lm.errors import DataError

_MAGIC = 0x950412DE
_BUCKETS = 64
_MARKUP = re.compile(r"</?(?:color(?:_\w+)?|span|b|i|u|big|small|bold|italic|header|ref|img|format|jump|font|"
                     r"emphasis|strong|em|tt|good|bad|info|neutral|stat|help)\b[^>]*>")
_NAEV_COLOUR = re.compile(r"#[0-9a-zA-Z]")
_PLACEHOLDER = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?[sdifuxXcg]|%\(\w+\)[sd]|<[a-zA-Z_][\w:]*>|"
                          r"\$[A-Za-z_][\w.|\[\]]*|\{[A-Za-z_][^{}]*\}|\[\w+\]|@\w+@")


def read_mo(path: str) -> list[str]:
    """The msgids of a compiled gettext catalog, in file order; the header (empty msgid) is left out."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) < 20:
        raise DataError(f"{path}: not a gettext .mo file (too short)")
    for order in "<>":
        if struct.unpack(order + "I", data[:4])[0] == _MAGIC:
            break
    else:
        raise DataError(f"{path}: not a gettext .mo file (magic {data[:4].hex()})")
    _, count, originals, _ = struct.unpack(order + "4I", data[4:20])
    if originals + 8 * count > len(data):
        raise DataError(f"{path}: string table past the end of the file")
    out = []
    for i in range(count):
        length, offset = struct.unpack_from(order + "2I", data, originals + 8 * i)
        if offset + length > len(data):
            raise DataError(f"{path}: string {i} past the end of the file")
        text = data[offset:offset + length].decode("utf-8", errors="replace")
        text = text.split("\x04", 1)[-1].split("\x00", 1)[0]
        if text:
            out.append(text)
    return out


def catalogs(root: str) -> dict[str, list[str]]:
    """text domain -> its ``.mo`` files (every language) under ``root``, sorted."""
    found: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if os.path.basename(dirpath) != "LC_MESSAGES":
            continue
        for name in sorted(filenames):
            if name.endswith(".mo"):
                found.setdefault(name[:-3], []).append(os.path.join(dirpath, name))
    return found


def clean_string(text: str, tally: Tally, colour_codes: bool = False) -> Iterator[str]:
    """The lines of a game string, markup removed and sentences with placeholders dropped."""
    text = _MARKUP.sub("", text)
    if colour_codes:
        text = _NAEV_COLOUR.sub("", text)
    for line in text.split("\n"):
        line = clean_whitespace(line)
        if not line:
            continue
        kept = []
        for sentence in split_sentences(line):
            if _PLACEHOLDER.search(sentence):
                tally.drop("placeholder", sentence)
            else:
                kept.append(sentence)
        if kept:
            yield " ".join(kept)


def extract_gettext(root: str, package: str, tally: Tally, colour_codes: bool = False,
                    skip_domain: Callable[[str], bool] = lambda domain: False) -> Iterator[Record]:
    """The English strings of every text domain of ``package``'s catalogs (module docstring)."""
    found = catalogs(root)
    if not found:
        raise DataError(f"{root}: no gettext catalogs (<locale>/LC_MESSAGES/*.mo) in {package}")
    keeper = Keeper(tally)
    for domain in sorted(found):
        if skip_domain(domain):
            tally.skip_file("other_domain", len(found[domain]))
            continue
        strings: set[str] = set()
        for path in found[domain]:
            strings.update(read_mo(path))
            tally.files_read += 1
        for text in sorted(strings):
            bucket = hashlib.blake2b(text.encode("utf-8"), digest_size=1).digest()[0] % _BUCKETS
            for line in clean_string(text, tally, colour_codes):
                kept = keeper.keep(line)
                if kept:
                    yield f"{package}/{domain}/{bucket:02d}", kept


def _reader(package: str, **options) -> Callable[[str, Tally], Iterator[Record]]:
    def extract(root: str, tally: Tally | None = None) -> Iterator[Record]:
        return extract_gettext(root, package, tally if tally is not None else Tally(), **options)

    extract.__doc__ = f"The English msgids of {package}'s gettext catalogs (``extract_gettext``)."
    return extract


#: Wesnoth's campaigns, one package each (all read the same way).
WESNOTH_CAMPAIGNS = tuple(f"wesnoth-1.16-{c}" for c in
                          "did dm dw ei httt l low nr sof sota sotbe thot trow tsg ttb utbs".split())

SOURCES = (
    ("cataclysm-dda-data", _reader("cataclysm-dda-data")),
    ("naev-data", _reader("naev-data", colour_codes=True)),
    ("freedroidrpg-data", _reader("freedroidrpg-data")),
    ("freedink-data", _reader("freedink-data")),
    ("widelands-data", _reader("widelands-data")),
    # The editor's and the engine's UI strings are labels and options, not text a person writes.
    ("wesnoth-1.16-data", _reader("wesnoth-1.16-data", skip_domain=lambda d: d in ("wesnoth-editor",
                                                                                 "wesnoth-lib"))),
) + tuple((p, _reader(p)) for p in WESNOTH_CAMPAIGNS)

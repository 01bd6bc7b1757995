"""Jane Austen's six novels, read from the R data of ``r-cran-janeaustenr`` (no R needed).

An installed R package keeps its data sets in a lazy-load database:
``data/Rdata.rdx`` (an index, gzip: each object's offset and length in the ``.rdb``)
and ``data/Rdata.rdb`` (the objects, each compressed), both in R's
serialization format (R Internals, section 1.8 "Serialization Formats"; the
lazy-load layout is ``makeLazyLoadDB`` in R's ``src/library/base/R/lazyload.R``).
``unserialize`` below reads the XDR format for the types these files use
(character, integer, logical, double and generic vectors, pairlists with tags
and attributes, symbols); anything else is refused with the type named.

Each novel is a character vector of its printed lines (Project Gutenberg
editions, public-domain text; the package is MIT): a paragraph is a run of
non-empty lines, a chapter starts at a ``CHAPTER`` / ``Chapter`` line.  One
document is one chapter (``austen/<novel>/<chapter>``), one record one
paragraph; the title page and chapter headings are dropped as ``heading``.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import struct
import zlib
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally
from benchmarks.tools.base_corpus.sources import require_dir
from keyboard_lm.errors import DataError

_NIL, _SYM, _LIST, _CHAR, _LGL, _INT, _REAL, _STR, _VEC, _REF = 254, 1, 2, 9, 10, 13, 14, 16, 19, 255
_NA_INT = -2 ** 31


class _Reader:
    def __init__(self, data: bytes, where: str):
        self.data, self.pos, self.where, self.refs = data, 0, where, []

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise DataError(f"{self.where}: truncated R serialization at byte {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == _NIL:
            return None
        if kind == _REF:
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if kind == _SYM:
            name = self.item()
            self.refs.append(name)
            return name
        if kind == _LIST:  # a pairlist: {tag: value} in order (attributes, the .rdx index)
            out = {}
            while kind == _LIST:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else str(len(out))
                out[tag] = self.item()
                flags = self.int()
                kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
            if kind != _NIL:
                raise DataError(f"{self.where}: pairlist ends with type {kind}")
            return out
        if kind == _CHAR:
            n = self.int()
            return None if n == -1 else self.take(n).decode("utf-8", errors="replace")
        if kind in (_LGL, _INT):
            n = self.int()
            value = [None if v == _NA_INT else v for v in struct.unpack(f">{n}i", self.take(4 * n))]
        elif kind == _REAL:
            n = self.int()
            value = list(struct.unpack(f">{n}d", self.take(8 * n)))
        elif kind in (_STR, _VEC):
            value = [self.item() for _ in range(self.int())]
        else:
            raise DataError(f"{self.where}: R object of type {kind} (only vectors, pairlists and symbols are read)")
        if has_attr:
            names = self.item().get("names")
            if names is not None:
                return dict(zip(names, value))
        return value


def unserialize(data: bytes, where: str):
    """An R object serialized in XDR format (``X\\n``, versions 2 and 3), as Python lists and dicts.

    A vector with a ``names`` attribute becomes a dict; other attributes are skipped.
    """
    if data[:2] != b"X\n":
        raise DataError(f"{where}: not an XDR R serialization (starts {data[:2]!r})")
    r = _Reader(data, where)
    r.take(2)
    version = r.int()
    r.take(8)  # the writer's and the minimal reader's R versions
    if version == 3:
        r.take(r.int())  # the native encoding's name
    elif version != 2:
        raise DataError(f"{where}: R serialization version {version} (2 and 3 are read)")
    return r.item()


def _decompress(blob: bytes, where: str) -> bytes:
    """One block of a lazy-load database: 4-byte length, then zlib data or a type byte (Z, 2, X, 0) and data."""
    size = struct.unpack(">I", blob[:4])[0]
    kind, rest = blob[4:5], blob[5:]
    try:
        if kind == b"Z":
            out = zlib.decompress(rest)
        elif kind == b"2":
            out = bz2.decompress(rest)
        elif kind == b"X":
            out = lzma.decompress(rest)
        elif kind == b"0":
            out = rest
        else:
            out = zlib.decompress(blob[4:])
    except (zlib.error, OSError, lzma.LZMAError) as e:
        raise DataError(f"{where}: cannot decompress: {e}") from None
    if len(out) != size:
        raise DataError(f"{where}: decompressed to {len(out)} bytes, not {size}")
    return out


def read_lazyload(base: str) -> dict:
    """name -> object of the lazy-load database ``base.rdx`` / ``base.rdb``."""
    try:
        with gzip.open(base + ".rdx", "rb") as f:  # saveRDS's gzip
            index = unserialize(f.read(), base + ".rdx")
        with open(base + ".rdb", "rb") as f:
            rdb = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{base}.rdx/.rdb: cannot read: {e}") from None
    out = {}
    for name, (offset, length) in index["variables"].items():
        where = f"{base}.rdb[{name}]"
        out[name] = unserialize(_decompress(rdb[offset:offset + length], where), where)
    return out


#: janeaustenr's data set names -> the novel's title (the document prefix).
AUSTEN_BOOKS = {"emma": "Emma", "mansfieldpark": "Mansfield Park", "northangerabbey": "Northanger Abbey",
                "persuasion": "Persuasion", "prideprejudice": "Pride and Prejudice",
                "sensesensibility": "Sense and Sensibility"}
_CHAPTER = re.compile(r"(?:CHAPTER|Chapter)\s+([IVXLC\d]+)\.?|(?:VOLUME|Volume)\s+[IVX\d]+")


def austen_paragraphs(lines: list[str], tally: Tally) -> Iterator[tuple[int, str]]:
    """(chapter number, paragraph) of a novel's lines; text before the first chapter is ``front_matter``.

    ``CHAPTER`` and ``VOLUME`` lines are dropped as ``heading``; only a chapter line starts a new chapter.
    """
    chapter, para = 0, []
    for line in lines + [""]:
        line = (line or "").strip()
        heading = _CHAPTER.fullmatch(line)
        if line and not heading:
            para.append(line)
            continue
        if para:
            text = " ".join(para)
            para.clear()
            if chapter:
                yield chapter, text
            else:
                tally.drop("front_matter", text)
        if heading:
            tally.drop("heading", line)
            chapter += bool(heading.group(1))


def extract_janeausten(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """Austen's six novels (``AUSTEN_BOOKS``): one record per paragraph, one document per chapter."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/lib/R/site-library/janeaustenr/data"), "janeaustenr data")
    data = read_lazyload(os.path.join(base, "Rdata"))
    tally.files_read += 1
    missing = sorted(set(AUSTEN_BOOKS) - set(data))
    if missing:
        raise DataError(f"{base}/Rdata: no data set {', '.join(missing)} (janeaustenr)")
    keeper = Keeper(tally)
    for name in sorted(AUSTEN_BOOKS):
        lines = data[name]
        if not isinstance(lines, list) or not all(x is None or isinstance(x, str) for x in lines):
            raise DataError(f"{base}/Rdata: {name} is not a character vector")
        for chapter, text in austen_paragraphs(lines, tally):
            kept = keeper.keep(text)
            if kept:
                yield f"r-cran-janeaustenr/{AUSTEN_BOOKS[name]}/{chapter}", kept

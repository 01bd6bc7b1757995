"""More English prose for the base corpus: the Bible, two dictd dictionaries, Debian's own texts, GNOME developer help.

Extractors in the style of ``benchmarks.tools.base_corpus.builder`` (same ``Record``,
``Tally``, prose rule and per-source dedupe), for these packages:

=====================  ===========================================================  ==============================
source (user prefix)   what is read                                                 one document (one client)
=====================  ===========================================================  ==============================
bible-kjv-text         ``usr/lib/bible.data`` (King James Version, LZW blocks)      one chapter
dict-foldoc            dictd ``foldoc.dict.dz`` + ``.index`` (FOLDOC)               one headword
dict-devil             dictd ``devil.dict.dz`` + ``.index`` (Bierce)                one headword (and the preface)
doc-debian             plain text ``usr/share/doc/debian/*`` (current versions)     one file
debian-history         DocBook HTML ``docs/*.en.html`` + English dedications        one chapter / one dedication
gnome-devel-docs       Mallard ``.page`` files of the ``C`` (English) locale        one page
=====================  ===========================================================  ==============================

What is dropped, by reason (besides the builder's ``too_short``,
``mostly_symbols`` and ``duplicate``):

* bible-kjv-text: the file's title line (``front_matter``); verse references
  (``Ge1:1``) are not text and are not counted;
* dict-foldoc: ``license`` (dictd database headers and the info entry),
  ``front_matter`` (``<introduction>`` entries), ``headword``,
  ``usage_label`` (``<language, humour>``), ``pronunciation`` (``/broh'k*t/``),
  ``source_tag`` (``[{Jargon File}]``), ``citation`` (other bracketed paragraphs:
  references, editor's questions), ``date_stamp`` (``(1997-03-14)``),
  ``cross_reference`` (``See also {x}.`` and paragraphs that are only links),
  ``url`` and ``email`` (removed from sentences), ``code_block`` (deeper indented
  paragraphs that are not long prose lines);
* dict-devil: ``license`` (database headers, the e-text's title page),
  ``headword`` (``ABASEMENT, n.``), ``usage_label`` (``[Latin]``),
  ``attribution`` (the right-aligned author of a verse: ``G.J.``),
  ``editorial_bracket`` (``[sic]``); verses are kept, one record per stanza;
* doc-debian and the dedications of debian-history (plain text): ``heading``
  (underlined, all-caps, numbered or unpunctuated one-line titles, and the
  title line of a list item), ``separator`` (lines of ``=``/``-``/``_``),
  ``code_block`` (blocks indented deeper than the text that are not long prose
  lines), ``field_label`` (``Description :``), ``list_marker``, ``signature``
  (after a ``--`` line);
* debian-history HTML and gnome-devel-docs: as the builder's DocBook and
  Mallard readers (``code_block``, ``table``, ``heading``, ``navigation``,
  ``toc``, ``license``...).

Files not read are counted by reason (``other_language``, ``old_version``,
``other_format``, ``not_a_page``...).  Output is deterministic: files are read in
sorted order and nothing depends on the clock.

The Bible and GNOME's help are read here; the dictionaries in ``texts_dictd``, Debian's texts in
``texts_debian``.
"""

from __future__ import annotations

import os
import re
import struct
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally
from benchmarks.tools.base_corpus.sources import extract_mallard_help, require_dir
from benchmarks.tools.base_corpus.texts_debian import extract_debian_history, extract_doc_debian
from benchmarks.tools.base_corpus.texts_dictd import extract_devil, extract_foldoc
from keyboard_lm.errors import DataError

# --------------------------------------------------------------------------------------------------------------
# bible-kjv-text

#: The book abbreviations of ``bible.data`` (in Bible order) -> the book's name.
KJV_BOOKS = {
    "Ge": "Genesis", "Exo": "Exodus", "Lev": "Leviticus", "Num": "Numbers", "Deu": "Deuteronomy",
    "Josh": "Joshua", "Jdgs": "Judges", "Ruth": "Ruth", "1Sm": "1 Samuel", "2Sm": "2 Samuel", "1Ki": "1 Kings",
    "2Ki": "2 Kings", "1Chr": "1 Chronicles", "2Chr": "2 Chronicles", "Ezra": "Ezra", "Neh": "Nehemiah",
    "Est": "Esther", "Job": "Job", "Psa": "Psalms", "Prv": "Proverbs", "Eccl": "Ecclesiastes",
    "SSol": "Song of Solomon", "Isa": "Isaiah", "Jer": "Jeremiah", "Lam": "Lamentations", "Eze": "Ezekiel",
    "Dan": "Daniel", "Hos": "Hosea", "Joel": "Joel", "Amos": "Amos", "Obad": "Obadiah", "Jonah": "Jonah",
    "Mic": "Micah", "Nahum": "Nahum", "Hab": "Habakkuk", "Zep": "Zephaniah", "Hag": "Haggai", "Zec": "Zechariah",
    "Mal": "Malachi", "Mat": "Matthew", "Mark": "Mark", "Luke": "Luke", "John": "John", "Acts": "Acts",
    "Rom": "Romans", "1Cor": "1 Corinthians", "2Cor": "2 Corinthians", "Gal": "Galatians", "Eph": "Ephesians",
    "Phi": "Philippians", "Col": "Colossians", "1Th": "1 Thessalonians", "2Th": "2 Thessalonians",
    "1Tim": "1 Timothy", "2Tim": "2 Timothy", "Titus": "Titus", "Phmn": "Philemon", "Heb": "Hebrews",
    "Jas": "James", "1Pet": "1 Peter", "2Pet": "2 Peter", "1Jn": "1 John", "2Jn": "2 John", "3Jn": "3 John",
    "Jude": "Jude", "Rev": "Revelation"}

_BIBLE_MAGIC = b"EC02"
_BIBLE_HEADER = 0x50  # the magic string, NUL-padded; then >III (0, block size, block count) and the offsets
_VERSE = re.compile(r"([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)")


def unlzw(data: bytes, maxbits: int = 16) -> bytes:
    """Decode one block-mode LZW code stream of compress(1) (``.Z`` without its 3-byte header).

    Codes are 9 to ``maxbits`` bits, least significant bit first; code 256
    clears the table.  compress writes codes in groups of 8, so when the code
    width changes (or the table is cleared) the rest of the current group of
    ``n_bits`` bytes is padding and skipped.
    """
    data = bytes(data) + b"\0\0\0"
    total = (len(data) - 3) * 8
    table = [bytes((i,)) for i in range(256)] + [b""]
    out = bytearray()
    n_bits, maxcode, maxmax = 9, 511, 1 << maxbits
    bitpos = group = 0
    prev = None
    while bitpos + n_bits <= total:
        if len(table) > maxcode and n_bits < maxbits:
            bitpos += -(bitpos - group) % (n_bits * 8)
            group = bitpos
            n_bits += 1
            maxcode = maxmax if n_bits == maxbits else (1 << n_bits) - 1
            continue
        b = bitpos >> 3
        code = (int.from_bytes(data[b:b + 3], "little") >> (bitpos & 7)) & ((1 << n_bits) - 1)
        bitpos += n_bits
        if code == 256:
            bitpos += -(bitpos - group) % (n_bits * 8)
            group = bitpos
            del table[257:]
            n_bits, maxcode, prev = 9, 511, None
            continue
        if prev is None or code < len(table):
            if code >= len(table):
                raise ValueError(f"LZW code {code} before any table entry")
            entry = table[code]
        elif code == len(table):
            entry = prev + prev[:1]
        else:
            raise ValueError(f"bad LZW code {code} at bit {bitpos - n_bits}")
        out += entry
        if prev is not None and len(table) < maxmax:
            table.append(prev + entry[:1])
        prev = entry
    return bytes(out)


def read_bible_data(path: str) -> str:
    """The text of a ``bible.data`` file of the ``bible`` program (bible-kjv): one verse a line.

    The file is ``EC02Compressed Data File`` (NUL-padded to 0x50 bytes), three
    big-endian 32-bit numbers (0, the block size, the block count N), N+1
    offsets, a 3-byte ``.Z`` header (``1f 9d``, flags) and N LZW streams
    (``unlzw``), block i from offset i to offset i+1, each decoding to one block
    of text (the last one shorter).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    if not data.startswith(_BIBLE_MAGIC) or len(data) < _BIBLE_HEADER + 12:
        raise DataError(f"{path}: not a bible.data file (no {_BIBLE_MAGIC.decode()} magic)")
    _, block_size, count = struct.unpack_from(">III", data, _BIBLE_HEADER)
    table_end = _BIBLE_HEADER + 12 + 4 * (count + 1)
    if not 0 < count < 10000 or table_end + 3 > len(data):
        raise DataError(f"{path}: bad block count {count}")
    offsets = struct.unpack_from(f">{count + 1}I", data, _BIBLE_HEADER + 12)
    flags = data[table_end + 2]
    if data[table_end:table_end + 2] != b"\x1f\x9d" or offsets[0] != table_end + 3 or not flags & 0x80 \
            or offsets[-1] != len(data) or list(offsets) != sorted(offsets):
        raise DataError(f"{path}: unexpected block table (not the EC02 layout this reader knows)")
    blocks = []
    for i in range(count):
        try:
            block = unlzw(data[offsets[i]:offsets[i + 1]], flags & 0x1f)
        except ValueError as e:
            raise DataError(f"{path}: block {i}: {e}") from None
        if len(block) != block_size and i < count - 1 or len(block) > block_size:
            raise DataError(f"{path}: block {i} decodes to {len(block)} bytes, not {block_size}")
        blocks.append(block)
    return b"".join(blocks).decode("utf-8", errors="replace")


def extract_bible_kjv(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The King James Bible of ``bible-kjv-text``: one record per verse, one document per chapter.

    ``usr/lib/bible.data`` is decoded (``read_bible_data``); each line is a verse
    ``Ge1:1 In the beginning...``, whose reference goes (the document id
    ``bible-kjv-text/Genesis/1`` keeps it).  The first line, the text's title,
    is dropped as ``front_matter``; the concordance ``bible.data.conc`` is not
    read.  Verses repeated word for word (``And the LORD spake unto Moses,
    saying,``) are kept once.
    """
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/lib"), "bible-kjv-text data")
    path = os.path.join(base, "bible.data")
    if not os.path.isfile(path):
        raise DataError(f"{path}: not found (bible-kjv-text data)")
    text = read_bible_data(path)
    tally.files_read += 1
    tally.skip_file("concordance", int(os.path.isfile(path + ".conc")))
    keeper = Keeper(tally)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        m = _VERSE.fullmatch(line)
        if not m:
            if number == 1:
                tally.drop("front_matter", line)
                continue
            raise DataError(f"{path}: line {number} is not a verse: {line[:60]!r}")
        book = KJV_BOOKS.get(m.group(1))
        if book is None:
            raise DataError(f"{path}: line {number}: unknown book {m.group(1)!r}")
        kept = keeper.keep(m.group(4))
        if kept:
            yield f"bible-kjv-text/{book}/{int(m.group(2))}", kept


# --------------------------------------------------------------------------------------------------------------
# gnome-devel-docs

def extract_gnome_devel_docs(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """GNOME developer help (``usr/share/help/C/*/*.page``): the English Mallard pages of every guide.

    Read like gnome-user-docs (the builder's Mallard reader: empty links get
    their target's title, ``<if:when>`` variants dropped, code listings,
    screens, tables, titles and ``<info>`` dropped).  Most of
    ``gnome-devel-demos`` is program listings: only its prose stays.  Not read:
    other languages, figures and example sources, and the DocBook (not
    Mallard) ``accessibility-devel-guide``.
    """

    def other_file(guide: str, name: str) -> str:
        if name.endswith((".docbook", ".xml")) and not name.startswith(("legal", "cc-by")):
            return "docbook_not_mallard" if guide == "accessibility-devel-guide" else "not_a_page"
        return "not_a_page"

    return extract_mallard_help(root, "gnome-devel-docs", tally if tally is not None else Tally(), other_file)


SOURCES = (
    ("bible-kjv-text", extract_bible_kjv),
    ("dict-foldoc", extract_foldoc),
    ("dict-devil", extract_devil),
    ("doc-debian", extract_doc_debian),
    ("debian-history", extract_debian_history),
    ("gnome-devel-docs", extract_gnome_devel_docs),
)

"""More English prose for the base corpus: the Bible, two dictd dictionaries, Debian's own texts, GNOME developer help.

Extractors in the style of ``benchmarks.base_corpus.builder`` (same ``Record``,
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
"""

from __future__ import annotations

import collections
import gzip
import os
import re
import struct
from typing import Iterator

from benchmarks.base_corpus.prose import (Keeper, Record, Tally, clean_whitespace, docbook_rule, emit_pieces,
                                          prose_verdict)
from benchmarks.base_corpus.sources import (dictd_entries, extract_mallard_help, html_documents, read_text,
                                            require_dir)
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
# dictd: shared

def _dictd_header(entry: str) -> bool:
    """A dictd database header entry (``00-database-*``, its URL, the info text, the alphabet)."""
    first = entry.strip("\n").split("\n")[0]
    return (first.startswith("00-database") or first.startswith("00database") or bool(re.match(r"https?://", first))
            or first.startswith("The original data is available from:")
            or (entry.strip("\n").count("\n") == 0 and first[:1].isspace()))


def _dictd_source(root: str, name: str, package: str, parse, tally: Tally | None) -> Iterator[Record]:
    """Like the builder's ``_extract_dictd``, but ``parse`` returns [(document, text), ...] per entry."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/dictd"), f"{package} dictd database")
    keeper = Keeper(tally)
    for entry in dictd_entries(base, name, tally):
        for doc, text in parse(entry, tally):
            kept = keeper.keep(text)
            if kept:
                yield f"{package}/{doc}", kept


_URL = re.compile(r"(?:https?|ftp)://[^\s{}()<>\"]*[^\s{}()<>\".,;:!?'\"]|\bwww\.[a-z0-9-]+\.[^\s{}()<>\"]*[a-z0-9/]")
_EMAIL = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")


def _drop_urls(text: str, tally: Tally) -> str:
    """Remove URLs and e-mail addresses from a sentence (counted), and the brackets left empty."""
    for m in _URL.finditer(text):
        tally.drop("url", m.group(0))
    text = _URL.sub("", text)
    for m in _EMAIL.finditer(text):
        tally.drop("email", m.group(0))
    text = _EMAIL.sub("", text)
    text = re.sub(r"\(\s*\)|\[\s*\]|<\s*>", "", text)
    return re.sub(r"\s+([,.;:!?)])", r"\1", text)


# ---- FOLDOC

_FOLDOC_LABEL = re.compile(r"^<([^<>]*)>\s*")
_FOLDOC_PRONUNCIATION = re.compile(r"^/[^/\s][^/]*/(?=[\s,.;)]|$)(?:\s*(?:,|or)\s*/[^/\s][^/]*/(?=[\s,.;)]|$))*\s*")
_FOLDOC_SENSE = re.compile(r"^\d{1,2}\.\s+")
_FOLDOC_LEADING_PAREN = re.compile(r"^\((?:[^()]|\([^()]*\))*\)\s+(?=[A-Z\"])")
_FOLDOC_CONTACT = re.compile(r"^(?:E-?mail|Address|Tel|Telephone|Phone|Fax|Contact|Mail)\s*:", re.I)
_INLINE_BRACKET = re.compile(r"\s*\[[^\[\]{}]*\]")
_FOLDOC_DATE = re.compile(r"\(\d{4}-\d{2}-\d{2}\)")
_FOLDOC_BRACE = re.compile(r"\{([^{}]*)\}")
_FOLDOC_SEE = re.compile(r"(?:^|(?<=[.!?]\s))\s*\(?See(?: also)?:?\s+(?:\{[^{}]*\}[\s,;]*(?:and\s+|or\s+)?)+\.?\)?\s*$")
_ONLY_LINKS = re.compile(r"^\(?(?:See(?: also)?:?\s*)?(?:\{[^{}]*\}[\s,.;:]*(?:and\s+|or\s+)?)+\)?\.?$")


def _strip_inline_brackets(text: str, tally: Tally) -> str:
    """``[Cambridge] Yet...`` / ``... used in ["Nonpareil...", B. Higman, 1968].``: usage tags and citations out."""
    def one(m: re.Match) -> str:
        tally.drop("usage_label" if m.start() == 0 else "citation", m.group(0))
        return ""
    return _INLINE_BRACKET.sub(one, text).strip()


def _foldoc_text(text: str, tally: Tally) -> str:
    """A FOLDOC paragraph as prose: links and URLs out of braces, trailing "See also" gone."""
    m = _FOLDOC_SEE.search(text)
    if m:
        tally.drop("cross_reference", m.group(0))
        text = text[:m.start()]

    def link(m: re.Match) -> str:
        inner = m.group(1).strip()
        url = re.search(r"\s*\(([^()]*)\)$", inner)
        if url and (_URL.fullmatch(url.group(1).strip()) or re.fullmatch(r"[\w./#-]+\.html?(#\S*)?", url.group(1))):
            tally.drop("url", url.group(1))
            inner = inner[:url.start()]
        return inner

    text = _FOLDOC_BRACE.sub(link, text)
    text = re.sub(r"__([^_]+)__", r"\1", text)
    return clean_whitespace(_drop_urls(text, tally))


def foldoc_records(entry: str, tally: Tally) -> list[tuple[str, str]]:
    """[(headword, paragraph), ...] of one FOLDOC entry.

    The headword lines (up to the first blank line) are dropped, then per
    paragraph: a leading ``<subject label>`` and ``/pronunciation/``, paragraphs
    that are a bracketed source or citation (``[{Jargon File}]``), the
    ``(1997-03-14)`` date of the last update, paragraphs that are only
    cross-references or links and trailing ``See also {x}.`` sentences; URLs go
    from the text, ``{cross reference}`` braces go (``{text (url)}`` keeps the
    text).  A paragraph indented deeper than the body is kept only when its
    lines are long and it reads as prose (``code_block``).  Database headers
    are ``license``, ``<introduction>`` entries ``front_matter``.
    """
    if not entry.strip():
        return []
    if _dictd_header(entry):
        tally.drop("license", entry)
        return []
    lines = entry.strip("\n").expandtabs(8).split("\n")
    i = 0
    while i < len(lines) and lines[i].strip():
        i += 1
    headword = clean_whitespace(lines[0]).replace("/", "∕") or "?"
    tally.drop("headword", "\n".join(lines[:i]))
    body = "\n".join(lines[i:])
    if _FOLDOC_LABEL.match(body.strip()) and _FOLDOC_LABEL.match(body.strip()).group(1) == "introduction":
        tally.drop("front_matter", body)
        return []
    records = []
    first = True
    for para in re.split(r"\n\s*\n", body):
        para_lines = [line for line in para.split("\n") if line.strip()]
        if not para_lines:
            continue
        indent = min(len(line) - len(line.lstrip(" ")) for line in para_lines)
        text = clean_whitespace(" ".join(para_lines))
        m = _FOLDOC_SENSE.match(text)
        if m:  # "2. <label> ..." opens each sense of a word with several
            tally.drop("sense_label", m.group(0))
            text = text[m.end():]
        m = _FOLDOC_LABEL.match(text)
        if m:
            tally.drop("usage_label", m.group(0))
            text = text[m.end():]
        if first or m:
            m = _FOLDOC_PRONUNCIATION.match(text)
            if m:
                tally.drop("pronunciation", m.group(0))
                text = text[m.end():]
            m = _FOLDOC_LEADING_PAREN.match(text)
            if m:  # "(DBMS) A suite of...", "(From the Greek ...) An ancient method..."
                tally.drop("abbreviation_etymology", m.group(0))
                text = text[m.end():]
        first = False
        if _FOLDOC_CONTACT.match(text):
            tally.drop("contact_details", text)
            continue
        if not text:
            continue
        if _FOLDOC_DATE.fullmatch(text):
            tally.drop("date_stamp", text)
            continue
        if text.startswith("[") and text.rstrip(".").endswith("]"):
            tally.drop("source_tag" if re.fullmatch(r"\[(?:\{[^{}]*\}[\s,;]*(?:and\s+)?)+\]\.?", text) else "citation",
                       text)
            continue
        if _ONLY_LINKS.fullmatch(text):
            tally.drop("cross_reference", text)
            continue
        if indent > 3:  # the body is indented 3
            long_lines = sum(len(line.strip()) for line in para_lines) / len(para_lines) >= 40
            if not long_lines or prose_verdict(text):
                tally.drop("code_block", text)
                continue
        text = _strip_inline_brackets(text, tally)
        text = _foldoc_text(text, tally)
        if text:
            records.append((headword, text))
    return records


def extract_foldoc(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Free On-line Dictionary of Computing: the prose paragraphs of every definition (see ``foldoc_records``)."""
    return _dictd_source(root, "foldoc", "dict-foldoc", foldoc_records, tally)


# ---- The Devil's Dictionary

#: ``ABASEMENT, n.``, ``BABE or BABY, n.``, ``TZETZE (or TSETSE) FLY, n.``, ``CUI BONO?  [Latin]``, ``R.I.P.``
_DEVIL_HEAD = re.compile(
    r"^(?P<hw>[A-Z][A-Z'.\-]*(?:,?\s(?:or\s|\(or\s)?[A-Z][A-Z'.\-]+\)?)*\??)"
    r"(?P<pos>,?\s*(?:[a-z]{1,4}\.)+)?(?P<tag>\s*\[[A-Z][a-z]+\])?(?=\s|$)")
_ITALIC = re.compile(r"(?<![\w_])_([^_]+?)_(?![\w_])")
#: A verse's author is right-aligned: a paragraph's last line starting this far in.
_DEVIL_ATTRIBUTION_COLUMN = 30


def _devil_paragraphs(body: str, tally: Tally) -> list[str]:
    """Paragraphs (prose or one stanza each) of a Devil's Dictionary text, without attributions and ``[sic]``."""
    out = []
    for para in re.split(r"\n\s*\n", body):
        lines = [line.rstrip() for line in para.split("\n") if line.strip()]
        if lines and len(lines[-1]) - len(lines[-1].lstrip()) >= _DEVIL_ATTRIBUTION_COLUMN:
            tally.drop("attribution", lines.pop())
        # a prose paragraph (starting in column 0) goes on as a new one at a line indented 4 (the preface)
        groups: list[list[str]] = []
        for line in lines:
            starts = not groups or (not groups[-1][-1].startswith(" ") and line.startswith("    ")
                                    and not line.startswith("     "))
            if starts:
                groups.append([line])
            else:
                groups[-1].append(line)
        for group in groups:
            text = clean_whitespace(" ".join(group))
            for m in re.finditer(r"\s*\[sic\]", text):
                tally.drop("editorial_bracket", m.group(0))
            text = re.sub(r"\s*\[sic\]", "", text)
            text = _ITALIC.sub(r"\1", text)
            if text:
                out.append(text)
    return out


def devil_records(entry: str, tally: Tally) -> list[tuple[str, str]]:
    """[(headword, paragraph or stanza), ...] of one entry of The Devil's Dictionary.

    The headword, part of speech and ``[Latin]`` tag opening the entry are
    dropped (one-letter entries, ``I is the first letter...``, read as a sentence
    and stay whole); the definition's paragraphs are kept, and each stanza of a
    verse quotation is one record (its lines joined), without the right-aligned
    attribution (``G.J.``).  ``_italics_`` lose their underscores; ``[sic]`` goes.
    Of the database header entries only Bierce's preface is kept (document
    ``PREFACE``); the rest (title page, dictd notices) is ``license``.
    """
    if not entry.strip():
        return []
    if _dictd_header(entry):
        text = entry.strip("\n")
        m = re.search(r"^\s*PREFACE\s*$", text, re.M)
        if not m:
            tally.drop("license", entry)
            return []
        tally.drop("license", text[:m.end()])
        return [("PREFACE", p) for p in _devil_paragraphs(text[m.end():], tally)]
    text = entry.strip("\n")
    first = text.split("\n")[0]
    m = _DEVIL_HEAD.match(text)
    if re.match(r"^[A-Z]\b(?![.'])", first) or not m:  # "I is the first letter ...", "T, the twentieth letter ..."
        headword = first.split()[0].strip(",.")
    else:
        headword = clean_whitespace(m.group("hw")).rstrip(".?")
        tally.drop("headword", m.group("hw") + (m.group("pos") or ""))
        if m.group("tag"):
            tally.drop("usage_label", m.group("tag"))
        text = text[m.end():].lstrip(" ")
    headword = headword.replace("/", "∕") or "?"
    return [(headword, p) for p in _devil_paragraphs(text, tally)]


def extract_devil(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Devil's Dictionary (Ambrose Bierce): definitions, their verses, and the preface (see ``devil_records``)."""
    return _dictd_source(root, "devil", "dict-devil", devil_records, tally)


# --------------------------------------------------------------------------------------------------------------
# Plain text documents (doc-debian, the debian-history dedications)

_SEPARATOR = re.compile(r"^\s*([=\-_*~#+^])\1{2,}\s*$")
_LIST_MARK = re.compile(r"^(\s*)(?:\d+(?:\.\d+)*\.|\(?[0-9a-z]\)|[*•+-])\s+(?=\S)")
_FIELD = re.compile(r"^\s{4,}[A-Z][A-Za-z]*\s*:\s")
#: A line ending in one of these words goes on (into a list or an example): not a title.
_RUNS_ON = frozenset("a an the to of for and or with in on at by from your our their is are be as that".split())
_SENTENCE_END = tuple(".!?:;,\"')”’")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def plaintext_paragraphs(text: str) -> list[tuple[str | None, str]]:
    """(drop reason or None, paragraph text) of a hard-wrapped plain-text document, in order.

    Blocks are runs of lines between blank lines, also split where a list item
    (``1.``, ``*``, ``(a)``) or a ``Field :`` line starts, or where the
    indentation changes (after a hanging first line).  Wrapped lines are
    joined.  Dropped: a line underlined (or a run of ``===``) as ``heading`` /
    ``separator``; a one-line block without closing punctuation, or in capitals,
    as ``heading``; the first line of a list item that is a short unpunctuated
    title followed by its text (``1. Free Redistribution``) as ``heading``;
    blocks indented more than 3 columns deeper than the document's usual
    indentation that are not punctuated prose as ``code_block``;
    ``Field :`` labels as ``field_label``, list markers as ``list_marker``;
    everything after a ``--`` signature line as ``signature``.
    """
    lines = [line.rstrip() for line in text.expandtabs(8).split("\n")]
    pieces: list[tuple[str | None, str]] = []
    signature = ""
    for i, line in enumerate(lines):  # "--" or "-- Name" near the end: a signature
        if re.fullmatch(r"--(?: \S.*)?", line.strip()) and sum(1 for x in lines[i + 1:] if x.strip()) <= 3:
            signature = "\n".join(lines[i:])
            lines = lines[:i]
            break
    width = max((len(line) for line in lines), default=0)
    indents = collections.Counter(_indent(line) for line in lines if line.strip() and not _LIST_MARK.match(line))
    base = indents.most_common(1)[0][0] if indents else 0

    blocks: list[dict] = []
    cur: dict | None = None

    def close():
        nonlocal cur
        if cur is not None:
            blocks.append(cur)
        cur = None

    for line in lines:
        if not line.strip():
            close()
            continue
        if _SEPARATOR.match(line):
            if cur is not None and len(cur["lines"]) == 1 and not cur["list"]:
                cur["heading"] = True
                cur["underline"] = line
                close()
            else:
                close()
                blocks.append({"lines": [line], "separator": True})
            continue
        m = _LIST_MARK.match(line)
        ind = _indent(line)
        if m or _FIELD.match(line):
            close()
            cur = {"lines": [line], "list": bool(m), "field": not m, "cont": len(m.group(0)) if m else None}
            continue
        if cur is not None:
            n = len(cur["lines"])
            if n == 1:
                first = _indent(cur["lines"][0])
                if cur["list"]:
                    ok = ind >= cur["cont"] - 1
                elif cur["field"]:
                    ok = ind > first
                else:
                    ok = ind <= first + 1
            else:
                ok = abs(ind - _indent(cur["lines"][1])) <= 1
            if ok:
                cur["lines"].append(line)
                continue
            close()
        cur = {"lines": [line], "list": False, "field": False, "cont": None}
    close()

    for block in blocks:
        blines = block["lines"]
        if block.get("separator"):
            pieces.append(("separator", blines[0]))
            continue
        if block.get("heading"):
            pieces.append(("heading", "\n".join(blines + [block["underline"]])))
            continue
        if block["field"]:
            label = re.match(r"^\s*[A-Z][A-Za-z]*\s*:", blines[0]).group(0)
            pieces.append(("field_label", label))
            blines = [blines[0][len(label):]] + blines[1:]
        if block["list"]:
            m = _LIST_MARK.match(blines[0])
            pieces.append(("list_marker", m.group(0)))
            head = blines[0][m.end():].strip()
            next_word = blines[1].split()[0] if len(blines) > 1 else ""
            # a title: its line ends although the next line's first word would have fitted on it
            if next_word and len(blines[0]) + 1 + len(next_word) <= width and not head.endswith(_SENTENCE_END) \
                    and next_word[:1].isupper():
                pieces.append(("heading", head))
                blines = blines[1:]
            else:
                blines = [" " * m.end() + blines[0][m.end():]] + blines[1:]
        joined = clean_whitespace(" ".join(blines))
        if not joined:
            continue
        letters = [c for c in joined if c.isalpha()]
        if len(blines) == 1 and not block["list"] and not block["field"] and prose_verdict(joined) is None and (
                not joined.endswith(_SENTENCE_END) and joined.split()[-1].lower() not in _RUNS_ON
                or (len(letters) > 1 and all(c.isupper() for c in letters))):
            pieces.append(("heading", joined))
            continue
        deep = min(_indent(line) for line in blines) > base + 3
        if deep and not block["list"] and not block["field"] and (
                prose_verdict(joined) or not joined.endswith((".", "!", "?", ":", ")", '"'))):
            pieces.append(("code_block", joined))  # an example, a command, an indented URL
            continue
        pieces.append((None, joined))
    if signature:
        pieces.append(("signature", signature))
    return pieces


def _read_maybe_gzip(path: str) -> str:
    if path.endswith(".gz"):
        try:
            with gzip.open(path) as f:
                return f.read().decode("utf-8", errors="replace")
        except (OSError, EOFError) as e:
            raise DataError(f"{path}: cannot read as gzip: {e}") from None
    return read_text(path)


def _count_files(path: str) -> int:
    return sum(len(f) for _, _, f in os.walk(path))


#: doc-debian files that are not read, and why.
_DOC_DEBIAN_SKIP = {"debian-manifesto.gz": "same_text_in_debian_history"}


def extract_doc_debian(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """Debian's own documents (``usr/share/doc/debian``): social contract, constitution, bug tracking docs...

    Plain text, read with ``plaintext_paragraphs`` (paragraphs rewrapped;
    headings, separators, indented examples, field labels and list markers
    dropped).  Not read: the superseded versions (``constitution.1.2.txt.gz``,
    ``old_version``), the manifesto (the same text is read as the
    ``manifesto`` chapter of debian-history), and the package's own files
    (``usr/share/doc/doc-debian``: copyright, changelog, TODO; doc-base
    registrations).  One document per file: ``doc-debian/constitution``.
    """
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/doc/debian"), "doc-debian documents")
    for other in ("usr/share/doc/doc-debian", "usr/share/doc-base"):
        tally.skip_file("package_metadata", _count_files(os.path.join(root, other)))
    keeper = Keeper(tally)
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if not os.path.isfile(path):
            tally.skip_file("not_a_file")
            continue
        if name in _DOC_DEBIAN_SKIP:
            tally.skip_file(_DOC_DEBIAN_SKIP[name])
            continue
        if re.search(r"\.\d+\.\d+\.txt(?:\.gz)?$", name):
            tally.skip_file("old_version")
            continue
        if not re.search(r"\.txt(?:\.gz)?$", name):
            tally.skip_file("not_text")
            continue
        text = _read_maybe_gzip(path)
        tally.files_read += 1
        doc = "doc-debian/" + re.sub(r"\.txt(?:\.gz)?$", "", name)
        yield from emit_pieces(doc, plaintext_paragraphs(text), keeper, tally)


# --------------------------------------------------------------------------------------------------------------
# debian-history

_DEDICATION = re.compile(r"dedication-(\d+(?:\.\d+)*)(?:\.([A-Za-z_]+))?\.(txt|tar\.gz)")


def extract_debian_history(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """A Brief History of Debian: the English DocBook HTML chapters, then the English release dedications.

    ``docs/*.en.html`` are read with the builder's DocBook rule (navigation,
    table of contents, headings, screens, tables, legal notice dropped); one
    document per chapter (``debian-history/intro``).  ``dedication/dedication-
    X.Y.txt`` (the untranslated ones) are plain text (``plaintext_paragraphs``),
    one document each (``debian-history/dedication-9.0``).  Not read: other
    languages, the same book as PDF, EPUB and text, images and CSS, signature
    archives, and the constitution, social contract and manifesto copies at the
    top (read from doc-debian and as the ``manifesto`` chapter).
    """
    tally = tally if tally is not None else Tally()
    top = require_dir(os.path.join(root, "usr/share/doc/debian-history"), "debian-history documents")
    docs = require_dir(os.path.join(top, "docs"), "debian-history HTML")
    files = []
    for dirpath, dirnames, filenames in os.walk(docs):
        dirnames.sort()
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), docs)
            m = re.fullmatch(r"([\w-]+)\.([A-Za-z_]+)\.(html|pdf|epub|txt\.gz)", rel)
            if not m:
                tally.skip_file("not_text")
            elif m.group(2) != "en":
                tally.skip_file("other_language")
            elif m.group(3) != "html":
                tally.skip_file("other_format")
            else:
                files.append((f"debian-history/{m.group(1)}", os.path.join(dirpath, name)))
    if not files:
        raise DataError(f"{docs}: no *.en.html files (debian-history)")
    files.sort()
    dedications = []
    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if name == "docs":
            continue
        if name == "dedication" and os.path.isdir(path):
            for dname in sorted(os.listdir(path)):
                m = _DEDICATION.fullmatch(dname)
                if not m or m.group(3) != "txt":
                    tally.skip_file("not_text")
                elif m.group(2):
                    tally.skip_file("other_language")
                else:
                    dedications.append((f"debian-history/dedication-{m.group(1)}", os.path.join(path, dname)))
        elif name in ("copyright",):
            tally.skip_file("license")
        elif name.startswith("changelog"):
            tally.skip_file("package_metadata")
        elif os.path.isfile(path):
            tally.skip_file("same_text_elsewhere")  # constitution, social contract (doc-debian), manifesto
        else:
            tally.skip_file("not_text", _count_files(path))
    yield from html_documents(files, docbook_rule, None, tally)
    keeper = Keeper(tally)  # the HTML part dedupes on its own; the dedications share nothing with it
    for doc, path in dedications:
        text = read_text(path)
        tally.files_read += 1
        yield from emit_pieces(doc, plaintext_paragraphs(text), keeper, tally)


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

"""The two dictd dictionaries of the base corpus: FOLDOC (dict-foldoc) and Bierce's Devil's Dictionary (dict-devil).

See ``texts`` for what each source reads and what is dropped, by reason.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally, clean_whitespace, prose_verdict
from benchmarks.tools.base_corpus.dictd import dictd_entries
from benchmarks.tools.base_corpus.sources import require_dir

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

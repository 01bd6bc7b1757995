"""dictd dictionaries in the base corpus: the database format (``dictd_entries``), GCIDE (dict-gcide) and the
Jargon File (dict-jargon).

Readers in the style of ``sources``: each takes the extracted package root and yields (document id, text);
``texts_dictd`` reads two more dictd databases (FOLDOC, the Devil's Dictionary).
"""

from __future__ import annotations

import gzip
import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Record, Tally, clean_whitespace, prose_verdict
from benchmarks.tools.base_corpus.sources import require_dir
from keyboard_lm.errors import DataError


# ---- dictd databases

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def _b64_number(s: str) -> int:
    n = 0
    for ch in s:
        if ch not in _B64:
            raise ValueError(ch)
        n = n * 64 + _B64[ch]
    return n


def dictd_entries(base: str, name: str, tally: Tally) -> Iterator[str]:
    """The entries of a dictd database ``base/name.index`` + ``name.dict.dz``, in file order, each once.

    The index names several headwords for one entry (its run-on forms); each
    (offset, length) is read once.  The ``.dict.dz`` is read with gzip.
    """
    index, data_path = os.path.join(base, f"{name}.index"), os.path.join(base, f"{name}.dict.dz")
    for p in (index, data_path):
        if not os.path.isfile(p):
            raise DataError(f"{p}: not found (dictd database {name})")
    spans = set()
    with open(index, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            fields = line.rstrip("\n").split("\t")
            try:
                spans.add((_b64_number(fields[1]), _b64_number(fields[2])))
            except (IndexError, ValueError):
                raise DataError(f"{index}:{number}: not a dictd index line") from None
    try:
        with gzip.open(data_path) as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{data_path}: cannot read as gzip: {e}") from None
    tally.files_read += 2
    for offset, length in sorted(spans):
        if offset + length > len(data):
            raise DataError(f"{index}: entry at {offset}+{length} is past the end of {data_path}")
        raw = data[offset:offset + length]
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:  # a few GCIDE entries have Windows-1252 bytes
            yield raw.decode("cp1252", errors="replace")


_BRACKET_LINE = re.compile(r"^\s*\[[^\]]*\]\s*$")
_LEADING_LABELS = re.compile(r"^(?:\d+\.|\([a-z]\)|\((?:[A-Z][\w.&]*,?\s?)+\))(?:\s+|$)")
_RUN_ON = re.compile(r"--\s*\{[^}]*\},?\s*(?:(?:[a-z]{1,4}\.\s?){1,3}(?:&\s*(?:[a-z]{1,4}\.\s?){1,3})?)?")
#: ``--Author.`` after a quotation, up to the end of the line or a new quotation's opening quote.
_ATTRIBUTION = re.compile(r'(?:^|\s)--(?=[A-Z])(?:(?!\s--)[^"\n])*')
#: A line in the right-hand column where attributions continue (``--Sir W.`` / ``Scott.``).
_ATTRIBUTION_COLUMN = 30
_LABEL_LINE = re.compile(r"\s*(?:(?:\[[^\]]*\]|\([^()]*\))\s*)+")
#: A pronunciation left in the body, "(-[i^]*kal)" with the bracketed marks already gone: "(-*kal)".
_PRONUNCIATION = re.compile(r"\s*\([^()]*[*`][^()]*\)")
_EMBEDDED_HEADER = re.compile(r"(?:\b[\w'-]+\s)?\\[^\\\n]+\\,?(?:\s*[a-z]{1,5}\.)*")
_SECOND_HEADER = re.compile(r"^\s*\([^()]*[`\"*?][^()]*\),?\s*(?:[a-z]{1,5}\.\s*)*(?:\([A-Z][\w. ]*\)\s*)?")
_SOURCE_TAG = re.compile(r"Webster|WordNet|PJC|Suppl|Century|Chambers|Wikipedia|CIDE")
_STRAY_HEADWORD = re.compile(r"^(\s*\[[^\]]*(?:Webster|WordNet|PJC|Suppl)[^\]]*\])\s+(\S.*)$")
_INFLECTION_STUB = re.compile(
    r"^(?:(?:a|n|v|adv|imp|p|pr|vb|pl|t|i|superl|compar|pret|pp)\.\s*(?:&\s*)?)+(?:from|of)\b")
_GCIDE_MARKS = re.compile(r"[*\"`']")


def _strip_brackets(text: str, tally: Tally, reason: str) -> str:
    """Remove ``[...]`` spans (nested ones too), counting them."""
    out, depth, span = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        if depth:
            span.append(ch)
        else:
            out.append(ch)
        if ch == "]" and depth:
            depth -= 1
            if not depth:
                tally.drop(reason, "".join(span))
                span = []
    if span:  # unbalanced: keep the rest
        out.extend(span)
    return "".join(out)


def _unbrace(text: str) -> str:
    """``{Un*wor"thi*ly}`` -> ``Unworthily``: braces off, GCIDE syllable and accent marks off inside them."""
    return re.sub(r"\{([^{}]*)\}", lambda m: _GCIDE_MARKS.sub("", m.group(1)) if "*" in m.group(1) or "\"" in
                  m.group(1) else m.group(1), text)


def gcide_records(entry: str, tally: Tally) -> tuple[str, list[str]] | None:
    """(headword, [definition or quotation, ...]) of one GCIDE entry.

    The header (headword, ``\\pro*nun"ci*a*tion\\``, part of speech and the
    bracketed etymology, which may run over several lines) is dropped; so are
    source tags (``[1913 Webster]``) and other bracketed editorial notes,
    ``Syn:`` lists, run-on derived forms (``-- {Un*wor"thi*ly}, adv.``) and the
    ``--Author.`` attributions of quotations.  Each numbered sense, note and
    quotation becomes one record; sense numbers and field labels (``(Bot.)``)
    go.
    """
    lines = entry.strip("\n").split("\n")
    first = lines[0]
    headword = clean_whitespace(_GCIDE_MARKS.sub("", first.split("\\", 1)[0])) or first.split()[0]
    if headword.startswith("00-database") or headword.startswith("00-"):
        tally.drop("license", entry)
        return None
    # The header: the first line, continued while a [ is open or a line starts in column 0 (more headwords:
    # 'Aaronic \Aa*ron"ic\, Aaronical' / '\Aa*ron"ic*al\, a.'), then lines that are only (Labels.).
    header = [first]

    def depth_of(line):
        return line.count("[") - line.count("]") + line.count("(") - line.count(")")

    depth = depth_of(first)
    i = 1
    while i < len(lines) and lines[i].strip() and (depth > 0 or not lines[i][0].isspace()):
        header.append(lines[i])
        depth += depth_of(lines[i])
        i += 1
    while i < len(lines) and _LABEL_LINE.fullmatch(lines[i]):  # "(Med.)", "[NL.; Gr. ...] (Med.)"
        header.append(lines[i])
        i += 1
    if i < len(lines):  # a second pronunciation, part of speech and field label opening the first line
        m = _SECOND_HEADER.match(lines[i])
        if m:
            header.append(m.group(0))
            lines[i] = " " * m.end() + lines[i][m.end():]
    tally.drop("headword_pronunciation_etymology", "\n".join(header))
    body_lines = lines[i:]
    if body_lines:  # dictfmt sometimes left the next entry's headword after the last source tag
        m = _STRAY_HEADWORD.match(body_lines[-1])
        if m and len(m.group(2).split()) <= 3:
            tally.drop("stray_headword", m.group(2))
            body_lines[-1] = m.group(1)
    body = "\n".join(body_lines)
    records = []
    for para in re.split(r"\n\s*\n", body):
        kept_lines = []
        for line in para.split("\n"):
            if _BRACKET_LINE.match(line):
                tally.drop("source_tag" if _SOURCE_TAG.search(line) else "editorial_bracket", line)
            else:
                kept_lines.append(line)
        if kept_lines and kept_lines[0].strip().startswith("Syn:"):
            tally.drop("synonym_list", "\n".join(kept_lines))
            continue
        text_lines, in_attribution = [], False
        for line in kept_lines:
            indent = len(line) - len(line.lstrip(" "))
            if in_attribution and indent >= _ATTRIBUTION_COLUMN:
                tally.drop("attribution", line)
                continue
            in_attribution = False
            for m in _ATTRIBUTION.finditer(line):
                tally.drop("attribution", m.group(0))
                in_attribution = True
            text_lines.append(_ATTRIBUTION.sub(" ", line))
        stripped = "\n".join(text_lines).strip()
        if not stripped:
            continue
        for label in ("Usage:", "Note:"):
            if stripped.startswith(label):
                tally.drop("label", label)
                stripped = stripped[len(label):].strip()
        for m in _RUN_ON.finditer(stripped):
            tally.drop("derived_forms", m.group(0))
        stripped = _RUN_ON.sub("", stripped)
        stripped = _strip_brackets(stripped, tally, "editorial_bracket")
        for m in _PRONUNCIATION.finditer(stripped):
            tally.drop("headword_pronunciation_etymology", m.group(0))
        stripped = _PRONUNCIATION.sub("", stripped)
        for m in _EMBEDDED_HEADER.finditer(stripped):  # an entry's header left inside another entry's text
            tally.drop("headword_pronunciation_etymology", m.group(0))
        stripped = _EMBEDDED_HEADER.sub(" ", stripped)
        stripped = clean_whitespace(_unbrace(stripped))
        while True:
            m = _LEADING_LABELS.match(stripped)
            if not m or not m.group(0).strip():
                break
            tally.drop("sense_label", m.group(0))
            stripped = stripped[m.end():]
        stripped = re.sub(r"\s*\.(?:\s\.){2,}", "...", stripped)  # "was . . . a" -> "was... a"
        stripped = re.sub(r"\s+([,;])", r"\1", stripped).strip(" ;,")
        stripped = re.sub(r"\s+\.$", ".", stripped)
        if stripped.startswith("-- "):
            stripped = stripped[3:]
        if _INFLECTION_STUB.match(stripped) and len(stripped.split()) <= 8:
            tally.drop("inflection_stub", stripped)
            continue
        if stripped:
            if records and re.search(r"\bor$", records[-1]):  # "{Box turtle} or" + blank + "{Box tortoise} ..."
                stripped = f"{records.pop()} {stripped}"
            records.append(stripped)
    return headword, records


def _extract_dictd(root: str, name: str, package: str, parse, tally: Tally | None) -> Iterator[Record]:
    """The records ``parse(entry, tally)`` makes of each entry of dictd database ``name`` in ``package``."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/dictd"), f"{package} dictd database")
    keeper = Keeper(tally)
    for entry in dictd_entries(base, name, tally):
        parsed = parse(entry, tally)
        if parsed is None:
            continue
        headword, texts = parsed
        for text in texts:
            kept = keeper.keep(text)
            if kept:
                yield f"{package}/{headword}", kept


def extract_gcide(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """GCIDE (Webster's Revised Unabridged Dictionary of 1913, supplemented): definitions and quotations."""
    return _extract_dictd(root, "gcide", "dict-gcide", gcide_records, tally)


_JARGON_TAG = re.compile(r"^\[[^\]]*\]\s*")
_JARGON_LEAD = re.compile(r"^(?:\d+\.|□|•)\s+")
_JARGON_POS = re.compile(r"^(?:(?:n|adj|adv|v|vt|vi|interj|excl|pref|suff|prep|conj|pron|abbrev|cav|pl)\.,?\s+)+")


def jargon_records(entry: str, tally: Tally) -> tuple[str, list[str]] | None:
    """(headword, [paragraph, ...]) of one Jargon File entry.

    The header (headword line, pronunciation and part of speech, up to the
    first blank line) is dropped, as are a leading ``[usage or etymology]`` tag
    and paragraphs that are only such a tag.  A paragraph indented deeper than
    the body (a quotation, code, a table, ASCII art) is kept only when its
    lines are long (40+ characters on average) and it passes the prose rule;
    otherwise it is a ``code_block``.  ``{cross references}`` lose their braces.
    """
    lines = entry.strip("\n").split("\n")
    headword = lines[0].strip()
    if headword.startswith("00-database") or headword.startswith("00-"):
        tally.drop("license", entry)
        return None
    i = 0
    while i < len(lines) and lines[i].strip():
        i += 1
    tally.drop("headword_pronunciation", "\n".join(lines[:i]))
    records = []
    for para in re.split(r"\n\s*\n", "\n".join(lines[i:])):
        body = [line for line in para.split("\n") if line.strip()]
        if not body:
            continue
        indent = min(len(line) - len(line.lstrip(" ")) for line in body)
        text = clean_whitespace(" ".join(body))
        if indent > 5:
            long_lines = sum(len(line.strip()) for line in body) / len(body) >= 40
            if not long_lines or prose_verdict(text):
                tally.drop("code_block", text)
                continue
        m = _JARGON_LEAD.match(text)
        if m:
            tally.drop("sense_label", m.group(0))
            text = text[m.end():]
        m = _JARGON_TAG.match(text)
        if m:
            tally.drop("usage_label", m.group(0))
            text = text[m.end():]
        m = _JARGON_POS.match(text)
        if m:
            tally.drop("sense_label", m.group(0))
            text = text[m.end():]
        text = re.sub(r"\{\s*([^{}]*?)\s*\}", r"\1", text)
        text = re.sub(r"([“‘])\s+", r"\1", re.sub(r"\s+([”’])", r"\1", text))  # “ backed out” from line wraps
        if text.strip():
            records.append(text)
    return headword, records


def extract_jargon(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Jargon File 4.4.7: the prose paragraphs of every entry."""
    return _extract_dictd(root, "jargon", "dict-jargon", jargon_records, tally)

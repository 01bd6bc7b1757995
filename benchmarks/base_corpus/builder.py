"""The English "public text" corpus a base language model is pretrained on (no TensorFlow).

The corpus is built from these Debian packages only, each read from its own
files (the readers of this module, of ``markup`` and of ``texts``):

=====================  ===========================================================  ==============================
source (user prefix)   what is read                                                 one document (one client)
=====================  ===========================================================  ==============================
python3.11-doc         Sphinx HTML under ``usr/share/doc/python3.11/html``          one page
debian-handbook        DocBook HTML of the ``en-US`` book only                      one page
debian-reference-en    DocBook HTML ``usr/share/debian-reference/*.en.html``        one chapter
gnome-user-docs        Mallard ``.page`` files of the ``C`` (English) locale        one page
wordnet-base           ``usr/share/wordnet/data.*``: glosses and their examples     one synset
dict-gcide             dictd ``gcide.dict.dz`` + ``.index`` (Webster's 1913 + ...)  one headword
dict-jargon            dictd ``jargon.dict.dz`` + ``.index`` (the Jargon File)      one headword
bible-kjv-text         ``texts``: the King James Bible                              one chapter
linux-doc              ``markup``: the kernel's reST (package ``linux-doc-6.1``)    one file
perl-doc, manpages     ``markup``: POD, roff                                        one page
git-doc, gnu-standards, debian-policy    ``markup``: HTML                           one page
doc-debian, debian-history, dict-foldoc, dict-devil, gnome-devel-docs    ``texts``  one file / chapter / headword / page
=====================  ===========================================================  ==============================

No evaluation corpus of the project is a source: Tiny Shakespeare, the
embedded conversations (chatterbot-corpus) and the SpamAssassin mail stay out
whole, so a model pretrained here has seen none of their text, held-out or
not, under any partition.  The packaged base ships a fingerprint of this
corpus's sentences (``keyboard_lm.data.overlap``) that every warm-started run
checks its own text against.

What the extractors drop, and why (each dropped piece of text is counted by
source and reason, in pieces and whitespace words: nothing is dropped
silently):

* markup: tags are stripped; ``<br>`` and block boundaries become paragraph
  breaks; inline code in a sentence (``<code>``, ``<gui>``...) keeps its text;
* ``code_block``: ``<pre>``, Sphinx ``div.highlight*``, DocBook screens and
  program listings, Mallard ``<screen>``, ``<listing>`` and block ``<code>``,
  indented literal blocks of the Jargon File that do not read as prose;
* ``table``, ``heading`` (titles), ``toc``, ``navigation`` and
  ``page_chrome`` (everything outside the page's content), ``signature``
  (Sphinx API signatures), ``index_page`` (genindex, module index, search
  page), ``license`` (license pages, legal notices, database headers);
* ``mostly_symbols``: a record whose *plain words* (letters with inner ``'``
  or ``-``, abbreviations, numbers, with punctuation around them) make up less
  than 2/3 of its whitespace tokens or less than half of its non-space
  characters (``prose_verdict``), e.g. a path, a command line, an expression,
  a sentence that is mostly identifiers; ``too_short``: fewer than
  ``MIN_WORDS`` (3) plain words;
* ``duplicate``: a record already kept from the same source (exact text);
* the dictionaries: headwords, pronunciations and etymologies, source tags
  (``[1913 Webster]``), sense numbers and field labels, synonym lists,
  quotation attributions, usage tags (see ``gcide_records``,
  ``jargon_records``, ``wordnet_records``).

Run ``python -m benchmarks.base_corpus.builder --debs DIR --out DIR`` (``benchmarks/base_corpus.sh`` downloads the packages).  It writes
``corpus.jsonl`` (``{"user": "<source>/<document>", "text": ...}`` per line,
read by ``--format jsonl``) and ``report.json`` (package versions, sha256 of
the ``.deb`` files and of the corpus, files read, documents, records and words
kept, dropped pieces and words by reason).  The output depends only on the
inputs: files are read in sorted order and nothing depends on the clock.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import gzip
import hashlib
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import xml.etree.ElementTree as ET
from typing import Callable, Iterable, Iterator

from keyboard_lm.errors import DataError
from keyboard_lm.models.checkpoint import sha256_file

#: A record needs at least this many plain words ...
MIN_WORDS = 3
#: ... at least this share of its whitespace tokens plain words ...
MIN_PLAIN_SHARE = 0.67
#: ... and at least this share of its non-space characters in plain words.
MIN_PROSE_SHARE = 0.5

Record = tuple[str, str]  # (document id, text)


# --------------------------------------------------------------------------------------------------------------
# Counting what is dropped


class Tally:
    """What one extractor read and dropped: files, and dropped pieces and words by reason."""

    def __init__(self):
        self.files_read = 0
        self.files_skipped: collections.Counter = collections.Counter()
        self.dropped: dict[str, list[int]] = {}

    def drop(self, reason: str, text: str, pieces: int = 1) -> None:
        """Count ``text`` (one piece, or ``pieces``) as dropped for ``reason``; empty text counts nothing."""
        words = len(text.split())
        if not words:
            return
        entry = self.dropped.setdefault(reason, [0, 0])
        entry[0] += pieces
        entry[1] += words

    def skip_file(self, reason: str, n: int = 1) -> None:
        if n:
            self.files_skipped[reason] += n

    def dropped_json(self) -> dict:
        return {r: {"records": p, "words": w} for r, (p, w) in sorted(self.dropped.items())}


# --------------------------------------------------------------------------------------------------------------
# The prose rule

_OPEN = "(\"'“‘[«"
_CLOSE = ")\"'”’].,;:!?»"
_LETTERS = r"[^\W\d_]"
_PLAIN_WORD = re.compile(
    rf"[{re.escape(_OPEN)}]*(?:{_LETTERS}+(?:['’-]{_LETTERS}+)*|(?:{_LETTERS}\.){{2,}}|\d+(?:[.,:/-]\d+)*%?)"
    rf"[{re.escape(_CLOSE)}]*")
_SPACES = re.compile(r"\s+")
_INVISIBLE = str.maketrans({"\u00ad": None, "\u200b": None, "\u200c": None, "\u200d": None, "\ufeff": None,
                            "\u00b6": None, "\u00a0": " ", "\u2009": " ", "\u202f": " "})


def clean_whitespace(text: str) -> str:
    """NFC, invisible characters and pilcrows removed, whitespace runs to one space, stripped."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text).translate(_INVISIBLE)).strip()


def prose_verdict(text: str) -> str | None:
    """``None`` when ``text`` reads as prose, else the reason to drop it (``too_short``, ``mostly_symbols``).

    The rule: split on whitespace; a *plain word* is letters (with inner ``'``
    or ``-``), an abbreviation like ``e.g.``, or a number, with optional
    brackets, quotes and punctuation around it.  Prose has at least
    ``MIN_WORDS`` plain words, at least ``MIN_PLAIN_SHARE`` (2/3) of its tokens
    plain words, and at least ``MIN_PROSE_SHARE`` (half) of its non-space
    characters in plain words; a path, an option list, an expression or a
    sentence that is mostly identifiers does not.
    """
    tokens = text.split()
    plain = [t for t in tokens if _PLAIN_WORD.fullmatch(t)]
    if len(plain) < MIN_WORDS:
        return "too_short"
    if len(plain) < MIN_PLAIN_SHARE * len(tokens) or \
            sum(len(t) for t in plain) < MIN_PROSE_SHARE * sum(len(t) for t in tokens):
        return "mostly_symbols"
    return None


class _Keeper:
    """Normalizes whitespace, applies the prose rule and drops exact duplicates within one source."""

    def __init__(self, tally: Tally, dedupe: bool = True):
        self.tally = tally
        self.seen: set[bytes] | None = set() if dedupe else None

    def keep(self, text: str) -> str | None:
        text = clean_whitespace(text)
        if not text:
            return None
        reason = prose_verdict(text)
        if reason:
            self.tally.drop(reason, text)
            return None
        if self.seen is not None:
            key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
            if key in self.seen:
                self.tally.drop("duplicate", text)
                return None
            self.seen.add(key)
        return text


def emit_pieces(doc: str, pieces: Iterable[tuple[str | None, str]], keeper: _Keeper, tally: Tally,
                whole: str | None = None) -> Iterator[Record]:
    """``(doc, text)`` of each kept piece of ``pieces`` ((drop reason or None, text) pairs).

    A piece with a reason (or every piece, when ``whole`` gives one) is counted
    as dropped; the others pass through ``keeper`` (prose rule and dedupe).
    """
    for reason, text in pieces:
        reason = whole or reason
        if reason:
            tally.drop(reason, text)
            continue
        kept = keeper.keep(text)
        if kept:
            yield doc, kept


# --------------------------------------------------------------------------------------------------------------
# Block collection shared by the HTML and Mallard readers


class _Blocks:
    """Turns a stream of (start element, text, end element) into paragraphs tagged with a drop reason.

    Every block element ends the paragraph being collected.  A paragraph's
    reason is the outermost reason of the open elements, or ``page_chrome``
    when a content root is required and none is open; ``None`` means the
    paragraph is kept.  The text of an inline element with a reason (a
    footnote mark, an image in a sentence) is dropped on its own without
    breaking the paragraph around it.
    """

    def __init__(self, needs_root: bool):
        self.needs_root = needs_root
        self.stack: list[tuple[str, str | None, bool, bool]] = []  # tag, reason, block, is_root
        self.buf: list[str] = []
        self.pieces: list[tuple[str | None, str]] = []

    def start(self, tag: str, reason: str | None, block: bool, is_root: bool = False) -> None:
        if block or is_root:
            self.flush()
        self.stack.append((tag, reason, block, is_root))

    def end(self) -> None:
        _, reason, block, is_root = self.stack[-1]
        if block or is_root:
            self.flush()
        self.stack.pop()

    def data(self, text: str) -> None:
        for _, reason, block, is_root in reversed(self.stack):
            if block or is_root:
                break
            if reason:  # inside an inline element that is dropped
                text = clean_whitespace(text)
                if text:
                    self.pieces.append((reason, text))
                return
        self.buf.append(text)

    def reason(self) -> str | None:
        if self.needs_root and not any(e[3] for e in self.stack):
            return "page_chrome"
        return next((e[1] for e in self.stack if e[1]), None)

    def flush(self) -> None:
        if not self.buf:
            return
        text = clean_whitespace("".join(self.buf))
        self.buf.clear()
        if text:
            self.pieces.append((self.reason(), text))


_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_HTML_BLOCKS = frozenset("""address article aside blockquote body caption center dd details div dl dt fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hr html li main nav ol p pre section summary
    table tbody td tfoot th thead title tr ul""".split())

#: Reasons of elements that sit inside a sentence: dropping them does not split the paragraph.
_INLINE_REASONS = frozenset({"permalink", "footnote_marker", "media", "index_term"})

HTMLRule = Callable[[str, dict, set], "str | None"]


class _HTMLReader(html.parser.HTMLParser):
    def __init__(self, rule: HTMLRule, is_root: HTMLRule | None):
        super().__init__(convert_charrefs=True)
        self.rule, self.is_root = rule, is_root
        self.blocks = _Blocks(needs_root=is_root is not None)

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        classes = set(a.get("class", "").split())
        if tag == "br":
            self.blocks.data(" ")
            return
        if tag in _VOID:
            return
        root = bool(self.is_root and self.is_root(tag, a, classes))
        reason = self.rule(tag, a, classes)
        block = tag in _HTML_BLOCKS or (reason is not None and reason not in _INLINE_REASONS)
        self.blocks.start(tag, reason, block, root)

    def handle_endtag(self, tag):
        stack = self.blocks.stack
        if not any(e[0] == tag for e in stack):
            return  # a stray end tag
        while stack:
            top = stack[-1][0]
            self.blocks.end()
            if top == tag:
                break

    def handle_data(self, data):
        self.blocks.data(data)


def html_paragraphs(markup: str, rule: HTMLRule, is_root: HTMLRule | None = None) -> list[tuple[str | None, str]]:
    """(drop reason or None, paragraph text) of an HTML page, in page order."""
    reader = _HTMLReader(rule, is_root)
    reader.feed(markup)
    reader.close()
    while reader.blocks.stack:
        reader.blocks.end()
    reader.blocks.flush()
    return reader.blocks.pieces


def _common_html_rule(tag: str, a: dict, c: set) -> str | None:
    if tag in ("script", "style", "noscript"):
        return "script_style"
    if tag in ("head", "title"):
        return "page_chrome"
    if tag == "pre":
        return "code_block"
    if tag == "table":
        return "table"
    if tag in _HEADINGS:
        return "heading"
    return None


def sphinx_rule(tag: str, a: dict, c: set) -> str | None:
    """Drop reasons for the elements of a Sphinx HTML page."""
    if any(x.startswith("highlight") for x in c) or c & {"productionlist", "doctest"}:
        return "code_block"
    common = _common_html_rule(tag, a, c)
    if common:
        return common
    if "rubric" in c:
        return "heading"
    if tag == "dt":
        return "signature" if "sig" in c else "term"
    if "admonition-title" in c:
        return "admonition_title"
    if "headerlink" in c:
        return "permalink"
    if c & {"footnote-reference", "fn-backref"}:
        return "footnote_marker"
    if c & {"toctree-wrapper", "contents"} or (tag == "nav" and "contents" in a.get("id", "")):
        return "toc"
    if tag == "nav" or c & {"sphinxsidebar", "related", "footer", "mobile-nav"}:
        return "navigation"
    return None


def sphinx_root(tag: str, a: dict, c: set) -> bool:
    return a.get("role") == "main" or (tag == "div" and "body" in c)


def docbook_rule(tag: str, a: dict, c: set) -> str | None:
    """Drop reasons for the elements of a DocBook (publican / xsl) HTML page."""
    if c & {"navheader", "navfooter", "docnav"} or a.get("id") in ("banner", "title"):
        return "navigation"
    if c & {"toc", "list-of-tables", "list-of-figures", "list-of-examples", "list-of-procedures"}:
        return "toc"
    if c & {"screen", "programlisting", "synopsis", "literallayout", "cmdsynopsis"}:
        return "code_block"
    if c & {"table", "informaltable"}:
        return "table"
    common = _common_html_rule(tag, a, c)
    if common:
        return common
    if tag == "p" and "title" in c:
        return "heading"
    if c & {"legalnotice", "copyright"}:
        return "license"
    if c & {"author", "authorgroup", "othercredit", "editor", "releaseinfo", "revhistory", "pubdate",
            "corpauthor", "producttitle", "productnumber"}:
        return "front_matter"
    if "index" in c:
        return "index_page"
    if tag == "sup" or "footnote" in c and tag == "a":
        return "footnote_marker"
    return None


# --------------------------------------------------------------------------------------------------------------
# Extractors of the Debian packages: each takes the extracted package root and yields (document id, text)


def _require_dir(path: str, what: str) -> str:
    if not os.path.isdir(path):
        raise DataError(f"{path}: not found ({what})")
    return path


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    return data.decode("utf-8", errors="replace")


def _html_documents(files: list[tuple[str, str]], rule: HTMLRule, is_root: HTMLRule | None, tally: Tally,
                    page_reason: Callable[[str], str | None] = lambda doc: None,
                    edit: Callable[[str, Tally], str] = lambda text, tally: text) -> Iterator[Record]:
    keeper = _Keeper(tally)
    for doc, path in files:
        pieces = html_paragraphs(_read_text(path), rule, is_root)
        tally.files_read += 1
        whole = page_reason(doc)
        for reason, text in pieces:
            reason = whole or reason
            if reason:
                tally.drop(reason, text)
                continue
            kept = keeper.keep(edit(text, tally))
            if kept:
                yield doc, kept


#: Sphinx pages that are not prose: the reason each one is dropped whole.
_PYTHON_PAGES = {"search": "index_page", "py-modindex": "index_page", "contents": "toc",
                 "copyright": "license", "license": "license", "download": "navigation"}


def _python_page_reason(doc: str) -> str | None:
    name = doc.split("/", 1)[1]
    if name.startswith("genindex"):
        return "index_page"
    return _PYTHON_PAGES.get(name)


#: A trailing "(Contributed by X in bpo-123.)" credit of the What's New pages.
_PYTHON_CREDIT = re.compile(
    r"\s*\((?:[^()]*\b(?:[Cc]ontributed|[Pp]atch(?:ed)?|[Ff]ixed|[Dd]iscovered|[Ww]ritten|[Ii]mplemented|[Ss]uggested"
    r"|[Rr]eported|[Aa]dded)\s+by\b|[^()]*\b(?:bpo|gh|issue)\s*-?\s*#?\d+)[^()]*\)\.?$")


def _python_edit(text: str, tally: Tally) -> str:
    m = _PYTHON_CREDIT.search(clean_whitespace(text))
    if m:
        tally.drop("credit", m.group(0))
        return clean_whitespace(text)[:m.start()]
    return text


def extract_python_doc(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Python 3.11 documentation (Sphinx HTML): the main content of every page.

    Left out: ``_sources``, ``_static`` and other ``_*`` folders, the general and
    module indices, the search page, the contents page, the copyright and
    license pages; in a page, everything outside ``div[role=main]``, code
    blocks, tables, headings, API signatures and definition terms, admonition
    titles, and the "(Contributed by X in bpo-N.)" credits of What's New.
    """
    tally = tally if tally is not None else Tally()
    html_root = _require_dir(os.path.join(root, "usr/share/doc/python3.11/html"), "python3.11-doc HTML")
    files = []
    for dirpath, dirnames, filenames in os.walk(html_root):
        for d in dirnames:
            if d.startswith("_"):  # _sources, _static, _images, _downloads
                tally.skip_file("support_folder", sum(len(f) for _, _, f in os.walk(os.path.join(dirpath, d))))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("_"))
        rel = os.path.relpath(dirpath, html_root)
        for name in sorted(filenames):
            if name.endswith(".html"):
                doc = os.path.normpath(os.path.join(rel, name[:-5]))
                files.append((f"python3.11-doc/{doc}", os.path.join(dirpath, name)))
            else:
                tally.skip_file("not_html")
    files.sort()
    yield from _html_documents(files, sphinx_rule, sphinx_root, tally, _python_page_reason, _python_edit)


def extract_debian_handbook(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Debian Administrator's Handbook, English (``html/en-US``) pages only."""
    tally = tally if tally is not None else Tally()
    base = _require_dir(os.path.join(root, "usr/share/doc/debian-handbook/html"), "debian-handbook HTML")
    book = _require_dir(os.path.join(base, "en-US"), "debian-handbook en-US HTML")
    for lang in sorted(os.listdir(base)):
        if lang != "en-US" and os.path.isdir(os.path.join(base, lang)):
            tally.skip_file("other_language", sum(len(f) for _, _, f in os.walk(os.path.join(base, lang))))
    files = [(f"debian-handbook/{n[:-5]}", os.path.join(book, n)) for n in sorted(os.listdir(book))
             if n.endswith(".html")]
    yield from _html_documents(files, docbook_rule, None, tally)


def extract_debian_reference(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Debian Reference, English HTML (``usr/share/debian-reference/*.en.html``)."""
    tally = tally if tally is not None else Tally()
    base = _require_dir(os.path.join(root, "usr/share/debian-reference"), "debian-reference HTML")
    names = sorted(os.listdir(base))
    files = [(f"debian-reference-en/{n[:-len('.en.html')]}", os.path.join(base, n)) for n in names
             if n.endswith(".en.html")]
    if not files:
        raise DataError(f"{base}: no *.en.html files (debian-reference-en)")
    tally.skip_file("not_html", len(names) - len(files))
    yield from _html_documents(files, docbook_rule, None, tally)


# ---- Mallard (GNOME help)

_MAL = "{http://projectmallard.org/1.0/}"
_IF = "{http://projectmallard.org/if/1.0/}"
#: Mallard elements that hold blocks; a <code> directly inside one is a code block, not inline code.
_MAL_CONTAINERS = frozenset("page section item note example figure td th synopsis list steps terms tree quote div "
                            "comment info links table tr tbody thead tfoot".split())
_MAL_BLOCKS = frozenset("p title subtitle desc item note section page list steps terms tree quote div td th tr "
                        "figure synopsis links".split())
_MAL_DROP = {"info": "metadata", "title": "heading", "subtitle": "heading", "desc": "heading",
             "comment": "editor_comment", "table": "table", "screen": "code_block", "listing": "code_block",
             "synopsis": "code_block", "example": "example_block", "media": "media", "links": "navigation"}


def _local(tag: str) -> tuple[str, str]:
    """(namespace, local name) of an ElementTree tag."""
    if tag.startswith("{"):
        ns, _, name = tag[1:].partition("}")
        return ns, name
    return "", tag


def _mallard_titles(files: list[tuple[str, str, str]]) -> dict[str, str]:
    """page id (and ``page#section``) -> title text, for empty ``<link xref=.../>``."""
    titles = {}
    for _, page_id, path in files:
        try:
            tree = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            continue
        link_title = tree.find(f"{_MAL}info/{_MAL}title[@type='link']")
        title = link_title if link_title is not None else tree.find(f"{_MAL}title")
        if title is not None:
            titles[page_id] = clean_whitespace("".join(title.itertext()))
        for section in tree.iter(f"{_MAL}section"):
            t = section.find(f"{_MAL}title")
            if section.get("id") and t is not None:
                titles[f"{page_id}#{section.get('id')}"] = clean_whitespace("".join(t.itertext()))
    return titles


def _walk_mallard(el, parent: str, blocks: _Blocks, titles: dict, page_id: str) -> None:
    ns, name = _local(el.tag)
    if ns == _IF[1:-1]:
        reason = "conditional_variant" if name == "when" else None
    elif ns and ns != _MAL[1:-1]:
        reason = "metadata"  # its:rules, TTML captions, uix thumbnails, XInclude
    elif name == "code" and parent in _MAL_CONTAINERS:
        reason = "code_block"
    else:
        reason = _MAL_DROP.get(name)
    block = name in _MAL_BLOCKS or ns == _IF[1:-1] or (reason is not None and reason not in _INLINE_REASONS)
    blocks.start(name, reason, block)
    if name == "keyseq" and ns == _MAL[1:-1]:
        blocks.data("+".join(clean_whitespace("".join(k.itertext())) for k in el if _local(k.tag)[1] == "key"))
    elif name == "guiseq" and ns == _MAL[1:-1]:
        blocks.data(" then ".join(clean_whitespace("".join(k.itertext())) for k in el if _local(k.tag)[1] == "gui"))
    else:
        if name == "link" and not "".join(el.itertext()).strip():
            xref = el.get("xref") or ""
            target = xref if "#" not in xref or xref.split("#")[0] else f"{page_id}{xref}"
            text = titles.get(target) or el.get("href")
            if text:
                blocks.data(text)
            else:
                blocks.data(" \x00unresolved-link\x00 ")
        if el.text:
            blocks.data(el.text)
        for child in el:
            _walk_mallard(child, name, blocks, titles, page_id)
            if child.tail:
                blocks.data(child.tail)
    blocks.end()


def mallard_paragraphs(path: str, page_id: str, titles: dict) -> list[tuple[str | None, str]]:
    """(drop reason or None, paragraph text) of a Mallard page."""
    try:
        tree = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise DataError(f"{path}: not well-formed Mallard XML: {e}") from None
    blocks = _Blocks(needs_root=False)
    _walk_mallard(tree, "", blocks, titles, page_id)
    blocks.flush()
    out = []
    for reason, text in blocks.pieces:
        if reason is None and "\x00unresolved-link\x00" in text:
            reason = "unresolved_link"
        out.append((reason, text.replace("\x00unresolved-link\x00", "")))
    return out


def extract_mallard_help(root: str, package: str, tally: Tally,
                         other_file: Callable[[str, str], str] = lambda guide, name: "not_a_page"
                         ) -> Iterator[Record]:
    """The English Mallard pages of every guide under ``usr/share/help/C`` of a GNOME help package.

    An empty ``<link xref=.../>`` is replaced by the title of the page or
    section it points to (as Yelp shows it); ``<keyseq>`` becomes ``Ctrl+Alt+T``.
    Of an ``<if:choose>``, the fallback (``<if:else>`` or unconditional) text is
    kept and the ``<if:when>`` variants are dropped, so the same paragraph is
    not repeated per platform.  Other languages are counted as
    ``other_language``; a file of a guide that is not a ``.page`` is counted
    under ``other_file(guide, name)``.
    """
    help_dir = _require_dir(os.path.join(root, "usr/share/help"), f"{package} help")
    english = _require_dir(os.path.join(help_dir, "C"), f"{package} C locale")
    for lang in sorted(os.listdir(help_dir)):
        if lang != "C":
            tally.skip_file("other_language", sum(len(f) for _, _, f in os.walk(os.path.join(help_dir, lang))))
    files = []
    for guide in sorted(os.listdir(english)):
        guide_dir = os.path.join(english, guide)
        if not os.path.isdir(guide_dir):
            tally.skip_file(other_file(guide, guide))
            continue
        for dirpath, dirnames, filenames in os.walk(guide_dir):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".page"):
                    page = os.path.relpath(os.path.join(dirpath, name), guide_dir)[:-5]
                    files.append((f"{package}/{guide}/{page}", f"{guide}/{page}", os.path.join(dirpath, name)))
                else:
                    tally.skip_file(other_file(guide, name))
    files.sort()
    titles_by_guide: dict[str, dict] = {}
    for guide in sorted({f[1].split("/")[0] for f in files}):
        in_guide = [(d, p.split("/", 1)[1], path) for d, p, path in files if p.split("/")[0] == guide]
        titles_by_guide[guide] = _mallard_titles(in_guide)
    keeper = _Keeper(tally)
    for doc, page, path in files:
        guide, page_id = page.split("/", 1)
        pieces = mallard_paragraphs(path, page_id, titles_by_guide[guide])
        tally.files_read += 1
        yield from emit_pieces(doc, pieces, keeper, tally)


def extract_gnome_user_docs(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """GNOME help (``usr/share/help/C/*/*.page``): the English Mallard source pages (``extract_mallard_help``)."""
    return extract_mallard_help(root, "gnome-user-docs", tally if tally is not None else Tally())


# ---- WordNet

#: lexicographer file number -> name (lexnames(5WN), fixed since WordNet 1.5).
WORDNET_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl").split()


def _split_gloss(gloss: str) -> list[str] | None:
    """Split a gloss on ``;`` outside double quotes; None when its quotes do not pair."""
    parts, cur, quoted = [], [], False
    for ch in gloss:
        if ch == '"':
            quoted = not quoted
        if ch == ";" and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return None if quoted else [p.strip() for p in parts if p.strip()]


_WN_EXAMPLE = re.compile(r'"(?P<text>[^"]+)"\s*(?P<by>(?:-+|by|—)\s*[^"]*)?')


def wordnet_records(line: str, tally: Tally) -> tuple[str, list[str]] | None:
    """(document id, [definition, example, ...]) of one line of a WordNet ``data.*`` file."""
    head, sep, gloss = line.partition(" | ")
    fields = head.split()
    if not sep or len(fields) < 5:
        tally.drop("unparsed_line", line)
        return None
    offset, lexfile = fields[0], int(fields[1])
    lemma = re.sub(r"\(\w+\)$", "", fields[4]).replace("_", " ")
    lexname = WORDNET_LEXNAMES[lexfile] if lexfile < len(WORDNET_LEXNAMES) else f"lex{lexfile}"
    doc = f"wordnet-base/{lexname}/{lemma}.{offset}"
    parts = _split_gloss(gloss.strip())
    if parts is None:
        return doc, [gloss.strip()]
    definitions, examples = [], []
    for part in parts:
        m = _WN_EXAMPLE.fullmatch(part)
        if m:
            examples.append(m.group("text"))
            if m.group("by"):
                tally.drop("attribution", m.group("by"))
        else:
            definitions.append(part)
    records = (["; ".join(definitions)] if definitions else []) + examples
    return doc, records


def extract_wordnet(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """WordNet 3.0 glosses: per synset, its definition (one record) and each quoted example (one record).

    The license text at the top of each data file is dropped (``license``);
    an example's trailing attribution (``- Shakespeare``) is dropped.
    """
    tally = tally if tally is not None else Tally()
    base = _require_dir(os.path.join(root, "usr/share/wordnet"), "wordnet-base data")
    keeper = _Keeper(tally)
    for pos in ("adj", "adv", "noun", "verb"):
        path = os.path.join(base, f"data.{pos}")
        if not os.path.isfile(path):
            raise DataError(f"{path}: not found (wordnet-base data file)")
        tally.files_read += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                if line.startswith("  "):
                    tally.drop("license", line)
                    continue
                parsed = wordnet_records(line, tally)
                if parsed is None:
                    continue
                doc, texts = parsed
                for text in texts:
                    kept = keeper.keep(text)
                    if kept:
                        yield doc, kept


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
    base = _require_dir(os.path.join(root, "usr/share/dictd"), f"{package} dictd database")
    keeper = _Keeper(tally)
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


@dataclasses.dataclass(frozen=True)
class DebSource:
    """A source of the corpus: its name (the document prefix), its extractor and the .deb it reads.

    ``deb`` differs from ``name`` only for a metapackage: ``linux-doc`` depends on
    ``linux-doc-6.1``, which holds the text.
    """

    name: str
    extractor: Callable[[str, Tally], Iterator[Record]]
    deb: str = ""

    @property
    def package(self) -> str:
        return self.deb or self.name


def deb_sources() -> tuple[DebSource, ...]:
    """Every source of the corpus, in the order it is written (the readers of other formats live in
    ``markup`` and ``texts``).

    Only public text: the project's evaluation corpora (Tiny Shakespeare, the
    embedded conversations, the SpamAssassin mail) are not sources, so no
    held-out text of theirs can be in a model pretrained on this corpus.
    """
    from benchmarks.base_corpus import markup, texts

    extra = {name: fn for name, fn in markup.SOURCES + texts.SOURCES}
    return (
        DebSource("python3.11-doc", extract_python_doc),
        DebSource("debian-handbook", extract_debian_handbook),
        DebSource("debian-reference-en", extract_debian_reference),
        DebSource("gnome-user-docs", extract_gnome_user_docs),
        DebSource("wordnet-base", extract_wordnet),
        DebSource("dict-gcide", extract_gcide),
        DebSource("dict-jargon", extract_jargon),
        DebSource("bible-kjv-text", extra["bible-kjv-text"]),
        DebSource("linux-doc", extra["linux-doc"], deb="linux-doc-6.1"),
        DebSource("perl-doc", extra["perl-doc"]),
        DebSource("git-doc", extra["git-doc"]),
        DebSource("gnu-standards", extra["gnu-standards"]),
        DebSource("debian-policy", extra["debian-policy"]),
        DebSource("doc-debian", extra["doc-debian"]),
        DebSource("debian-history", extra["debian-history"]),
        DebSource("manpages", extra["manpages"]),
        DebSource("dict-foldoc", extra["dict-foldoc"]),
        DebSource("dict-devil", extra["dict-devil"]),
        DebSource("gnome-devel-docs", extra["gnome-devel-docs"]),
    )


def packages() -> tuple[str, ...]:
    """The .deb packages the corpus is read from."""
    return tuple(s.package for s in deb_sources())


# --------------------------------------------------------------------------------------------------------------
# Packages: finding, extracting, versions


def find_debs(debs_dir: str, wanted: Iterable[str] | None = None) -> dict[str, str]:
    """package -> its ``<package>_*.deb`` in ``debs_dir`` (exactly one each; default: every ``packages()``)."""
    if not os.path.isdir(debs_dir):
        raise DataError(f"{debs_dir}: not a directory (--debs)")
    found = {}
    for package in (packages() if wanted is None else wanted):
        matches = sorted(glob.glob(os.path.join(glob.escape(debs_dir), f"{glob.escape(package)}_*.deb")))
        if not matches:
            raise DataError(f"{debs_dir}: no {package}_*.deb (download it with `apt-get download {package}`)")
        if len(matches) > 1:
            raise DataError(f"{debs_dir}: several {package}_*.deb ({', '.join(map(os.path.basename, matches))}); "
                            "keep one")
        found[package] = matches[0]
    return found


def _dpkg_deb(*args: str) -> str:
    if not shutil.which("dpkg-deb"):
        raise DataError("dpkg-deb not found: it is needed to read .deb files (install dpkg, or pass --extracted)")
    out = subprocess.run(["dpkg-deb", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise DataError(f"dpkg-deb {' '.join(args)} failed: {out.stderr.strip() or out.returncode}")
    return out.stdout


def deb_field(deb: str, field: str) -> str:
    return _dpkg_deb("-f", deb, field).strip()


def extract_deb(deb: str, dest: str) -> str:
    os.makedirs(dest, exist_ok=True)
    _dpkg_deb("-x", deb, dest)
    return dest


def changelog_version(root: str, package: str) -> str | None:
    """The version in the first line of the package's Debian changelog in an extracted tree, if any."""
    for name in ("changelog.Debian.gz", "changelog.gz"):
        path = os.path.join(root, "usr/share/doc", package, name)
        if os.path.isfile(path):
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                m = re.match(r"\S+ \(([^)]+)\)", f.readline())
            if m:
                return m.group(1)
    return None


# --------------------------------------------------------------------------------------------------------------
# Capping and building


def _doc_order_key(doc: str) -> str:
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def cap_records(records: list[Record], max_words: int | None, tally: Tally) -> list[Record]:
    """At most ``max_words`` whitespace words of ``records``, by whole documents in a fixed pseudo-random order.

    Documents are taken in the order of the sha256 of their ids (a seeded
    choice that does not depend on the reading order) while they fit; the
    first one that does not fit contributes its leading records that do, and
    then the selection stops.  Kept records stay in their original order.
    The rest is counted as dropped for ``cap``.
    """
    if max_words is None:
        return records
    by_doc: dict[str, list[int]] = collections.defaultdict(list)
    for i, (doc, _) in enumerate(records):
        by_doc[doc].append(i)
    keep: set[int] = set()
    total = 0
    for doc in sorted(by_doc, key=_doc_order_key):
        indices = by_doc[doc]
        words = sum(len(records[i][1].split()) for i in indices)
        if total + words <= max_words:
            keep.update(indices)
            total += words
            continue
        for i in indices:
            w = len(records[i][1].split())
            if total + w > max_words:
                break
            keep.add(i)
            total += w
        break
    out = []
    for i, record in enumerate(records):
        if i in keep:
            out.append(record)
        else:
            tally.drop("cap", record[1])
    return out


@dataclasses.dataclass
class SourceResult:
    name: str
    info: dict
    tally: Tally
    records: list[Record]
    available_words: int
    available_records: int
    available_documents: int


def _words(records: list[Record]) -> int:
    return sum(len(t.split()) for _, t in records)


def _finish_source(name: str, info: dict, tally: Tally, records: list[Record], max_words: int | None,
                   log: Callable[[str], None]) -> SourceResult:
    available_words = _words(records)
    available_records = len(records)
    available_documents = len({d for d, _ in records})
    records = cap_records(records, max_words, tally)
    log(f"{name}: {len(records)} records, {_words(records)} words")
    return SourceResult(name, info, tally, records, available_words, available_records, available_documents)


def build(out_dir: str, *, roots: dict[str, str], debs: dict[str, str] | None = None,
          max_words_per_source: int | None = None, log: Callable[[str], None] = lambda message: None,
          sources: tuple[DebSource, ...] | None = None) -> dict:
    """Write ``out_dir/corpus.jsonl`` and ``out_dir/report.json``; return the report.

    Args:
      out_dir: created if missing; its two files are replaced.
      roots: package name -> its extracted tree (``dpkg-deb -x``), for every package of ``packages()``.
      debs: package name -> its ``.deb``; versions and sha256 come from it.  Without it the
        version comes from the tree's Debian changelog and no sha256 is reported.
      max_words_per_source: cap each source at this many words (``cap_records``); None = no cap.
      log: called with a line of progress per source.
      sources: the sources to read (default: ``deb_sources()``, the corpus).
    """
    sources = deb_sources() if sources is None else sources
    if max_words_per_source is not None and max_words_per_source < 1:
        raise DataError(f"max_words_per_source must be >= 1, got {max_words_per_source}")
    missing = [s.package for s in sources if s.package not in roots]
    if missing:
        raise DataError(f"no extracted tree for package(s) {', '.join(missing)}")
    for package, root in roots.items():
        _require_dir(root, f"extracted {package}")
    debs = debs or {}
    for package, deb in debs.items():
        if not os.path.isfile(deb):
            raise DataError(f"{deb}: not found ({package} .deb)")

    results = []
    for source in sources:
        tally = Tally()
        root = roots[source.package]
        records = list(source.extractor(root, tally))
        deb = debs.get(source.package)
        if deb:
            info = {"package": source.package, "version": deb_field(deb, "Version"), "version_from": "deb control",
                    "deb": os.path.basename(deb), "deb_sha256": sha256_file(deb)}
        else:
            info = {"package": source.package, "version": changelog_version(root, source.package),
                    "version_from": "changelog in the extracted tree", "deb": None, "deb_sha256": None}
        if deb and source.package != source.name:
            info["metapackage"] = source.name
        results.append(_finish_source(source.name, info, tally, records, max_words_per_source, log))

    os.makedirs(out_dir, exist_ok=True)
    corpus_path = os.path.join(out_dir, "corpus.jsonl")
    tmp = corpus_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for result in results:
            for doc, text in result.records:
                f.write(json.dumps({"user": doc, "text": text}, ensure_ascii=False) + "\n")
    os.replace(tmp, corpus_path)

    sources = {}
    for r in results:
        dropped = r.tally.dropped_json()
        sources[r.name] = {
            **r.info,
            "files_read": r.tally.files_read,
            "files_not_read": dict(sorted(r.tally.files_skipped.items())),
            "documents": len({d for d, _ in r.records}),
            "records": len(r.records),
            "words": _words(r.records),
            "documents_available": r.available_documents,
            "records_available": r.available_records,
            "words_available": r.available_words,
            "dropped": dropped,
            "dropped_words": sum(v["words"] for v in dropped.values()),
        }
    report = {
        "builder": "benchmarks.base_corpus.builder",
        "format": "jsonl: {\"user\": \"<source>/<document>\", \"text\": \"<paragraph>\"} (--format jsonl)",
        "rules": {"min_words": MIN_WORDS, "min_plain_token_share": MIN_PLAIN_SHARE,
                  "min_plain_char_share": MIN_PROSE_SHARE,
                  "words": "whitespace-separated", "max_words_per_source": max_words_per_source},
        "sources": sources,
        "totals": {"sources": len(sources),
                   "documents": sum(s["documents"] for s in sources.values()),
                   "records": sum(s["records"] for s in sources.values()),
                   "words": sum(s["words"] for s in sources.values()),
                   "words_available": sum(s["words_available"] for s in sources.values()),
                   "dropped_words": sum(s["dropped_words"] for s in sources.values())},
        "corpus": "corpus.jsonl",
        "corpus_sha256": sha256_file(corpus_path),
    }
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(report, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return report


def format_summary(report: dict) -> str:
    """A per-source table of a build report."""
    rows = [("source", "version", "files", "docs", "records", "words", "available", "dropped words")]
    for name, s in report["sources"].items():
        rows.append((name, str(s.get("version") or "-"), str(s["files_read"]), str(s["documents"]),
                     str(s["records"]), str(s["words"]), str(s["words_available"]), str(s["dropped_words"])))
    t = report["totals"]
    rows.append(("total", "", "", str(t["documents"]), str(t["records"]), str(t["words"]), str(t["words_available"]),
                 str(t["dropped_words"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.append(f"corpus sha256 {report['corpus_sha256']}")
    return "\n".join(lines)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.base_corpus.builder",
        description="Build the English public-text corpus (corpus.jsonl + report.json) from seven Debian "
                    "documentation and text packages (public text only: no evaluation corpus of the project).")
    parser.add_argument("--debs", help="directory with one <package>_*.deb per package (" + ", ".join(packages())
                        + "); extracted into a temporary directory with dpkg-deb unless --extracted is given")
    parser.add_argument("--extracted", help="directory with one extracted tree per package, named like the "
                        "package (dpkg-deb -x FILE DIR/<package>); with --debs the versions and sha256 still "
                        "come from the .deb files")
    parser.add_argument("--out", required=True, help="output directory (corpus.jsonl, report.json)")
    parser.add_argument("--max-words-per-source", type=_positive_int, default=None,
                        help="cap every source at N whitespace words (whole documents in a fixed pseudo-random "
                             "order); default: no cap")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if not args.debs and not args.extracted:
        parser.error("give --debs DIR or --extracted DIR")
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    start = time.monotonic()
    try:
        debs = find_debs(args.debs) if args.debs else None
        with tempfile.TemporaryDirectory(prefix="public_text.") as tmp:
            if args.extracted:
                _require_dir(args.extracted, "--extracted")
                roots = {}
                for p in packages():
                    roots[p] = os.path.join(args.extracted, p)
                    if not os.path.isdir(roots[p]):
                        raise DataError(f"{roots[p]}: not found (extracted tree of package {p})")
            else:
                roots = {}
                for p, deb in debs.items():
                    log(f"extracting {os.path.basename(deb)}")
                    roots[p] = extract_deb(deb, os.path.join(tmp, p))
            report = build(args.out, roots=roots, debs=debs,
                           max_words_per_source=args.max_words_per_source, log=log)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(report))
    print(f"wrote {os.path.join(args.out, 'corpus.jsonl')} and report.json in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The base corpus's shared rules: what counts as prose, the tally of what is dropped and why, and the
paragraph blocks of HTML pages (``builder``'s docstring lists every rule).
"""

from __future__ import annotations

import collections
import hashlib
import html.parser
import re
import unicodedata
from typing import Callable, Iterable, Iterator




#: A record needs at least this many plain words ...
MIN_WORDS = 3
#: ... at least this share of its whitespace tokens plain words ...
MIN_PLAIN_SHARE = 0.67
#: ... and at least this share of its non-space characters in plain words.
MIN_PROSE_SHARE = 0.5

Record = tuple[str, str]  # (document id, text)
Piece = tuple["str | None", str]  # (drop reason or None to keep, text)


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


class Keeper:
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


def emit_pieces(doc: str, pieces: Iterable[tuple[str | None, str]], keeper: Keeper, tally: Tally,
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


class Blocks:
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
INLINE_REASONS = frozenset({"permalink", "footnote_marker", "media", "index_term"})

HTMLRule = Callable[[str, dict, set], "str | None"]


class HTMLReader(html.parser.HTMLParser):
    def __init__(self, rule: HTMLRule, is_root: HTMLRule | None):
        super().__init__(convert_charrefs=True)
        self.rule, self.is_root = rule, is_root
        self.blocks = Blocks(needs_root=is_root is not None)

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
        block = tag in _HTML_BLOCKS or (reason is not None and reason not in INLINE_REASONS)
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
    reader = HTMLReader(rule, is_root)
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

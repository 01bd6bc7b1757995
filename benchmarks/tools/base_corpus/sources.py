"""Readers of the first seven sources of the base corpus, one per format: Sphinx and DocBook HTML (Python's
docs, the Debian handbook and reference), Mallard (GNOME help), WordNet's data files, and (in ``dictd``) dictd
dictionaries (GCIDE, the Jargon File). Each takes the extracted package root and yields (document id,
text); ``markup`` and ``texts`` hold the readers of the other twelve.
"""

from __future__ import annotations

import gzip
import os
import re
import xml.etree.ElementTree as ET
from typing import Callable, Iterator

from benchmarks.tools.base_corpus.prose import (INLINE_REASONS, Blocks, HTMLRule, Keeper, Record, Tally, clean_whitespace,
                                          docbook_rule, emit_pieces, html_paragraphs, sphinx_root, sphinx_rule)
from keyboard_lm.errors import DataError



# --------------------------------------------------------------------------------------------------------------
# Extractors of the Debian packages: each takes the extracted package root and yields (document id, text)


def require_dir(path: str, what: str) -> str:
    if not os.path.isdir(path):
        raise DataError(f"{path}: not found ({what})")
    return path


def read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror}") from None
    return data.decode("utf-8", errors="replace")


def open_text(path: str) -> str:
    """A text file, gunzipped when it ends in ``.gz``, decoded as UTF-8 (bad bytes replaced)."""
    if not path.endswith(".gz"):
        return read_text(path)
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read: {e}") from None
    return data.decode("utf-8", errors="replace")


def strip_gz(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


def html_documents(files: list[tuple[str, str]], rule: HTMLRule, is_root: HTMLRule | None, tally: Tally,
                    page_reason: Callable[[str], str | None] = lambda doc: None,
                    edit: Callable[[str, Tally], str] = lambda text, tally: text) -> Iterator[Record]:
    keeper = Keeper(tally)
    for doc, path in files:
        pieces = html_paragraphs(read_text(path), rule, is_root)
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
    html_root = require_dir(os.path.join(root, "usr/share/doc/python3.11/html"), "python3.11-doc HTML")
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
    yield from html_documents(files, sphinx_rule, sphinx_root, tally, _python_page_reason, _python_edit)


def extract_debian_handbook(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Debian Administrator's Handbook, English (``html/en-US``) pages only."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/doc/debian-handbook/html"), "debian-handbook HTML")
    book = require_dir(os.path.join(base, "en-US"), "debian-handbook en-US HTML")
    for lang in sorted(os.listdir(base)):
        if lang != "en-US" and os.path.isdir(os.path.join(base, lang)):
            tally.skip_file("other_language", sum(len(f) for _, _, f in os.walk(os.path.join(base, lang))))
    files = [(f"debian-handbook/{n[:-5]}", os.path.join(book, n)) for n in sorted(os.listdir(book))
             if n.endswith(".html")]
    yield from html_documents(files, docbook_rule, None, tally)


def extract_debian_reference(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Debian Reference, English HTML (``usr/share/debian-reference/*.en.html``)."""
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/debian-reference"), "debian-reference HTML")
    names = sorted(os.listdir(base))
    files = [(f"debian-reference-en/{n[:-len('.en.html')]}", os.path.join(base, n)) for n in names
             if n.endswith(".en.html")]
    if not files:
        raise DataError(f"{base}: no *.en.html files (debian-reference-en)")
    tally.skip_file("not_html", len(names) - len(files))
    yield from html_documents(files, docbook_rule, None, tally)


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


def local(tag: str) -> tuple[str, str]:
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


def _walk_mallard(el, parent: str, blocks: Blocks, titles: dict, page_id: str) -> None:
    ns, name = local(el.tag)
    if ns == _IF[1:-1]:
        reason = "conditional_variant" if name == "when" else None
    elif ns and ns != _MAL[1:-1]:
        reason = "metadata"  # its:rules, TTML captions, uix thumbnails, XInclude
    elif name == "code" and parent in _MAL_CONTAINERS:
        reason = "code_block"
    else:
        reason = _MAL_DROP.get(name)
    block = name in _MAL_BLOCKS or ns == _IF[1:-1] or (reason is not None and reason not in INLINE_REASONS)
    blocks.start(name, reason, block)
    if name == "keyseq" and ns == _MAL[1:-1]:
        blocks.data("+".join(clean_whitespace("".join(k.itertext())) for k in el if local(k.tag)[1] == "key"))
    elif name == "guiseq" and ns == _MAL[1:-1]:
        blocks.data(" then ".join(clean_whitespace("".join(k.itertext())) for k in el if local(k.tag)[1] == "gui"))
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
    blocks = Blocks(needs_root=False)
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
    help_dir = require_dir(os.path.join(root, "usr/share/help"), f"{package} help")
    english = require_dir(os.path.join(help_dir, "C"), f"{package} C locale")
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
    keeper = Keeper(tally)
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
    base = require_dir(os.path.join(root, "usr/share/wordnet"), "wordnet-base data")
    keeper = Keeper(tally)
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

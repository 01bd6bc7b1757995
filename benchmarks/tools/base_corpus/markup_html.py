"""The HTML books among the markup sources: texinfo (gnu-standards), asciidoc (git-doc) and the Debian
Policy with its siblings (debian-policy).

See ``markup`` for what each source reads and what is dropped, by reason."""

from __future__ import annotations

import os
import re
from typing import Callable, Iterator

from benchmarks.tools.base_corpus.prose import (Keeper, Record, Tally, clean_whitespace, docbook_rule, emit_pieces,
                                          html_paragraphs, sphinx_root, sphinx_rule)
from benchmarks.tools.base_corpus.sources import html_documents, read_text, require_dir


_TEXINFO_NODE = re.compile(r'<div class="(?:top|chapter|section|subsection|subsubsection|appendix|appendixsec|'
                           r'appendixsubsec|unnumbered|unnumberedsec|unnumberedsubsec)" id="([^"]+)">')


def texinfo_rule(tag: str, a: dict, c: set) -> str | None:
    """Drop reasons for the elements of a texinfo (makeinfo) HTML page."""
    if "header" in c:
        return "navigation"
    if c & {"section-toc", "contents", "shortcontents", "menu"} or "contents-heading" in c:
        return "toc"
    if c & {"example", "lisp", "smallexample", "format", "display"}:
        return "code_block"
    if any(x.startswith("index-") for x in c) or "summary-letter" in c:
        return "index_page"
    if "copiable-anchor" in c:
        return "permalink"
    if tag == "dt":
        return "term"
    return docbook_rule(tag, a, c)


def _texinfo_id(node: str) -> str:
    return re.sub(r"_([0-9a-f]{4})", lambda m: chr(int(m.group(1), 16)), node)


_TEXINFO_LICENSE = re.compile(r"^(?:Copyright\b|Copyright ©|Permission is granted|This document is licensed)")


def extract_gnu_standards(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The GNU Coding Standards and Information for Maintainers of GNU Software, one document per node.

    Read from the texinfo HTML (``usr/share/doc/gnu-standards/*.html``), which
    keeps typographic quotes and marks code, examples and the index; the info
    files hold the same text with ``'quotes'`` and ``*note`` cross-references.
    Dropped: node headers (navigation), menus and the table of contents,
    titles, examples, the index, the copyright and permission notice and the
    GNU Free Documentation License node.
    """
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/doc/gnu-standards"), "gnu-standards HTML")
    keeper = Keeper(tally)
    info = os.path.join(root, "usr/share/info")
    if os.path.isdir(info):
        tally.skip_file("same_text_as_html", len(os.listdir(info)))
    for name in sorted(os.listdir(base)):
        if not name.endswith(".html"):
            tally.skip_file("not_html")
            continue
        book = name[:-5]
        markup = read_text(os.path.join(base, name))
        tally.files_read += 1
        starts = [m for m in _TEXINFO_NODE.finditer(markup)]
        front = markup[:starts[0].start()] if starts else markup
        for reason, text in html_paragraphs(front, texinfo_rule):
            tally.drop(reason or "page_chrome", text)
        for k, m in enumerate(starts):
            end = starts[k + 1].start() if k + 1 < len(starts) else len(markup)
            node = _texinfo_id(m.group(1))
            whole = None
            if node in ("Index", "Concept Index") or node.endswith("Index"):
                whole = "index_page"
            elif "Free Documentation License" in node.replace("-", " ") or node == "Copying":
                whole = "license"
            pieces = []
            for reason, text in html_paragraphs(markup[m.start():end], texinfo_rule):
                if reason is None and _TEXINFO_LICENSE.match(text):
                    reason = "license"
                pieces.append((reason, text))
            yield from emit_pieces(f"gnu-standards/{book}/{node}", pieces, keeper, tally, whole)


# --------------------------------------------------------------------------------------------------------------
# asciidoc HTML (git-doc)

def asciidoc_rule(tag: str, a: dict, c: set) -> str | None:
    """Drop reasons for the elements of an asciidoc (xhtml11) or DocBook HTML page of git-doc."""
    ident = a.get("id", "")
    if ident == "header":
        return "heading"
    if ident in ("footer", "footer-text"):
        return "page_chrome"
    if ident == "toc" or "toc" in c:
        return "toc"
    if c & {"listingblock", "literalblock", "screen", "programlisting", "literallayout"}:
        return "code_block"
    if "verseblock" in c:
        return "synopsis"
    if c & {"tableblock", "table", "informaltable"}:
        return "table"
    if tag == "table":  # an admonition's layout table (real tables are in div.tableblock)
        return None
    if "icon" in c:
        return "admonition_title"
    if "title" in c and tag == "div":
        return "heading"
    if tag == "dt" or "hdlist1" in c:
        return "term"
    return docbook_rule(tag, a, c)


_GIT_BOILERPLATE = re.compile(r"^Part of the git\(1\) suite\.?$|^Last updated \d")
#: git-doc pages that are lists of pages or commands rather than prose.
_GIT_PAGES = {"howto-index": "toc", "technical/api-index": "toc", "index": "toc"}


def extract_git_doc(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Git documentation (``usr/share/doc/git-doc``): manual pages, user manual, howtos, technical docs.

    Read from the rendered HTML (asciidoc xhtml11; the user manual is DocBook),
    one document per page: it has the ``include::`` fragments resolved, so each
    page is complete, and the asciidoc sources (``*.txt``) are not read.  There
    are no release notes in this package (``RelNotes`` would be skipped as
    ``release_notes``).  Dropped: the page header (title and NAME line), the
    footer and "Part of the git(1) suite" lines, the table of contents,
    listing and literal blocks, the verse blocks of the SYNOPSIS, tables,
    block titles, admonition labels, definition/option terms (their
    descriptions are kept), index pages.
    """
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/doc/git-doc"), "git-doc HTML")
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        rel = os.path.relpath(dirpath, base)
        for name in sorted(filenames):
            doc = os.path.normpath(os.path.join(rel, name))
            if "RelNotes" in doc:
                tally.skip_file("release_notes")
            elif name.endswith(".html"):
                files.append((doc[:-5], os.path.join(dirpath, name)))
            elif name.endswith(".txt"):
                tally.skip_file("asciidoc_source")
            else:
                tally.skip_file("not_html")
    files.sort()

    def edit(text: str, tally: Tally) -> str:
        if _GIT_BOILERPLATE.match(clean_whitespace(text)):
            tally.drop("boilerplate", text)
            return ""
        return text

    yield from html_documents([(f"git-doc/{d}", p) for d, p in files], asciidoc_rule, None, tally,
                               lambda doc: _GIT_PAGES.get(doc.split("/", 1)[1]), edit)


# --------------------------------------------------------------------------------------------------------------
# Debian Policy and its sibling documents (debian-policy)

#: Pages of the Sphinx Policy that are not prose.
_POLICY_PAGES = {"genindex": "index_page", "search": "index_page", "index": "toc",
                 "upgrading-checklist": "release_notes"}


def _plain_html_rule(tag: str, a: dict, c: set) -> str | None:
    if tag == "dt":
        return "term"
    return docbook_rule(tag, a, c)


def extract_debian_policy(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Debian Policy Manual and the other books of ``usr/share/doc/debian-policy``, one document per page.

    Read: the Sphinx HTML of the Policy (``policy.html/*.html``, the main
    content only), the chunked DocBook HTML of the Perl policy and the menu
    policy, and the single-page HTML of the debconf specification, the
    copyright-format 1.0 spec, the autopkgtest spec, the FHS 3.0 and the
    README.  Not read: the one-page copies of the chunked books
    (``*-1.html``), plain-text/PDF/EPUB renderings, the reST ``_sources``
    (same text as the HTML), static files, and the upgrading checklist (a list
    of changes per Policy version, dropped as ``release_notes``).  In a page:
    navigation, tables of contents, code, tables, titles, definition terms,
    admonition titles, legal notices; the genindex/search pages.
    """
    tally = tally if tally is not None else Tally()
    base = require_dir(os.path.join(root, "usr/share/doc/debian-policy"), "debian-policy HTML")
    keeper = Keeper(tally)

    def book_files(sub: str) -> list[tuple[str, str]]:
        d = os.path.join(base, sub)
        out = []
        for name in sorted(os.listdir(d)):
            if name.endswith(".html"):
                out.append((name[:-5], os.path.join(d, name)))
            elif os.path.isdir(os.path.join(d, name)):
                tally.skip_file("support_folder", sum(len(f) for _, _, f in os.walk(os.path.join(d, name))))
            else:
                tally.skip_file("not_html")
        return out

    jobs: list[tuple[str, Callable, Callable | None, list[tuple[str, str]], Callable[[str], str | None]]] = []
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if name == "policy.html" and os.path.isdir(path):
            jobs.append(("policy", sphinx_rule, sphinx_root, book_files(name), _POLICY_PAGES.get))
        elif name.endswith(".html") and os.path.isdir(path):  # perl-policy.html/, menu-policy.html/
            jobs.append((name[:-5], docbook_rule, None, book_files(name), lambda page: None))
        elif name.endswith(".html") and re.search(r"-1\.html$", name) and \
                os.path.isdir(os.path.join(base, name[:-7] + ".html")):
            tally.skip_file("same_text_as_chunked_html")
        elif name.endswith(".html"):
            jobs.append((name[:-5], _plain_html_rule, None, [("", path)], lambda page: None))
        elif os.path.isdir(path):
            for dp, dn, fn in os.walk(path):
                dn.sort()
                for f in sorted(fn):
                    if f.endswith(".html"):
                        jobs.append((os.path.join(name, f[:-5]), _plain_html_rule, None,
                                     [("", os.path.join(dp, f))], lambda page: None))
                    else:
                        tally.skip_file("not_html")
        else:
            tally.skip_file("not_html")
    jobs.sort(key=lambda j: j[0])
    for book, rule, is_root, files, page_reason in jobs:
        for page, path in files:
            doc = f"debian-policy/{book}/{page}" if page else f"debian-policy/{book}"
            pieces = html_paragraphs(read_text(path), rule, is_root)
            tally.files_read += 1
            yield from emit_pieces(doc, pieces, keeper, tally, page_reason(page) if page else None)

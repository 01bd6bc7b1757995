"""Debian's own texts in the base corpus: the plain-text documents of doc-debian and debian-history (its
DocBook chapters and English dedications).

See ``texts`` for what each source reads and what is dropped, by reason.
"""

from __future__ import annotations

import collections
import gzip
import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import (Keeper, Record, Tally, clean_whitespace, docbook_rule, emit_pieces,
                                          prose_verdict)
from benchmarks.tools.base_corpus.sources import html_documents, read_text, require_dir
from keyboard_lm.errors import DataError

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

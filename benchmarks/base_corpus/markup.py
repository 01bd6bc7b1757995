"""Extractors of the corpus sources written in plain-text markup (reST, POD, roff) and of more HTML books.

Each extractor has the signature of the ones in ``builder`` (``extract_<name>(root, tally)``
yielding ``(document id, paragraph)``), reads the ``dpkg-deb -x`` tree of its package and
counts everything it drops in the ``Tally`` by reason.  ``SOURCES`` lists them as
``(Debian package, extractor)``:

=====================  ==================================================================  =========================
source (user prefix)   what is read                                                        one document
=====================  ==================================================================  =========================
linux-doc              reST ``*.rst`` (and a few prose ``*.txt``) of the kernel's           one file
                       ``Documentation`` in ``linux-doc-6.1`` (``linux-doc`` depends on it)
perl-doc               POD ``usr/share/perl/5.*/pod/*.pod``                                 one ``.pod``
manpages               roff ``usr/share/man/man[1-9]/*.gz`` (English)                       one page
gnu-standards          texinfo HTML ``standards.html`` and ``maintain.html``               one node (section)
git-doc                asciidoc / DocBook HTML of ``usr/share/doc/git-doc``                one page
debian-policy          Sphinx HTML of the Policy, DocBook HTML of the Perl and menu         one page (chapter)
                       policies, the debconf spec, copyright-format, autopkgtest, FHS
=====================  ==================================================================  =========================

What is dropped, with its reason: code (``code_block``: literal blocks,
verbatim paragraphs, ``.EX``/``.nf`` regions, ``<pre>``), ``table``,
``heading``, ``term`` (definition and option-list terms, ``=item`` labels,
``.TP`` tags), ``field_list``, ``synopsis``, ``comment``, ``license``,
``toc``, ``navigation``, ``directive`` (reST directives that carry no prose),
``index_term``, ``roff_request`` and ``unknown_escape``; then the prose rule
(``too_short``, ``mostly_symbols``) and ``duplicate`` of ``builder.Keeper``.
Whole files not read are counted with ``Tally.skip_file`` by reason.  Files
are read in sorted order; nothing depends on the clock.
"""

from __future__ import annotations

import glob
import gzip
import html.entities
import os
import re
from typing import Callable, Iterator

from benchmarks.base_corpus.prose import (Keeper, Record, Tally, clean_whitespace, docbook_rule, emit_pieces,
                                          html_paragraphs, sphinx_root, sphinx_rule)
from benchmarks.base_corpus.sources import html_documents, read_text, require_dir
from keyboard_lm.errors import DataError

Piece = tuple["str | None", str]  # (drop reason or None to keep, text)


def _open_text(path: str) -> str:
    """A text file, gunzipped when it ends in ``.gz``, decoded as UTF-8 (bad bytes replaced)."""
    if not path.endswith(".gz"):
        return read_text(path)
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read: {e}") from None
    return data.decode("utf-8", errors="replace")


def _strip_gz(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


# --------------------------------------------------------------------------------------------------------------
# reStructuredText (linux-doc)

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+$")
_SIMPLE_TABLE = re.compile(r"^=+(?: +=+)+$")
_GRID_TABLE = re.compile(r"^\+[-=+]+\+$")
_FIELD = re.compile(r"^:(?!\w[\w.+-]*:`)[^:`\s][^`]*?:(?:\s|$)")
_OPTION = re.compile(r"^(?:--?|/)\w[\w-]*(?:[ =]<?[\w-]+>?)?(?:, (?:--?|/)\w[\w-]*(?:[ =]<?[\w-]+>?)?)*(?:  +|$)")
_BULLET = re.compile(r"^(?:[-*+•]|\(?(?:\d+|[a-zA-Z]|#|[ivxlcdm]+|[IVXLCDM]+)[.)])(?: +|$)")
_DIRECTIVE = re.compile(r"^\.\.\s+(?:\|[^|]+\|\s+)?([\w:.+-]+)::(?:\s+(.*))?$")
_DIAGRAM_LINE = re.compile(r"^\s*[+|]-{2,}|-{3,}\+|\+-{3,}|^\s*\|.*\|\s*$")
_CODE_LINE = re.compile(r"(?:[;{}]\s*$|^\s*(?:#include|#define|#if|\$ |# |//|/\*|\*/|>>> )|\w\(\)?;|->|==|&&|\|\|)")

_RST_ADMONITIONS = frozenset("note warning attention caution danger error hint important tip seealso only container "
                             "class rst-class compound epigraph highlights pull-quote".split())
_RST_DIRECTIVES = {  # directive -> reason its arguments and body are dropped
    **{d: "code_block" for d in "code-block code sourcecode highlight literalinclude parsed-literal doctest "
                                "kernel-cmd productionlist".split()},
    **{d: "table" for d in "table list-table csv-table flat-table tabularcolumns".split()},
    **{d: "toc" for d in "contents toctree".split()},
    **{d: "media" for d in "image figure kernel-figure kernel-render graphviz svg".split()},
    **{d: "include" for d in "include kernel-include kernel-doc kernel-feat kernel-abi maintainers-include "
                             "literalinclude".split()},
    "math": "math", "raw": "markup", "rubric": "heading",
    **{d: "front_matter" for d in "sectionauthor codeauthor moduleauthor".split()},
    **{d: "directive" for d in "default-role role index meta cssclass c:namespace c:namespace-push "
                               "c:namespace-pop title footer header".split()},
}
_RST_TITLED = frozenset("admonition topic sidebar".split())  # first argument is a title, the body is prose

_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_ROLE = re.compile(r":[\w][\w:.+-]*:`([^`]*)`")
_RST_ROLE_AFTER = re.compile(r"`([^`]*)`:[\w][\w:.+-]*:")
_RST_INTERPRETED = re.compile(r"`([^`]+)`(?:__?)?")
_RST_FOOTNOTE_REF = re.compile(r"\s?\[(?:#[\w-]*|\*|\d+|[\w-]+)\]_")
_RST_SUBST = re.compile(r"\|([^|\s][^|]*?)\|(?:__?)?")
_RST_STRONG = re.compile(r"(?<![\w*])\*\*(?=\S)(.+?)(?<=\S)\*\*(?![\w*])")
_RST_EMPH = re.compile(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*\\])\*(?![\w*])")
_RST_REF_WORD = re.compile(r"(?<![\w_])([A-Za-z0-9][\w.-]*?[A-Za-z0-9])__?(?=[\s.,;:!?)\]'\"]|$)")


def _target_text(content: str) -> str:
    """``text <target>`` -> text; ``~a.b`` -> b; a bare target stays."""
    m = re.fullmatch(r"\s*(.*?)\s*<[^<>]*>\s*", content, re.S)
    if m and m.group(1):
        return m.group(1)
    if m:
        return content.strip()[1:-1]
    content = content.strip().lstrip("!")
    if content.startswith("~"):
        content = re.split(r"[.:]", content[1:])[-1]
    return content


def rst_inline(text: str, pieces: list[Piece]) -> str:
    """reST inline markup to plain text: roles, literals, emphasis, references; footnote marks dropped."""
    saved: list[str] = []

    def save(s: str) -> str:
        saved.append(s)
        return f"\x00{len(saved) - 1}\x00"

    text = _RST_LITERAL.sub(lambda m: save(m.group(1)), text)
    text = _RST_ROLE.sub(lambda m: save(_target_text(m.group(1))), text)
    text = _RST_ROLE_AFTER.sub(lambda m: save(_target_text(m.group(1))), text)
    text = _RST_INTERPRETED.sub(lambda m: save(_target_text(m.group(1))), text)

    def footnote(m):
        pieces.append(("footnote_marker", m.group(0).strip()))
        return ""

    text = _RST_FOOTNOTE_REF.sub(footnote, text)
    text = _RST_SUBST.sub(lambda m: m.group(1), text)
    text = _RST_STRONG.sub(lambda m: m.group(1), text)
    text = _RST_EMPH.sub(lambda m: m.group(1), text)
    text = _RST_REF_WORD.sub(lambda m: m.group(1), text)
    text = re.sub(r"\\(.)", lambda m: "" if m.group(1) == " " else m.group(1), text)
    return re.sub("\x00(\\d+)\x00", lambda m: saved[int(m.group(1))], text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _dedent(lines: list[str]) -> list[str]:
    ind = min((_indent(x) for x in lines if x.strip()), default=0)
    return [x[ind:] for x in lines]


def _indented_chunk(lines: list[str], i: int, min_indent: int = 1) -> int:
    """The end of the run of lines from ``i`` that are blank or indented at least ``min_indent``."""
    j = i
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) >= min_indent):
        j += 1
    while j > i and not lines[j - 1].strip():
        j -= 1
    return j


class _RST:
    """A line-based reST reader: block structure to (reason, text) pieces, in document order."""

    def __init__(self):
        self.pieces: list[Piece] = []

    def drop(self, reason: str, lines: list[str]) -> None:
        self.pieces.append((reason, clean_whitespace(" ".join(lines))))

    def para(self, lines: list[str]) -> None:
        if len(lines) > 1 and 2 * sum(bool(_CODE_LINE.search(x)) for x in lines) > len(lines):
            self.drop("code_block", lines)
            return
        if any(_DIAGRAM_LINE.search(x) for x in lines):
            self.drop("diagram", lines)
            return
        self.pieces.append((None, clean_whitespace(rst_inline(" ".join(x.strip() for x in lines), self.pieces))))

    def directive(self, name: str, arg: str, body: list[str]) -> None:
        k = 0  # options at the start of the body
        while k < len(body) and body[k].strip().startswith(":") and _FIELD.match(body[k].strip()):
            k += 1
        options, content = body[:k], body[k:]
        self.drop("directive", options)
        name = name.lower()
        if name in _RST_ADMONITIONS:
            if name not in ("only", "class", "rst-class", "container"):
                self.drop("admonition_title", [name])
                content = [arg] + [""] + content if arg else content
            else:
                self.drop("directive", [arg])
            self.block(_dedent(content))
        elif name in _RST_TITLED:
            self.drop("heading", [arg])
            self.block(_dedent(content))
        elif name in _RST_DIRECTIVES:
            self.drop(_RST_DIRECTIVES[name], [arg] + content)
        elif ":" in name or name in ("function", "describe", "object"):  # domain object: signature + prose body
            self.drop("signature", [arg])
            self.block(_dedent(content))
        else:
            self.drop("directive", [arg] + content)

    def explicit(self, lines: list[str]) -> None:
        first = lines[0].strip()
        body = _dedent(lines[1:])
        m = _DIRECTIVE.match(first)
        if m and not first.startswith(".. |"):
            self.directive(m.group(1), m.group(2) or "", body)
        elif first.startswith(".. |"):
            self.drop("substitution", lines)
        elif re.match(r"^\.\. _", first):
            self.drop("target", lines)
        else:
            fm = re.match(r"^\.\.\s+\[[^\]]+\]\s*(.*)$", first)
            if fm:  # a footnote or citation: its text is prose
                self.block(([fm.group(1), ""] if fm.group(1) else []) + body)
            elif re.search(r"SPDX-License-Identifier|[Cc]opyright|[Ll]icen[cs]e", " ".join(lines)):
                self.drop("license", lines)
            else:
                self.drop("comment", lines)

    def block(self, lines: list[str]) -> None:
        n = len(lines)
        i = 0
        literal = False  # the previous paragraph ended with "::"
        while i < n:
            line = lines[i]
            s = line.strip()
            if not s:
                i += 1
                continue
            if _indent(line) > 0:  # literal block, block quote or a stray indented chunk
                j = _indented_chunk(lines, i)
                chunk = lines[i:j]
                if literal:
                    self.drop("code_block", chunk)
                else:
                    self.quoted(_dedent(chunk))
                literal = False
                i = j
                continue
            literal = False
            nxt = lines[i + 1].strip() if i + 1 < n else ""
            nnx = lines[i + 2].strip() if i + 2 < n else ""
            if s.startswith(".. ") or s == "..":
                j = _indented_chunk(lines, i + 1)
                self.explicit(lines[i:j])
                i = j
            elif _ADORNMENT.match(s) and nxt and not _ADORNMENT.match(nxt) and nnx == s and len(s) >= 2:
                self.drop("heading", [nxt])  # overlined title
                i += 3
            elif _ADORNMENT.match(s) and len(s) >= 4 and not nxt:
                i += 1  # a transition
            elif nxt and _ADORNMENT.match(nxt) and len(nxt) >= 2 and not _GRID_TABLE.match(s) \
                    and (len(nxt) >= min(len(s), 3)):
                self.drop("heading", [s])
                i += 2
            elif _GRID_TABLE.match(s):
                j = i
                while j < n and lines[j].strip():
                    j += 1
                self.drop("table", lines[i:j])
                i = j
            elif _SIMPLE_TABLE.match(s) or (re.fullmatch(r"=+", s) and len(s) >= 2 and nxt):
                j = i + 1
                while j < n:
                    t = lines[j].strip()
                    if (_SIMPLE_TABLE.match(t) or re.fullmatch(r"=+", t)) and (j + 1 >= n or not lines[j + 1].strip()):
                        j += 1
                        break
                    j += 1
                self.drop("table", lines[i:j])
                i = j
            elif _FIELD.match(s):
                j = _indented_chunk(lines, i + 1)
                self.drop("field_list", lines[i:j])
                i = j
            elif s.startswith(">>>"):
                j = i
                while j < n and lines[j].strip():
                    j += 1
                self.drop("code_block", lines[i:j])
                i = j
            elif s.startswith("| ") or s == "|":
                j = i
                while j < n and lines[j].strip().startswith("|"):
                    j += 1
                self.para([x.strip()[1:] for x in lines[i:j]])
                i = j
            elif _OPTION.match(s):
                m = _OPTION.match(s)
                self.drop("term", [s[:m.end()]])
                j = _indented_chunk(lines, i + 1)
                rest = s[m.end():].strip()
                self.block(([rest] if rest else []) + _dedent(lines[i + 1:j]))
                i = j
            elif _BULLET.match(s):
                m = _BULLET.match(s)
                col = m.end()
                j = i + 1
                while j < n and lines[j].strip() and _indent(lines[j]) == 0 and not _BULLET.match(lines[j]) \
                        and not (j + 1 < n and _ADORNMENT.match(lines[j + 1].strip())) \
                        and not lines[j].startswith(".. "):
                    j += 1  # lazy continuation lines
                k = _indented_chunk(lines, j)
                self.block([s[col:]] + [x.strip() for x in lines[i + 1:j]] + _dedent(lines[j:k]))
                i = k
            else:
                j = i + 1
                while j < n and lines[j].strip() and _indent(lines[j]) == 0:
                    if j + 1 < n and _ADORNMENT.match(lines[j + 1].strip()) and lines[j + 1].strip() \
                            and len(lines[j + 1].strip()) >= 3 and not lines[j].startswith(".."):
                        break  # a title right under the paragraph
                    j += 1
                if j < n and lines[j].strip() and _indent(lines[j]) > 0 and j == i + 1:
                    # definition list: this line is the term, the indented lines its definition
                    k = _indented_chunk(lines, j)
                    if _CODE_LINE.search(s):  # unindented code with an indented body: "if (x) {"
                        self.drop("code_block", lines[i:k])
                    else:
                        self.drop("term", [s])
                        self.block(_dedent(lines[j:k]))
                    i = k
                    continue
                para = [x.strip() for x in lines[i:j]]
                text = " ".join(para)
                if text.endswith("::"):
                    literal = True
                    text = text[:-2].rstrip() if text.endswith(" ::") or text == "::" else text[:-1]
                    para = [text] if text else []
                if para:
                    self.para(para)
                i = j

    def quoted(self, lines: list[str]) -> None:
        """A block quote: read as reST, but a paragraph with a line of code in it is code."""
        sub = _RST()
        sub.block(lines)
        for reason, text in sub.pieces:
            self.pieces.append((reason, text))
        # re-check kept paragraphs of the quote for code: whole quote is code when most of it looks like code
        code = [x for x in lines if x.strip() and _CODE_LINE.search(x)]
        if code and len(code) * 3 >= len([x for x in lines if x.strip()]):
            start = len(self.pieces) - len(sub.pieces)
            self.pieces[start:] = [(r or "code_block", t) for r, t in self.pieces[start:]]


def rst_paragraphs(text: str) -> list[Piece]:
    """(drop reason or None, text) of a reST document, in order."""
    lines = [x.rstrip() for x in text.expandtabs(8).replace("\r\n", "\n").split("\n")]
    reader = _RST()
    reader.block(lines)
    return [(r, t) for r, t in reader.pieces if t]


#: Kernel ``.txt`` files that are not prose: parameter lists, device tables, scripts, diagrams, bibliographies.
_LINUX_NOT_PROSE = frozenset({"admin-guide/kernel-parameters.txt", "admin-guide/devices.txt",
                              "admin-guide/kdump/gdbmacros.txt", "admin-guide/aoe/udev.txt",
                              "networking/mac80211-auth-assoc-deauth.txt", "RCU/RTFP.txt"})


def extract_linux_doc(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Linux kernel's ``Documentation`` (reST), one document per file.

    ``linux-doc`` is a metapackage depending on ``linux-doc-6.1``: ``root`` is
    the extracted ``linux-doc-6.1`` (``usr/share/doc/linux-doc-*/Documentation``).
    Read: ``*.rst`` and the prose ``*.txt`` (plain or gzipped).  Not read:
    ``translations/`` (other languages), ``ABI/`` (attribute lists),
    ``devicetree/bindings`` schemas, ``features/`` support matrices, the prebuilt
    ``html`` (the same text), and other files (YAML, scripts, images...).  In a
    file: section titles, tables (grid and simple), literal blocks (``::``),
    block quotes that are code, code/table/include/figure directives, field
    and option lists' fields, definition terms, comments and the SPDX license
    line are dropped; admonitions and footnotes are kept as prose; roles,
    literals, emphasis and references become their text.
    """
    tally = tally if tally is not None else Tally()
    found = sorted(glob.glob(os.path.join(glob.escape(root), "usr/share/doc/linux-doc-*/Documentation")))
    if not found:
        raise DataError(f"{root}: no usr/share/doc/linux-doc-*/Documentation (extract linux-doc-6.1)")
    base = found[-1]
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        keep_dirs = []
        for d in sorted(dirnames):
            sub = os.path.normpath(os.path.join(rel, d))
            reason = {"translations": "other_language", "ABI": "abi_list", "features": "feature_matrix"}.get(sub)
            if sub == "devicetree/bindings":
                reason = None  # its reST files are prose; its YAML and .txt bindings are skipped below
            if reason:
                tally.skip_file(reason, sum(len(f) for _, _, f in os.walk(os.path.join(dirpath, d))))
            else:
                keep_dirs.append(d)
        dirnames[:] = keep_dirs
        for name in sorted(filenames):
            rel_name = os.path.normpath(os.path.join(rel, _strip_gz(name)))
            if rel_name.endswith(".rst"):
                pass
            elif rel_name.endswith(".txt") and not rel_name.startswith("devicetree/bindings/") \
                    and rel_name not in _LINUX_NOT_PROSE:
                pass
            else:
                tally.skip_file("not_prose_file")
                continue
            files.append((rel_name, os.path.join(dirpath, name)))
    keeper = Keeper(tally)
    for rel_name, path in sorted(files):
        text = _open_text(path)
        tally.files_read += 1
        doc = "linux-doc/" + rel_name.rsplit(".", 1)[0]
        yield from emit_pieces(doc, rst_paragraphs(text), keeper, tally)


# --------------------------------------------------------------------------------------------------------------
# POD (perl-doc)

_POD_CODE = re.compile(r"([A-Z])<")


def _pod_entity(name: str) -> str:
    name = name.strip()
    special = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}
    if name in special:
        return special[name]
    try:
        if name.lower().startswith("0x"):
            return chr(int(name, 16))
        if name.isdigit():
            return chr(int(name, 8) if name.startswith("0") and len(name) > 1 else int(name))
    except (ValueError, OverflowError):
        return ""
    cp = html.entities.name2codepoint.get(name)
    return chr(cp) if cp else ""


def _pod_parse(s: str, i: int, closer: str | None, pieces: list[Piece]) -> tuple[str, int]:
    """Text of ``s`` from ``i`` to ``closer`` (a run of ``>``; None = end), with formatting codes applied."""
    out = []
    n = len(s)
    while i < n:
        if closer is not None:
            if closer == ">" and s[i] == ">":
                return "".join(out), i + 1
            if closer != ">":
                m = re.compile(r"\s+" + re.escape(closer)).match(s, i)
                if m:
                    return "".join(out), m.end()
        m = _POD_CODE.match(s, i)
        if m:
            code = m.group(1)
            j = m.end()
            k = j
            while k < n and s[k] == "<":
                k += 1
            if k > j and k < n and s[k].isspace():  # C<< ... >>
                inner, i = _pod_parse(s, k, ">" * (k - j + 1), pieces)
                inner = inner.strip()
            else:
                inner, i = _pod_parse(s, j, ">", pieces)
            out.append(_pod_apply(code, inner, pieces))
            continue
        out.append(s[i])
        i += 1
    return "".join(out), i


def _pod_apply(code: str, inner: str, pieces: list[Piece]) -> str:
    if code == "E":
        return _pod_entity(inner)
    if code == "X":
        pieces.append(("index_term", inner))
        return ""
    if code == "Z":
        return ""
    if code == "L":
        if "|" in inner:
            return inner.split("|", 1)[0]
        if re.match(r"^\w+:[^:\s]\S*$", inner):  # a URL
            return inner
        name, _, section = inner.partition("/")
        section = section.strip().strip('"')
        if section:
            return f"{section} in {name}" if name else section
        return name
    return inner  # B I C F S and unknown codes: their text


def pod_inline(text: str, pieces: list[Piece]) -> str:
    return _pod_parse(text, 0, None, pieces)[0]


#: =head1 sections that are not prose, by reason.
_POD_SECTIONS = {"NAME": "heading", "SYNOPSIS": "synopsis", "COPYRIGHT": "license", "LICENSE": "license",
                 "LICENCE": "license", "COPYRIGHT AND LICENSE": "license", "COPYRIGHT AND LICENCE": "license",
                 "AUTHOR AND COPYRIGHT": "license", "AUTHORS AND COPYRIGHT": "license", "AUTHOR": "front_matter",
                 "AUTHORS": "front_matter"}


def pod_paragraphs(text: str) -> list[Piece]:
    """(drop reason or None, text) of a POD document, in order."""
    pieces: list[Piece] = []
    paragraphs = re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n"))
    in_pod = False
    begin: str | None = None  # the open =begin format
    section: str | None = None
    for para in paragraphs:
        if not para.strip():
            continue
        para = para.strip("\n")
        if not in_pod:
            if re.match(r"^=[a-zA-Z]", para):
                in_pod = True
            else:
                pieces.append(("not_pod", para))
                continue
        m = re.match(r"^=(\w+)\s*(.*)$", para, re.S)
        if begin is not None:
            if m and m.group(1) == "end":
                begin = None
            else:
                pieces.append(("format_block", para))
            continue
        if m:
            cmd, arg = m.group(1), m.group(2).strip()
            if cmd == "cut":
                in_pod = False
            elif cmd.startswith("head"):
                pieces.append(("heading", pod_inline(arg, pieces)))
                if cmd == "head1":
                    section = clean_whitespace(pod_inline(arg, [])).upper()
            elif cmd == "begin":
                begin = arg
                pieces.append(("format_block", arg))
            elif cmd == "for":
                pieces.append(("format_block", arg))
            elif cmd == "item":
                bm = re.match(r"^(?:\*|\d+\.?)(?:\s+|$)", arg)
                if bm and arg[bm.end():].strip():  # a bullet or number with its text
                    pieces.append((_POD_SECTIONS.get(section or ""), clean_whitespace(pod_inline(arg[bm.end():],
                                                                                                     pieces))))
                elif not bm:
                    pieces.append(("term", clean_whitespace(pod_inline(arg, pieces))))
            elif cmd in ("over", "back", "pod", "encoding", "end"):
                pieces.append(("directive", arg))
            else:
                pieces.append(("directive", para))
            continue
        if para[:1] in (" ", "\t"):
            pieces.append(("code_block", para))
            continue
        kept = clean_whitespace(pod_inline(para, pieces))
        pieces.append((_POD_SECTIONS.get(section or ""), kept))
    return [(r, clean_whitespace(t)) for r, t in pieces if clean_whitespace(t)]


#: .pod files that are not prose, by reason.
_PERL_PAGES = {"perltoc": "toc", "perlgpl": "license", "perlartistic": "license", "perluniprops": "table",
               "perlmodlib": "toc", "perlcheat": "table", "perlreref": "table"}


def extract_perl_doc(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Perl manual (POD ``usr/share/perl/5.*/pod/*.pod``), one document per ``.pod``.

    Dropped: verbatim (indented) paragraphs as code, ``=head`` titles,
    ``=item`` labels (a ``=item *`` bullet's text is kept; the paragraphs under
    items are kept), ``=begin``/``=end`` and ``=for`` blocks, ``X<>`` index
    entries, the NAME, SYNOPSIS, AUTHOR and COPYRIGHT/LICENSE sections, and
    whole pages that are not prose (``perltoc``, ``perlmodlib`` module list,
    the GPL and Artistic licenses, ``perluniprops``, the cheat sheet and regex
    quick reference).  Formatting codes become their text: ``L<text|link>``
    its text, ``E<lt>`` the character.  The ``perl5*delta`` pages (what changed
    in each release) are written as prose and are kept.  The man pages in the
    package are the same text rendered, and are not read.
    """
    tally = tally if tally is not None else Tally()
    found = sorted(glob.glob(os.path.join(glob.escape(root), "usr/share/perl/5.*/pod")))
    if not found:
        raise DataError(f"{root}: no usr/share/perl/5.*/pod (perl-doc)")
    pod_dir = found[-1]
    man = os.path.join(root, "usr/share/man")
    if os.path.isdir(man):
        tally.skip_file("rendered_man_page", sum(len(f) for _, _, f in os.walk(man)))
    keeper = Keeper(tally)
    for name in sorted(os.listdir(pod_dir)):
        if not name.endswith(".pod"):
            tally.skip_file("not_pod")
            continue
        page = name[:-4]
        text = _open_text(os.path.join(pod_dir, name))
        tally.files_read += 1
        yield from emit_pieces(f"perl-doc/{page}", pod_paragraphs(text), keeper, tally, _PERL_PAGES.get(page))


# --------------------------------------------------------------------------------------------------------------
# roff man pages (manpages)

_ROFF_CHARS = {
    "em": "—", "en": "–", "hy": "-", 'aq': "'", 'dq': '"', "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "bu": "•",
    "co": "©", "rg": "®", "tm": "™", "mu": "×", "di": "÷", ">=": "≥", "<=": "≤", "!=": "≠", "==": "≡", "->": "→",
    "<-": "←", "<>": "↔", "ha": "^", "ti": "~", "ga": "`", "aa": "´", "dg": "†", "dd": "‡", "de": "°", "pl": "+",
    "mi": "−", "sl": "/", 'rs': '\\', "ba": "|", "br": "│", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "⟨",
    "ra": "⟩", "fo": "‹", "fc": "›", "Fo": "«", "Fc": "»", "ss": "ß", "ps": "¶", "sc": "§", "ct": "¢", "Po": "£",
    "Eu": "€", "eu": "€", "Ye": "¥", "+-": "±", "12": "½", "14": "¼", "34": "¾", "sq": "□", "ci": "○", "**": "∗",
    "if": "∞", "ap": "∼", "~~": "≈", "pc": "·", "r!": "¡", "r?": "¿", "fm": "′", "sd": "″", "at": "@", "sh": "#",
    "Do": "$", "'a": 'á', "'e": 'é', "'i": 'í', "'o": 'ó', "'u": 'ú', "`a": "à", "`e": "è", ":a": "ä", ":o": "ö",
    ":u": "ü", ":A": "Ä", ":O": "Ö", ":U": "Ü", "^a": "â", "^e": "ê", "^o": "ô", ",c": "ç", "~n": "ñ", "oa": "å",
}
_ROFF_STRINGS = {"lq": "“", "rq": "”", "R": "®", "Tm": "™", "S": "", "(lq": "“", "(rq": "”"}

_ROFF_ESCAPE = re.compile(
    r"\\(?:"
    r"(?P<font>f(?:\[[^\]]*\]|\(..|.))"
    r"|(?P<size>s(?:[-+]?\d|\(\d\d|\[[^\]]*\]|[-+]\(\d\d))"
    r"|(?P<char>\((?P<c2>..)|\[(?P<cn>[^\]]*)\])"
    r"|(?P<str>\*(?:\((?P<s2>..)|\[(?P<sn>[^\]]*)\]|(?P<s1>.)))"
    r"|(?P<reg>n[-+]?(?:\(..|\[[^\]]*\]|.))"
    r"|(?P<motion>[hvwolLDXZbxSRN]'[^']*')"
    r"|(?P<kill>[&)%:c|^,/!{}du]|$)"
    r"|(?P<space>[ ~0])"
    r"|(?P<lit>[-e\\.'`\"])"
    r"|(?P<other>.))")


def roff_text(text: str, pieces: list[Piece]) -> str:
    """A roff text line with its escapes resolved (fonts, sizes and zero-width escapes removed)."""
    text = re.sub(r'\\".*$', "", text)  # comment to the end of the line

    def sub(m):
        if m.group("font") or m.group("size") or m.group("kill") is not None:
            return ""
        if m.group("char"):
            name = m.group("c2") or m.group("cn") or ""
            if name in _ROFF_CHARS:
                return _ROFF_CHARS[name]
            u = re.fullmatch(r"u([0-9A-Fa-f]{4,6})(?:_.*)?", name)
            if u:
                return chr(int(u.group(1), 16))
            pieces.append(("unknown_escape", m.group(0)))
            return ""
        if m.group("str"):
            name = m.group("s2") or m.group("sn") or m.group("s1") or ""
            if name in _ROFF_STRINGS:
                return _ROFF_STRINGS[name]
            pieces.append(("unknown_escape", m.group(0)))
            return ""
        if m.group("reg") or m.group("motion"):
            pieces.append(("unknown_escape", m.group(0)))
            return ""
        if m.group("space"):
            return " "
        lit = m.group("lit")
        if lit:
            return {"-": "-", "e": "\\", "\\": "\\", ".": ".", "'": "´", "`": "`", '"': ""}[lit]
        pieces.append(("unknown_escape", m.group(0)))
        return ""

    return _ROFF_ESCAPE.sub(sub, text)


def _roff_args(s: str) -> list[str]:
    """The arguments of a request line: space separated, ``"quoted with "" inside"``."""
    args, i, n = [], 0, len(s)
    while i < n:
        if s[i] in " \t":
            i += 1
            continue
        if s[i] == '"':
            j, buf = i + 1, []
            while j < n:
                if s[j] == '"':
                    if j + 1 < n and s[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(s[j])
                j += 1
            args.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and s[j] not in " \t":
                j += 1 + (s[j] == "\\")
            args.append(s[i:j])
            i = j
    return args


_ROFF_BREAKS = frozenset("PP P LP IP TP TQ HP sp br RS RE in ti INDENT UNINDENT PD bp ne".split())
_ROFF_FONT_SPACED = frozenset("B I SM SB".split())
_ROFF_FONT_ALTERNATING = frozenset("BR RB IR RI BI IB".split())
_ROFF_REGIONS = {"EX": ("EE", "code_block"), "nf": ("fi", "code_block"), "TS": ("TE", "table"),
                 "SY": ("YS", "synopsis"), "EQ": ("EN", "math"), "PS": ("PE", "media"), "de": ("..", "macro"),
                 "ig": ("..", "comment"), "Vb": ("Ve", "code_block")}
_MAN_SECTIONS = {"NAME": "heading", "SYNOPSIS": "synopsis", "COPYRIGHT": "license", "COLOPHON": "colophon",
                 "SEE ALSO": "see_also", "AUTHORS": "front_matter", "AUTHOR": "front_matter"}


def man_paragraphs(text: str) -> list[Piece]:
    """(drop reason or None, text) of a roff man page, in order."""
    pieces: list[Piece] = []
    buf: list[str] = []
    section: str | None = None
    region: tuple[str, str] | None = None  # (end request, reason) of an open .EX/.nf/.TS/... region
    region_lines: list[str] = []
    pending: str | None = None  # the next text line is a tag ("term") or a title ("heading")

    def flush():
        if buf:
            t = clean_whitespace(" ".join(buf))
            buf.clear()
            if t:
                pieces.append((_MAN_SECTIONS.get(section or ""), t))

    for raw in text.replace("\r\n", "\n").split("\n"):
        if region is not None:
            stripped = raw.strip()
            if region[0] == "..":
                end = stripped == ".."
            else:
                end = re.match(r"^[.']\s*" + re.escape(region[0]) + r"(?:\s|$)", stripped) is not None
            if end:
                reason = "synopsis" if section == "SYNOPSIS" else region[1]
                pieces.append((reason, clean_whitespace(roff_text(" ".join(region_lines), []))))
                region_lines = []
                region = None
            else:
                region_lines.append(raw)
            continue
        if re.match(r"^(?:[.']\s*)?\\\"", raw):
            body = raw.split('"', 1)[1]
            pieces.append(("license" if re.search(r"[Cc]opyright|[Ll]icen[cs]e|SPDX", body) else "comment", body))
            continue
        if raw.startswith((".", "'")):
            m = re.match(r"^[.']\s*(\S*)\s*(.*)$", raw)
            req, rest = m.group(1), m.group(2)
            if req in _ROFF_REGIONS:
                flush()
                region = _ROFF_REGIONS[req]
                region_lines = [rest] if req not in ("de", "ig") else []
                continue
            if req in ("SH", "SS", "TH"):
                flush()
                pending = None
                title = clean_whitespace(roff_text(" ".join(_roff_args(rest)), pieces))
                pieces.append(("heading", title))
                if req == "SH":
                    section = title.upper()
                if not title and req != "TH":
                    pending = req  # the title is on the next line
                continue
            if req in _ROFF_BREAKS:
                flush()
                pending = "term" if req in ("TP", "TQ") else None
                if req in ("IP", "HP") and rest:
                    args = _roff_args(rest)
                    tag = clean_whitespace(roff_text(args[0], pieces)) if args else ""
                    if tag and not re.fullmatch(r"[•*\-o]|\(?\w{1,3}[.)]", tag):
                        pieces.append(("term", tag))
                continue
            if req in _ROFF_FONT_SPACED or req in _ROFF_FONT_ALTERNATING:
                args = _roff_args(rest)
                line = roff_text((" " if req in _ROFF_FONT_SPACED else "").join(args), pieces)
            elif req in ("UR", "MT"):
                pieces.append(("url", rest))
                continue
            elif req in ("UE", "ME"):
                line = roff_text(rest, pieces)
                if buf and line and not line[:1].isspace():
                    buf[-1] += line
                    continue
            elif req in ("", "."):
                continue
            else:
                pieces.append(("roff_request", rest))
                continue
        else:
            line = roff_text(raw, pieces)
            if not line.strip():
                if not raw.strip():
                    flush()
                continue
        if pending:
            if pending == "SH":
                section = clean_whitespace(line).upper()
            pieces.append(("term" if pending == "term" else "heading", line))
            pending = None
            continue
        buf.append(line)
    flush()
    if region is not None:
        pieces.append((region[1], clean_whitespace(" ".join(region_lines))))
    return [(r, clean_whitespace(t)) for r, t in pieces if clean_whitespace(t)]


def extract_manpages(root: str, tally: Tally | None = None) -> Iterator[Record]:
    """The Linux man-pages (``usr/share/man/man[1-9]/*``, roff, gzipped), one document per page.

    Only the English pages (``man1`` ... ``man9`` directly under
    ``usr/share/man``) are read; ``.so`` pages (links to another page) are not
    read.  Dropped: the NAME line, the SYNOPSIS, SEE ALSO, COLOPHON and AUTHORS
    sections, section titles, ``.TP``/``.IP`` tags (the paragraphs under them
    are kept), ``.EX``/``.nf`` examples, ``.TS`` tables, ``.SY`` synopses,
    macro definitions, comments, URLs of ``.UR`` links, other requests.  Font
    macros (``.B``, ``.BR``...) and escapes become their text; named
    characters are mapped (unknown ones dropped as ``unknown_escape``).
    """
    tally = tally if tally is not None else Tally()
    man = require_dir(os.path.join(root, "usr/share/man"), "manpages roff pages")
    keeper = Keeper(tally)
    for d in sorted(os.listdir(man)):
        path = os.path.join(man, d)
        if not os.path.isdir(path):
            tally.skip_file("not_man_page")
            continue
        if not re.fullmatch(r"man[1-9]", d):
            tally.skip_file("other_language", sum(len(f) for _, _, f in os.walk(path)))
            continue
        for name in sorted(os.listdir(path)):
            if os.path.islink(os.path.join(path, name)):  # another name of a page read under its own name
                tally.skip_file("symlink")
                continue
            text = _open_text(os.path.join(path, name))
            if re.match(r"^\.so\s", text.lstrip()) and len(text.strip().splitlines()) <= 3:
                tally.skip_file("so_link")
                continue
            tally.files_read += 1
            yield from emit_pieces(f"manpages/{_strip_gz(name)}", man_paragraphs(text), keeper, tally)


# --------------------------------------------------------------------------------------------------------------
# texinfo HTML (gnu-standards)

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


SOURCES = (
    ("linux-doc", extract_linux_doc),
    ("perl-doc", extract_perl_doc),
    ("manpages", extract_manpages),
    ("gnu-standards", extract_gnu_standards),
    ("git-doc", extract_git_doc),
    ("debian-policy", extract_debian_policy),
)

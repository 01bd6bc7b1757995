"""reStructuredText, as the kernel's ``Documentation`` writes it: the linux-doc source of the base corpus.

See ``markup`` for what each source reads and what is dropped, by reason."""

from __future__ import annotations

import glob
import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Piece, Record, Tally, clean_whitespace, emit_pieces
from benchmarks.tools.base_corpus.sources import open_text, strip_gz
from keyboard_lm.errors import DataError


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
            rel_name = os.path.normpath(os.path.join(rel, strip_gz(name)))
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
        text = open_text(path)
        tally.files_read += 1
        doc = "linux-doc/" + rel_name.rsplit(".", 1)[0]
        yield from emit_pieces(doc, rst_paragraphs(text), keeper, tally)

"""POD, as Perl's manual pages write it: the perl-doc source of the base corpus.

See ``markup`` for what each source reads and what is dropped, by reason."""

from __future__ import annotations

import glob
import html.entities
import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Piece, Record, Tally, clean_whitespace, emit_pieces
from benchmarks.tools.base_corpus.sources import open_text
from keyboard_lm.errors import DataError


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
        text = open_text(os.path.join(pod_dir, name))
        tally.files_read += 1
        yield from emit_pieces(f"perl-doc/{page}", pod_paragraphs(text), keeper, tally, _PERL_PAGES.get(page))

"""roff man pages: the manpages source of the base corpus.

See ``markup`` for what each source reads and what is dropped, by reason."""

from __future__ import annotations

import os
import re
from typing import Iterator

from benchmarks.tools.base_corpus.prose import Keeper, Piece, Record, Tally, clean_whitespace, emit_pieces
from benchmarks.tools.base_corpus.sources import open_text, require_dir, strip_gz


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
            text = open_text(os.path.join(path, name))
            if re.match(r"^\.so\s", text.lstrip()) and len(text.strip().splitlines()) <= 3:
                tally.skip_file("so_link")
                continue
            tally.files_read += 1
            yield from emit_pieces(f"manpages/{strip_gz(name)}", man_paragraphs(text), keeper, tally)

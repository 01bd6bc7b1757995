"""The extra base-corpus extractors (benchmarks/tools/base_corpus/texts.py) on tiny package trees built here."""

import gzip
import random
import struct

import pytest

from benchmarks.tools.base_corpus import texts
from benchmarks.tools.base_corpus.prose import Tally
from keyboard_lm.errors import DataError
from tests.test_base_corpus import _b64, _write

pytestmark = pytest.mark.bench


def _dropped(tally):
    """reason -> pieces dropped."""
    return {reason: pieces for reason, (pieces, _) in tally.dropped.items()}


# ---- bible-kjv-text: an LZW writer like compress(1), to build a bible.data here


def _lzw(data: bytes, maxbits: int = 16) -> bytes:
    """compress(1) block-mode code stream of ``data`` (no header): codes in groups padded at each width change."""
    table = {bytes((i,)): i for i in range(256)}
    next_code, n_bits, maxcode = 257, 9, 511
    acc = nbits = 0
    group_bits = 0
    out = bytearray()

    def emit(code):
        nonlocal acc, nbits, group_bits, n_bits, maxcode
        acc |= code << nbits
        nbits += n_bits
        group_bits += n_bits
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
        if next_code > maxcode and n_bits < maxbits:
            pad = -group_bits % (n_bits * 8)
            nbits += pad  # zero bits
            while nbits >= 8:
                out.append(acc & 0xFF)
                acc >>= 8
                nbits -= 8
            group_bits = 0
            n_bits += 1
            maxcode = (1 << n_bits) - 1 if n_bits < maxbits else 1 << maxbits

    w = b""
    for byte in data:
        wc = w + bytes((byte,))
        if wc in table:
            w = wc
            continue
        emit(table[w])
        if next_code < 1 << maxbits:
            table[wc] = next_code
            next_code += 1
        w = bytes((byte,))
    if w:
        emit(table[w])
    if nbits:
        out.append(acc & 0xFF)
    return bytes(out)


def _bible_data(text: str, block_size: int) -> bytes:
    raw = text.encode("ascii")
    blocks = [_lzw(raw[i:i + block_size]) for i in range(0, len(raw), block_size)]
    header = b"EC02Compressed Data File".ljust(0x50, b"\0") + struct.pack(">III", 0, block_size, len(blocks))
    offsets, pos = [], len(header) + 4 * (len(blocks) + 1) + 3
    for block in blocks:
        offsets.append(pos)
        pos += len(block)
    offsets.append(pos)
    return header + struct.pack(f">{len(offsets)}I", *offsets) + b"\x1f\x9d\x90" + b"".join(blocks)


BIBLE_TEXT = (
    "Holy Bible, Authorized (King James) Version.  Textfile 930105.\n"
    "Ge1:1 In the beginning God created the heaven and the earth.\n"
    "Ge1:2 And the earth was without form, and void; and darkness was upon the face of the deep.\n"
    "Exo6:10 And the LORD spake unto Moses, saying,\n"
    "Exo6:29 And the LORD spake unto Moses, saying,\n"
    "John11:35 Jesus wept.\n"
    "SSol1:1 The song of songs, which is Solomon's.\n"
    "Rev22:21 The grace of our Lord Jesus Christ be with you all. Amen.\n")


def test_unlzw_reads_what_compress_writes_across_code_widths():
    rnd = random.Random(0)
    words = ["the", "LORD", "spake", "unto", "Moses", "saying", "and", "of", "heaven", "earth", "light"]
    data = " ".join(rnd.choice(words) + rnd.choice(["", ",", ".", ";"]) for _ in range(4000)).encode()
    stream = _lzw(data)
    assert texts.unlzw(stream) == data  # several thousand codes: 9 to 12 bits wide


def test_bible_is_one_record_per_verse_one_document_per_chapter(tmp_path):
    root = tmp_path / "bible-kjv-text"
    _write(root / "usr/lib/bible.data", _bible_data(BIBLE_TEXT, block_size=100), "wb")
    _write(root / "usr/lib/bible.data.conc", b"\0", "wb")
    tally = Tally()
    records = list(texts.extract_bible_kjv(str(root), tally))
    assert records == [
        ("bible-kjv-text/Genesis/1", "In the beginning God created the heaven and the earth."),
        ("bible-kjv-text/Genesis/1", "And the earth was without form, and void; and darkness was upon the face "
                                     "of the deep."),
        ("bible-kjv-text/Exodus/6", "And the LORD spake unto Moses, saying,"),
        ("bible-kjv-text/Song of Solomon/1", "The song of songs, which is Solomon's."),
        ("bible-kjv-text/Revelation/22", "The grace of our Lord Jesus Christ be with you all. Amen."),
    ]
    assert _dropped(tally) == {"front_matter": 1, "duplicate": 1, "too_short": 1}
    assert tally.files_read == 1 and tally.files_skipped == {"concordance": 1}


def test_bible_data_of_another_layout_is_an_error(tmp_path):
    root = tmp_path / "bible-kjv-text"
    _write(root / "usr/lib/bible.data", b"XX01" + b"\0" * 200, "wb")
    with pytest.raises(DataError, match="not a bible.data file"):
        list(texts.extract_bible_kjv(str(root)))
    data = bytearray(_bible_data(BIBLE_TEXT, block_size=100))
    data[0x5c:0x60] = struct.pack(">I", 999)  # first offset off the table
    _write(root / "usr/lib/bible.data", bytes(data), "wb")
    with pytest.raises(DataError, match="unexpected block table"):
        list(texts.extract_bible_kjv(str(root)))


# ---- dictd databases


def _dictd(directory, name, entries):
    """Write ``name.dict.dz`` (gzip) and ``name.index``, with a second headword pointing at the second entry."""
    data, index, offset = b"", [], 0
    for entry in entries:
        raw = entry.encode("utf-8")
        index.append((entry.split("\n")[0][:20] or "blank", offset, len(raw)))
        data += raw
        offset += len(raw)
    index.append(("alias", index[1][1], index[1][2]))
    _write(directory / f"{name}.dict.dz", gzip.compress(data, mtime=0), "wb")
    _write(directory / f"{name}.index", "".join(f"{h}\t{_b64(o)}\t{_b64(n)}\n" for h, o, n in sorted(index)))


FOLDOC_ENTRIES = [
    "00-database-short\n     The Free On-line Dictionary of Computing (19 January 2023)\n",
    "The original data is available from:\n     http://foldoc.org/Dictionary.gz\n\n"
    "   Copyright 1985 by Denis Howe\n",
    "Acknowledgements\n\n   <introduction> Many thanks to the thousands of {contributors\n"
    "   (contributors.html)} who sent definitions.\n\n   (2014-09-11)\n\n",
    "broket\n\n   <character> /broh'k*t/ or /broh'ket/ Either of the characters \"<\" or \">\" when\n"
    "   used as paired enclosing {delimiters} ({angle brackets}).\n\n   [{Jargon File}]\n\n   (1997-07-21)\n\n",
    "brute force\nBF\n\n   <programming> (BF) A primitive programming style in which the\n"
    "   programmer relies on the computer's processing power.  See also {bignum}.\n\n"
    "      for (i = 0; i < n; i++)\n\t  try(i);\n\n"
    "   {Ken Thompson} uttered the epigram \"When in doubt, use brute force\"\n"
    "   {(http://example.org/bf)}.\n\n"
    "   [\"The Art of Brute Force\", A. Hacker, 1990].\n\n   See also {NP-complete}.\n\n   (2006-09-10)\n\n",
    "card\n\n   1. <hardware> A circuit board that plugs into a slot.\n\n"
    "   2. <programming> A punched card, as used by {IBM (http://ibm.com/)}.\n\n"
    "   E-mail: <cards@example.org>.\n\n",
    "broker\n\n   {object request broker}\n\n",
]


def test_foldoc_keeps_definitions_without_labels_links_dates_and_code(tmp_path):
    root = tmp_path / "dict-foldoc"
    _dictd(root / "usr/share/dictd", "foldoc", FOLDOC_ENTRIES)
    tally = Tally()
    records = list(texts.extract_foldoc(str(root), tally))
    assert records == [
        ("dict-foldoc/broket", 'Either of the characters "<" or ">" when used as paired enclosing delimiters '
                               "(angle brackets)."),
        ("dict-foldoc/brute force", "A primitive programming style in which the programmer relies on the "
                                    "computer's processing power."),
        ("dict-foldoc/brute force", 'Ken Thompson uttered the epigram "When in doubt, use brute force".'),
        ("dict-foldoc/card", "A circuit board that plugs into a slot."),
        ("dict-foldoc/card", "A punched card, as used by IBM."),
    ]
    assert _dropped(tally) == {
        "license": 2, "front_matter": 1, "headword": 5, "usage_label": 4, "pronunciation": 1, "source_tag": 1,
        "date_stamp": 2, "abbreviation_etymology": 1, "cross_reference": 3, "code_block": 1, "url": 2,
        "citation": 1, "sense_label": 2, "contact_details": 1}
    assert tally.files_read == 2


DEVIL_ENTRIES = [
    "00-database-short\n     The Devil's Dictionary (1881-1906)\n",
    "The original data is available from:\n     http://wiretap.area.com/devils.txt\n\n"
    "                      THE DEVIL'S DICTIONARY\n\n                              PREFACE\n\n"
    "_The Devil's Dictionary_ was begun in a weekly paper in 1881.  To quote\nthe publishers:\n"
    "    \"This more reverent title had been forced upon him by a newspaper.\"\n"
    "                                                                  A.B.\n\n",
    "ABDICATION, n.  An act whereby a sovereign attests his sense of the\nhigh temperature of the throne.\n\n"
    "    Poor Isabella's Dead, whose abdication\n    Set all tongues wagging in the Spanish nation.\n"
    "                                                                  G.J.\n\n",
    "CUI BONO?  [Latin]  What good would that do _me_?\n\n",
    "ABNORMAL, adj.  Not conforming to standard.  Wherefore the lexicographer\n"
    "adviseth a striving toward the straiter [sic] resemblance of the Average Man.\n\n",
    "I is the first letter of the alphabet, the first word of the language.\n\n",
    " abcdefghijklmnopqrstuvwxyz\n",
]


def test_devil_keeps_definitions_verses_and_preface_without_headwords_and_attributions(tmp_path):
    root = tmp_path / "dict-devil"
    _dictd(root / "usr/share/dictd", "devil", DEVIL_ENTRIES)
    tally = Tally()
    records = list(texts.extract_devil(str(root), tally))
    assert records == [
        ("dict-devil/PREFACE", "The Devil's Dictionary was begun in a weekly paper in 1881. To quote the "
                               "publishers:"),
        ("dict-devil/PREFACE", '"This more reverent title had been forced upon him by a newspaper."'),
        ("dict-devil/ABDICATION", "An act whereby a sovereign attests his sense of the high temperature of the "
                                  "throne."),
        ("dict-devil/ABDICATION", "Poor Isabella's Dead, whose abdication Set all tongues wagging in the Spanish "
                                  "nation."),
        ("dict-devil/CUI BONO", "What good would that do me?"),
        ("dict-devil/ABNORMAL", "Not conforming to standard. Wherefore the lexicographer adviseth a striving "
                                "toward the straiter resemblance of the Average Man."),
        ("dict-devil/I", "I is the first letter of the alphabet, the first word of the language."),
    ]
    assert _dropped(tally) == {"license": 3, "attribution": 2, "headword": 3, "usage_label": 1,
                               "editorial_bracket": 1}


# ---- doc-debian and debian-history

SOCIAL_CONTRACT = """\
   Version 1.2 ratified on October 1st, 2022.

"Social Contract" with the Free Software Community

    1. Debian will remain 100% free
       We provide the guidelines that we use to determine if a work is
       "free" in the document entitled "The Debian Free Software
       Guidelines".
    2. We will not hide problems
       We will keep our entire bug report database open for public view at
       all times.
     __________________________________________________________________
"""

BUG_LOG_ACCESS = """\
               Methods of accessing the bug tracking system logs

Accessing active bug reports

   Each message received at or sent by the bug processing system is logged
   and made available in a number of ways.

   To get the raw data of the reports, run:

        rsync -av bugs-mirror.debian.org::bts-spool-db/ spool/

Mailing lists
-------------

  debian-announce@lists.debian.org

      Description : Major news and very important changes in the project
                    are announced here.
      Moderated   : yes

--
Online HTML version of this document is available at
        https://www.debian.org/MailingLists/subscribe
"""


def test_doc_debian_rewraps_paragraphs_and_drops_headings_examples_and_old_versions(tmp_path):
    root = tmp_path / "doc-debian"
    base = root / "usr/share/doc/debian"
    _write(base / "social-contract.txt.gz", gzip.compress(SOCIAL_CONTRACT.encode(), mtime=0), "wb")
    _write(base / "social-contract.1.0.txt.gz", gzip.compress(SOCIAL_CONTRACT.encode(), mtime=0), "wb")
    _write(base / "debian-manifesto.gz", gzip.compress(b"The Debian Linux Manifesto.", mtime=0), "wb")
    _write(base / "bug-log-access.txt", BUG_LOG_ACCESS)
    _write(root / "usr/share/doc/doc-debian/copyright", "GPL")
    tally = Tally()
    records = list(texts.extract_doc_debian(str(root), tally))
    assert records == [
        ("doc-debian/bug-log-access", "Each message received at or sent by the bug processing system is logged "
                                      "and made available in a number of ways."),
        ("doc-debian/bug-log-access", "To get the raw data of the reports, run:"),
        ("doc-debian/bug-log-access", "Major news and very important changes in the project are announced here."),
        ("doc-debian/social-contract", "Version 1.2 ratified on October 1st, 2022."),
        ("doc-debian/social-contract", 'We provide the guidelines that we use to determine if a work is "free" in '
                                       'the document entitled "The Debian Free Software Guidelines".'),
        ("doc-debian/social-contract", "We will keep our entire bug report database open for public view at all "
                                       "times."),
    ]
    assert _dropped(tally) == {"heading": 6, "code_block": 1, "too_short": 2, "field_label": 2, "signature": 1,
                               "list_marker": 2, "separator": 1}
    assert tally.files_read == 2
    assert tally.files_skipped == {"old_version": 1, "same_text_in_debian_history": 1, "package_metadata": 1}


HISTORY_PAGE = """<html><head><title>Chapter 1. Introduction</title></head><body>
<div class="navheader"><table><tr><th>Chapter 1. Introduction</th></tr></table></div>
<div class="chapter"><div class="titlepage"><h1 class="title">Chapter 1. Introduction</h1></div>
<div class="toc"><p><strong>Table of Contents</strong></p>
<dl class="toc"><dt><a href="#b">1.1. In the Beginning</a></dt></dl></div>
<p>The Debian Project is a worldwide group of <a class="ulink" href="http://www.debian.org/">volunteers</a>
who produce a free operating system.</p>
<pre class="screen">apt-get install debian-history</pre>
</div>
<div class="navfooter"><p>Next chapter: Leadership of the project</p></div>
</body></html>"""

DEDICATION = """\
Dedicated to Ian Murdock
------------------------

Ian Murdock, the founder of the Debian project, passed away on 28th December
2015 at his home in San Francisco. He was 42.

We therefore dedicate Debian 9 "stretch" to Ian.

-- The Debian Developers
"""


def test_debian_history_reads_english_chapters_and_dedications_only(tmp_path):
    root = tmp_path / "debian-history"
    top = root / "usr/share/doc/debian-history"
    _write(top / "docs/intro.en.html", HISTORY_PAGE)
    _write(top / "docs/intro.de.html", HISTORY_PAGE.replace("worldwide", "weltweite"))
    _write(top / "docs/project-history.en.pdf", b"%PDF", "wb")
    _write(top / "docs/images/note.png", b"\x89PNG", "wb")
    _write(top / "dedication/dedication-9.0.txt", DEDICATION)
    _write(top / "dedication/dedication-9.0.de.txt", "Gewidmet Ian Murdock.")
    _write(top / "dedication/dedication-9.0.sigs.tar.gz", b"\0", "wb")
    _write(top / "constitution.txt.gz", gzip.compress(b"Constitution", mtime=0), "wb")
    _write(top / "copyright", "GPL")
    tally = Tally()
    records = list(texts.extract_debian_history(str(root), tally))
    assert records == [
        ("debian-history/intro", "The Debian Project is a worldwide group of volunteers who produce a free "
                                 "operating system."),
        ("debian-history/dedication-9.0", "Ian Murdock, the founder of the Debian project, passed away on 28th "
                                          "December 2015 at his home in San Francisco. He was 42."),
        ("debian-history/dedication-9.0", 'We therefore dedicate Debian 9 "stretch" to Ian.'),
    ]
    d = _dropped(tally)
    assert d["navigation"] == 2 and d["heading"] == 2 and d["toc"] >= 1 and d["code_block"] == 1
    assert d["signature"] == 1
    assert tally.files_read == 2
    assert tally.files_skipped == {"other_language": 2, "other_format": 1, "not_text": 2, "same_text_elsewhere": 1,
                                   "license": 1}


# ---- gnome-devel-docs

HIG_INDEX = """<page xmlns="http://projectmallard.org/1.0/" type="guide" id="index">
<info><credit type="author"><name>Jane Doe</name></credit></info>
<title>Human Interface Guidelines</title>
<p>Patterns and user interface elements form the core of the guidelines.</p>
<code mime="text/x-csrc">int main(void) { return 0; }</code>
<p>Read <link xref="principles"/> before the patterns.</p>
</page>"""

HIG_PRINCIPLES = """<page xmlns="http://projectmallard.org/1.0/" type="topic" id="principles">
<title>Design principles</title>
<p>Good design starts with the needs of the people who use it.</p>
</page>"""


def test_gnome_devel_docs_reads_english_mallard_pages_without_code(tmp_path):
    root = tmp_path / "gnome-devel-docs"
    help_dir = root / "usr/share/help"
    _write(help_dir / "C/hig/index.page", HIG_INDEX)
    _write(help_dir / "C/hig/principles.page", HIG_PRINCIPLES)
    _write(help_dir / "C/gnome-devel-demos/hello.c", "int main(void) { return 0; }")
    _write(help_dir / "C/accessibility-devel-guide/index.docbook", "<book/>")
    _write(help_dir / "de/hig/index.page", HIG_INDEX)
    tally = Tally()
    records = list(texts.extract_gnome_devel_docs(str(root), tally))
    assert records == [
        ("gnome-devel-docs/hig/index", "Patterns and user interface elements form the core of the guidelines."),
        ("gnome-devel-docs/hig/index", "Read Design principles before the patterns."),
        ("gnome-devel-docs/hig/principles", "Good design starts with the needs of the people who use it."),
    ]
    assert _dropped(tally) == {"metadata": 1, "heading": 2, "code_block": 1}
    assert tally.files_read == 2
    assert tally.files_skipped == {"other_language": 1, "not_a_page": 1, "docbook_not_mallard": 1}


def test_sources_name_every_package_once():
    names = [name for name, _ in texts.SOURCES]
    assert names == ["bible-kjv-text", "dict-foldoc", "dict-devil", "doc-debian", "debian-history",
                     "gnome-devel-docs"]
    assert all(callable(fn) and fn.__doc__ for _, fn in texts.SOURCES)

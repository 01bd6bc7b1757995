"""The public-text corpus builder (benchmarks/tools/base_corpus) on tiny package trees built here."""

import gzip
import hashlib
import json
import os

import pytest

from benchmarks.tools.base_corpus import builder as pt
from benchmarks.tools.base_corpus import debs
from benchmarks.tools.base_corpus import prose
from benchmarks.tools.base_corpus import dictd, sources
from keyboard_lm.data.corpora import load_jsonl
from keyboard_lm.errors import DataError

pytestmark = pytest.mark.bench

PROSE = "The package manager keeps a list of every package that is installed on the system."
PROSE2 = "You can remove a package with one command when you no longer need it."


def _write(path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


SPHINX_PAGE = f"""<html><head><title>os — Miscellaneous</title></head><body>
<div class="sphinxsidebar"><h3>Table of Contents</h3><ul><li><a href="#">Previous topic</a></li></ul>
<p>Next topic: the module index of the whole library</p></div>
<div class="related"><ul><li><a href="x.html">previous</a> |</li><li><a href="y.html">next</a> |</li></ul></div>
<div class="body" role="main">
<section><h1>os — Miscellaneous operating system interfaces<a class="headerlink" href="#os">¶</a></h1>
<p>{PROSE}<a class="footnote-reference brackets" href="#f1">1</a></p>
<div class="highlight-python3 notranslate"><div class="highlight"><pre>&gt;&gt;&gt; import os
&gt;&gt;&gt; os.listdir('.')</pre></div></div>
<table class="docutils"><tr><td>first cell of the table</td><td>second cell of the table</td></tr></table>
<dl class="py function"><dt class="sig sig-object py" id="os.listdir">os.listdir(path='.')</dt>
<dd><p>Return a list containing the names of the entries in the directory given by path.</p></dd></dl>
<div class="admonition note"><p class="admonition-title">Note</p><p>{PROSE2}</p></div>
<p>os.path.join(a, b) == os.sep.join([a, b]) and os.path.split(p)[0]</p>
<p>Too short.</p>
<p>{PROSE}</p>
<p>The walk function was made faster than it used to be. (Contributed by Ann Smith in bpo-12345.)</p>
</section></div>
<div class="footer">Copyright 2001-2023, Python Software Foundation. Last updated on Feb 10, 2023.</div>
</body></html>"""

DOCBOOK_PAGE = f"""<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>
<title>6.2. apt-get</title></head><body>
<div id="banner"><a href="http://example.org/"><span class="text">Download the ebook</span></a></div>
<ul class="docnav top"><li class="previous"><a href="a.html"><strong>Prev</strong></a></li>
<li class="home">The Debian Administrator's Handbook</li><li class="next"><a href="b.html"><strong>Next</strong></a></li></ul>
<div class="section"><div class="titlepage"><h2 class="title">6.2. The apt-get Command</h2></div>
<div class="toc"><p><strong>Table of Contents</strong></p><dl class="toc"><dt><a href="#x">6.2.1. Initialization</a></dt></dl></div>
<div class="para">{PROSE}<sup>[<a href="#ftn.1" class="footnote">1</a>]</sup> It runs <code class="command">apt update</code> first.
<pre class="screen"><code class="computeroutput">$ </code><strong class="userinput"><code>apt update</code></strong>
Hit:1 http://archive.example.org/debian bookworm InRelease</pre>
</div>
<div class="table"><p class="title"><strong>Table 6.1. Fields</strong></p><div class="table-contents"><table>
<tr><th>Field name</th><td>the value of the field that you set</td></tr></table></div></div>
<div class="para">{PROSE2}</div>
</div>
<div class="navfooter"><table><tr><td>Chapter 5. Packaging System</td><td>Home</td></tr></table></div>
</body></html>"""

MALLARD_PAGE = f"""<page xmlns="http://projectmallard.org/1.0/" xmlns:if="http://projectmallard.org/if/1.0/"
      type="topic" id="net-wireless-connect">
  <info>
    <link type="guide" xref="net-wireless"/>
    <credit type="author"><name>GNOME Documentation Project</name><email>docs@example.org</email></credit>
    <desc>Get on the internet wirelessly.</desc>
    <include href="legal.xml" xmlns="http://www.w3.org/2001/XInclude"/>
  </info>
  <title>Connect to a wireless network</title>
  <p>{PROSE} See <link xref="net-other"/> for more help.</p>
  <steps>
    <item><p>Press <keyseq><key>Ctrl</key><key>Alt</key><key>T</key></keyseq> to open a terminal window now.</p></item>
    <item><p>Run <code>nmcli radio wifi on</code> in the terminal to turn the radio on.</p></item>
  </steps>
  <code>nmcli device wifi connect MyNetwork password secret</code>
  <screen>$ nmcli device status
wlan0  wifi  connected</screen>
  <if:choose>
    <if:when test="platform:gnome-classic"><p>The icon will change to a dot in the classic mode of the desktop.</p></if:when>
    <p>The icon will change to a dot with curved bars above it when you connect.</p>
  </if:choose>
  <comment><cite date="2012-02-19">shaunm</cite><p>Write more about how to start the screen reader here.</p></comment>
  <table><tr><td><p>Wireless network name in the table</p></td></tr></table>
  <p>Click the <media type="image" src="figures/icon.svg">icon</media> button in the top bar to open the menu.</p>
</page>"""

MALLARD_OTHER = """<page xmlns="http://projectmallard.org/1.0/" id="net-other">
  <title>Troubleshoot wireless network</title>
  <p>Some wireless adapters are not supported well by the drivers of the system.</p>
</page>"""

WORDNET_DATA = (
    "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"
    "00001740 29 v 04 breathe 0 take_a_breath 0 respire 0 suspire 3 021 * 00005041 v 0000 02 + 02 00 | "
    "draw air into, and expel out of, the lungs; \"I can breathe better when the air is clean\"; "
    "\"The patient is respiring\"  \n"
    "00002724 29 v 01 choke 0 002 @ 00001740 v 0000 01 + 02 00 | breathe with great difficulty, as when "
    "experiencing a strong emotion; \"She choked with emotion when she spoke about her deceased husband\"- "
    "Anonymous  \n")

GCIDE_ENTRIES = [
    "00-database-info\n   This file was converted from the original database on\n"
    "   GCIDE is free software; you can redistribute it under the GNU General Public License.\n",
    'Abandon \\A*ban"don\\ ([.a]*b[a^]n"d[u^]n), v. t. [imp. & p. p.\n'
    "   {Abandoned} (-d[u^]nd); p. pr. & vb. n. {Abandoning}.] [OF.\n"
    "   abandoner, F. abandonner; a (L. ad) + bandon permission.]\n"
    "   1. To cast or drive out; to banish; to expel; to reject.\n"
    "      [Obs.]\n"
    "      [1913 Webster]\n\n"
    "            That he might . . . abandon them from him. --Udall.\n"
    "      [1913 Webster]\n\n"
    "            Hope was overthrown, yet could not be abandoned.\n"
    "                                                  --I. Taylor.\n"
    "      [1913 Webster]\n\n"
    "   2. (Mar. Law) To relinquish all claim to; -- used when an\n"
    "      insured person gives up to underwriters all claim to the property.\n"
    "      [1913 Webster]\n\n"
    "   Syn: To give up; yield; forego; cede; surrender; resign.\n",
    'Unworthy \\Un*wor"thy\\, a.\n'
    "   Not worthy; wanting merit, value, or fitness; undeserving;\n"
    '   worthless. -- {Un*wor"thi*ly}, adv. -- {Un*wor"thi*ness}, n.\n'
    "   [1913 Webster]\n",
]

JARGON_ENTRIES = [
    "00-database-short\n     The Jargon File (version 4.4.7, 29 Dec 2003)\n",
    "hacker\n n.\n\n    [originally, someone who makes furniture with an axe]\n\n"
    "    1. A person who enjoys exploring the details of programmable systems and\n"
    "    how to stretch their capabilities, as opposed to most {users}.\n\n"
    "        for (;;) { fork(); }\n\n"
    "    [Usenet] It is better to be described as a hacker by others than to\n"
    "    describe oneself that way.\n",
]


def _b64(n):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ""
    while True:
        out = alphabet[n % 64] + out
        n //= 64
        if not n:
            return out


def _dictd(directory, name, entries):
    """Write ``name.dict.dz`` (gzip) and ``name.index`` with a second headword for the first real entry."""
    data, index, offset = b"", [], 0
    for entry in entries:
        raw = (entry + "\n").encode("utf-8")
        headword = entry.split("\n")[0].split(" \\")[0]
        index.append((headword, offset, len(raw)))
        data += raw
        offset += len(raw)
    index.append(("alias", index[1][1], index[1][2]))  # a run-on headword pointing to an entry again
    _write(directory / f"{name}.dict.dz", gzip.compress(data, mtime=0), "wb")
    _write(directory / f"{name}.index", "".join(f"{h}\t{_b64(o)}\t{_b64(n)}\n" for h, o, n in sorted(index)))


def _changelog(root, package, version):
    _write(root / "usr/share/doc" / package / "changelog.Debian.gz",
           gzip.compress(f"{package} ({version}) unstable; urgency=medium\n".encode(), mtime=0), "wb")


#: The sources whose readers live in sources.py and dictd.py; the others have tests of their own
#: (test_base_corpus_markup.py, test_base_corpus_texts.py).
BUILDER_SOURCES = tuple(s for s in debs.deb_sources() if s.extractor.__module__ in (sources.__name__, dictd.__name__))
PACKAGES = tuple(s.package for s in BUILDER_SOURCES)


def make_trees(base):
    """Tiny extracted trees of the packages read by builder.py's own readers; returns package -> root."""
    roots = {p: base / p for p in PACKAGES}
    html = roots["python3.11-doc"] / "usr/share/doc/python3.11/html"
    _write(html / "library/os.html", SPHINX_PAGE)
    _write(html / "genindex-A.html", f'<div class="body" role="main"><p>{PROSE}</p></div>')
    _write(html / "_sources/library/os.rst.txt", "not read")
    hb = roots["debian-handbook"] / "usr/share/doc/debian-handbook/html"
    _write(hb / "en-US/sect.apt-get.html", DOCBOOK_PAGE)
    _write(hb / "fr-FR/sect.apt-get.html", "<p>Le gestionnaire de paquets garde une liste de paquets.</p>")
    _write(roots["debian-reference-en"] / "usr/share/debian-reference/ch02.en.html", DOCBOOK_PAGE)
    _write(roots["debian-reference-en"] / "usr/share/debian-reference/ch02.fr.html", DOCBOOK_PAGE)
    help_c = roots["gnome-user-docs"] / "usr/share/help/C/gnome-help"
    _write(help_c / "net-wireless-connect.page", MALLARD_PAGE)
    _write(help_c / "net-other.page", MALLARD_OTHER)
    _write(help_c / "legal.xml", "<license><p>This work is licensed under a Creative Commons license.</p></license>")
    _write(roots["gnome-user-docs"] / "usr/share/help/de/gnome-help/net-other.page", MALLARD_OTHER)
    wn = roots["wordnet-base"] / "usr/share/wordnet"
    for pos in ("adj", "adv", "noun"):
        _write(wn / f"data.{pos}", "  1 This software and database is being provided to you\n")
    _write(wn / "data.verb", WORDNET_DATA)
    _dictd(roots["dict-gcide"] / "usr/share/dictd", "gcide", GCIDE_ENTRIES)
    _dictd(roots["dict-jargon"] / "usr/share/dictd", "jargon", JARGON_ENTRIES)
    for package in PACKAGES:
        _changelog(roots[package], package, "1.0-1")
    return {p: str(r) for p, r in roots.items()}


@pytest.fixture
def trees(tmp_path):
    return make_trees(tmp_path / "x")


def test_prose_rule_keeps_sentences_and_drops_code_paths_and_fragments():
    assert prose.prose_verdict(PROSE) is None
    assert prose.prose_verdict("Use os.path.join() to join two paths, as the example shows.") is None
    assert prose.prose_verdict("e.g. in 1999, 10-16 MB of data were downloaded by the users.") is None
    assert prose.prose_verdict("Next topic") == "too_short"
    assert prose.prose_verdict("x = {'a': [1, 2], 'b': (3, 4)}; print(x['a'][0])") == "mostly_symbols"
    assert prose.prose_verdict('"/usr/share/doc/apt-doc/guide.html/index.html" from the apt-doc package') \
        == "mostly_symbols"


def test_sphinx_page_keeps_prose_and_counts_code_tables_navigation(trees):
    tally = prose.Tally()
    records = list(sources.extract_python_doc(trees["python3.11-doc"], tally))
    texts = [t for _, t in records]
    assert {d for d, _ in records} == {"python3.11-doc/library/os"}
    assert texts == [PROSE, "Return a list containing the names of the entries in the directory given by path.",
                     PROSE2, "The walk function was made faster than it used to be."]
    d = tally.dropped
    assert d["code_block"] == [1, 5]  # >>> import os >>> os.listdir('.')
    assert d["table"] == [2, 10]
    assert d["signature"][0] == 1 and d["heading"][0] == 1 and d["admonition_title"] == [1, 1]
    assert d["mostly_symbols"][0] == 1 and d["too_short"] == [1, 2] and d["duplicate"] == [1, len(PROSE.split())]
    assert d["credit"] == [1, 6] and d["footnote_marker"] == [1, 1]
    assert d["index_page"] == [1, len(PROSE.split())]  # genindex-A.html, dropped whole
    assert d["page_chrome"][0] >= 3  # title, sidebar (Next topic ...), related links, footer
    assert tally.files_read == 2 and tally.files_skipped == {"support_folder": 1}


def test_docbook_page_english_only_without_screens_tables_and_navigation(trees):
    tally = prose.Tally()
    records = list(sources.extract_debian_handbook(trees["debian-handbook"], tally))
    assert records == [("debian-handbook/sect.apt-get", PROSE + " It runs apt update first."),
                       ("debian-handbook/sect.apt-get", PROSE2)]
    d = tally.dropped
    assert d["code_block"][0] == 1 and d["table"][0] >= 1 and d["toc"][0] >= 1 and d["heading"][0] >= 1
    assert d["navigation"][0] >= 3 and d["footnote_marker"][0] >= 1
    assert tally.files_skipped == {"other_language": 1} and tally.files_read == 1
    reference = list(sources.extract_debian_reference(trees["debian-reference-en"], prose.Tally()))
    assert [d for d, _ in reference] == ["debian-reference-en/ch02"] * 2


def test_mallard_page_resolves_links_drops_code_blocks_and_variants(trees):
    tally = prose.Tally()
    records = list(sources.extract_gnome_user_docs(trees["gnome-user-docs"], tally))
    by_doc = {}
    for doc, text in records:
        by_doc.setdefault(doc, []).append(text)
    assert by_doc["gnome-user-docs/gnome-help/net-wireless-connect"] == [
        f"{PROSE} See Troubleshoot wireless network for more help.",
        "Press Ctrl+Alt+T to open a terminal window now.",
        "Run nmcli radio wifi on in the terminal to turn the radio on.",  # inline code keeps its text
        "The icon will change to a dot with curved bars above it when you connect.",
        "Click the button in the top bar to open the menu.",
    ]
    d = tally.dropped
    assert d["code_block"][0] == 2  # the block <code> and the <screen>
    assert d["conditional_variant"][0] == 1 and d["editor_comment"][0] >= 1 and d["table"][0] == 1
    assert d["metadata"][0] >= 1 and d["heading"][0] == 2 and d["media"] == [1, 1]
    assert tally.files_read == 2 and tally.files_skipped == {"other_language": 1, "not_a_page": 1}


def test_wordnet_gloss_becomes_definition_and_example_records(trees):
    tally = prose.Tally()
    records = list(sources.extract_wordnet(trees["wordnet-base"], tally))
    assert records == [
        ("wordnet-base/verb.body/breathe.00001740", "draw air into, and expel out of, the lungs"),
        ("wordnet-base/verb.body/breathe.00001740", "I can breathe better when the air is clean"),
        ("wordnet-base/verb.body/breathe.00001740", "The patient is respiring"),
        ("wordnet-base/verb.body/choke.00002724", "breathe with great difficulty, as when experiencing a strong "
                                                   "emotion"),
        ("wordnet-base/verb.body/choke.00002724", "She choked with emotion when she spoke about her deceased husband"),
    ]
    assert tally.dropped["license"][0] == 4 and tally.dropped["attribution"] == [1, 2]
    assert tally.files_read == 4


def test_gcide_keeps_senses_and_quotations_without_header_tags_and_synonyms(trees):
    tally = prose.Tally()
    records = list(dictd.extract_gcide(trees["dict-gcide"], tally))
    assert records == [
        ("dict-gcide/Abandon", "To cast or drive out; to banish; to expel; to reject."),
        ("dict-gcide/Abandon", "That he might... abandon them from him."),
        ("dict-gcide/Abandon", "Hope was overthrown, yet could not be abandoned."),
        ("dict-gcide/Abandon", "To relinquish all claim to; -- used when an insured person gives up to "
                               "underwriters all claim to the property."),
        ("dict-gcide/Unworthy", "Not worthy; wanting merit, value, or fitness; undeserving; worthless."),
    ]
    d = tally.dropped
    assert d["license"][0] == 1 and d["synonym_list"][0] == 1 and d["derived_forms"][0] == 2
    assert d["headword_pronunciation_etymology"][0] == 2 and d["attribution"][0] == 2
    assert d["source_tag"][0] == 5 and d["sense_label"][0] == 3  # "1.", "2.", "(Mar. Law)"
    assert d["editorial_bracket"][0] == 1  # [Obs.]
    assert tally.files_read == 2  # the alias headword points at an entry read once


def test_jargon_keeps_prose_paragraphs_without_tags_and_code(trees):
    tally = prose.Tally()
    records = list(dictd.extract_jargon(trees["dict-jargon"], tally))
    assert records == [
        ("dict-jargon/hacker", "A person who enjoys exploring the details of programmable systems and how to "
                               "stretch their capabilities, as opposed to most users."),
        ("dict-jargon/hacker", "It is better to be described as a hacker by others than to describe oneself "
                               "that way."),
    ]
    d = tally.dropped
    assert d["code_block"][0] == 1 and d["usage_label"][0] == 2 and d["license"][0] == 1


def test_bad_dictd_files_are_reported_with_their_path(tmp_path):
    with pytest.raises(DataError, match="usr/share/dictd: not found"):
        list(dictd.extract_gcide(str(tmp_path), prose.Tally()))
    (tmp_path / "usr/share/dictd").mkdir(parents=True)
    with pytest.raises(DataError, match="gcide.index: not found"):
        list(dictd.extract_gcide(str(tmp_path), prose.Tally()))
    _write(tmp_path / "usr/share/dictd/gcide.index", "word\t!!\tA\n")
    _write(tmp_path / "usr/share/dictd/gcide.dict.dz", gzip.compress(b"word\n"), "wb")
    with pytest.raises(DataError, match=r"gcide.index:1: not a dictd index line"):
        list(dictd.extract_gcide(str(tmp_path), prose.Tally()))


def test_cap_keeps_whole_documents_in_a_fixed_order_and_counts_the_rest():
    records = [(f"doc{i % 5}", f"word{i} " * 10) for i in range(50)]
    tally = prose.Tally()
    capped = pt.cap_records(records, 125, tally)
    assert sum(len(t.split()) for _, t in capped) <= 125
    assert sum(len(t.split()) for _, t in capped) + tally.dropped["cap"][1] == 500
    assert pt.cap_records(records, 125, prose.Tally()) == capped  # deterministic
    assert [r for r in records if r in capped] == capped  # original order
    assert pt.cap_records(records, None, prose.Tally()) == records


def test_the_corpus_reads_the_45_public_packages_and_no_evaluation_corpus():
    names = [s.name for s in debs.deb_sources()]
    assert names[:19] == ["python3.11-doc", "debian-handbook", "debian-reference-en", "gnome-user-docs",
                          "wordnet-base", "dict-gcide", "dict-jargon", "bible-kjv-text", "linux-doc", "perl-doc",
                          "git-doc", "gnu-standards", "debian-policy", "doc-debian", "debian-history", "manpages",
                          "dict-foldoc", "dict-devil", "gnome-devel-docs"]
    assert names[19:28] == ["r-cran-janeaustenr", "fortunes", "endless-sky-data", "crawl-common",
                            "cataclysm-dda-data", "naev-data", "freedroidrpg-data", "freedink-data", "widelands-data"]
    assert len(names) == 45 and sum(n.startswith("wesnoth-1.16-") for n in names) == 17
    assert [s.name for s in debs.first_corpus_sources()] == names[:19]  # --first-corpus: the shipped base's
    kinds = {s.name: s.kind for s in debs.deb_sources()}
    assert {n for n, k in kinds.items() if k == "dictionary"} == {"wordnet-base", "dict-gcide", "dict-jargon",
                                                                  "dict-foldoc", "dict-devil"}
    assert "linux-doc-6.1" in debs.packages() and "linux-doc" not in debs.packages()  # the metapackage's text
    assert not {"tinyshakespeare", "chatterbot-corpus", "spamassassin"} & set(names)


def test_build_writes_a_jsonl_corpus_the_project_reads_and_a_report(trees, tmp_path):
    out = tmp_path / "out"
    report = pt.build(str(out), roots=trees, sources=BUILDER_SOURCES)
    corpus = load_jsonl(str(out / "corpus.jsonl"))
    assert corpus.num_records == report["totals"]["records"]
    sources = report["sources"]
    assert list(sources) == list(PACKAGES)
    for name, s in sources.items():
        assert s["records"] > 0 and s["words"] == s["words_available"], name
        assert sum(len(t.split()) for c in corpus.client_ids if c.startswith(name + "/")
                   for t in corpus.clients[c]) == s["words"]
    assert sources["python3.11-doc"]["version"] == "1.0-1" and sources["python3.11-doc"]["deb_sha256"] is None
    assert sources["python3.11-doc"]["dropped"]["code_block"]["records"] == 1
    digest = hashlib.sha256((out / "corpus.jsonl").read_bytes()).hexdigest()
    assert report["corpus_sha256"] == digest
    assert json.loads((out / "report.json").read_text())["corpus_sha256"] == digest
    again = pt.build(str(tmp_path / "again"), roots=trees, sources=BUILDER_SOURCES)
    assert again["corpus_sha256"] == digest  # reproducible


def test_build_cap_reports_available_and_kept_words(trees, tmp_path):
    report = pt.build(str(tmp_path / "out"), roots=trees, max_words_per_source=40, sources=BUILDER_SOURCES)
    for name, s in report["sources"].items():
        assert s["words"] <= 40, name
        assert s["words"] + s["dropped"].get("cap", {"words": 0})["words"] == s["words_available"], name
    assert report["rules"]["max_words_per_source"] == 40


def test_main_names_the_missing_tree_or_package(trees, tmp_path, capsys):
    extracted = os.path.dirname(trees["dict-jargon"])
    assert pt.main(["--extracted", extracted, "--out", str(tmp_path / "o")]) == 2
    assert f"{os.path.join(extracted, 'bible-kjv-text')}: not found" in capsys.readouterr().err
    (tmp_path / "debs").mkdir()
    assert pt.main(["--debs", str(tmp_path / "debs"), "--out", str(tmp_path / "o")]) == 2
    assert "no python3.11-doc_*.deb" in capsys.readouterr().err
    with pytest.raises(DataError, match="no extracted tree for package.s. dict-jargon"):
        pt.build(str(tmp_path / "o"), roots={p: r for p, r in trees.items() if p != "dict-jargon"},
                 sources=BUILDER_SOURCES)

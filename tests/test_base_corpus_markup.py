"""The markup extractors of the public-text corpus (benchmarks/tools/base_corpus/markup*.py) on tiny package trees."""

import gzip

import pytest

from benchmarks.tools.base_corpus import markup as mk
from benchmarks.tools.base_corpus import markup_rst
from benchmarks.tools.base_corpus.prose import Tally
from keyboard_lm.errors import DataError

pytestmark = pytest.mark.bench

PROSE = "The package manager keeps a list of every package that is installed on the system."
PROSE2 = "You can remove a package with one command when you no longer need it."


def _write(path, text, gz=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _run(extractor, root):
    tally = Tally()
    records = list(extractor(str(root), tally))
    return records, tally


def test_sources_table():
    assert [name for name, _ in mk.SOURCES] == ["linux-doc", "perl-doc", "manpages", "gnu-standards", "git-doc",
                                                 "debian-policy"]
    assert all(callable(fn) and fn.__doc__ for _, fn in mk.SOURCES)


RST = f"""\
.. SPDX-License-Identifier: GPL-2.0

=====================
The package manager
=====================

Intro with :c:func:`kmalloc` and ``GFP_KERNEL`` and *every* **package** and a
`link <https://example.org>`_ here [#]_.

Section
-------

An example follows::

    int x = 1;
    return x;

.. code-block:: c

   foo(bar);

.. note::
   {PROSE2}

- {PROSE}
- The second item of the list is a sentence as well.

term
    The definition of the term is a sentence.

:Author: Some One <one@example.org>

=====  ======
name   value
=====  ======
alpha  one
=====  ======

+------+------+
| a    | b    |
+------+------+

.. [#] The footnote text is a sentence.
"""


def test_linux_doc(tmp_path):
    doc = tmp_path / "usr/share/doc/linux-doc-6.1/Documentation"
    _write(doc / "process/guide.rst.gz", RST, gz=True)
    _write(doc / "memory-barriers.txt", f"{PROSE}\n")
    _write(doc / "translations/it_IT/guide.rst", f"{PROSE2}\n")
    _write(doc / "ABI/testing/sysfs-foo", "What: /sys/foo\n")
    _write(doc / "devicetree/bindings/foo.yaml", "title: foo\n")
    _write(doc / "admin-guide/kernel-parameters.txt", "acpi= [HW] Some option list.\n")
    records, tally = _run(mk.extract_linux_doc, tmp_path)
    assert records == [
        ("linux-doc/memory-barriers", PROSE),
        ("linux-doc/process/guide", "Intro with kmalloc and GFP_KERNEL and every package and a link here."),
        ("linux-doc/process/guide", "An example follows:"),
        ("linux-doc/process/guide", PROSE2),
        ("linux-doc/process/guide", "The second item of the list is a sentence as well."),
        ("linux-doc/process/guide", "The definition of the term is a sentence."),
        ("linux-doc/process/guide", "The footnote text is a sentence."),
    ]  # PROSE of the list item is a duplicate of memory-barriers
    assert tally.files_read == 2
    assert tally.files_skipped == {"other_language": 1, "abi_list": 1, "not_prose_file": 2}
    d = tally.dropped
    assert d["heading"] == [2, 4] and d["code_block"] == [2, 8] and d["table"][0] == 2
    assert d["license"][0] == 1 and d["field_list"][0] == 1 and d["term"] == [1, 1]
    assert d["duplicate"][0] == 1 and d["footnote_marker"] == [1, 1] and d["admonition_title"] == [1, 1]


def test_linux_doc_requires_documentation(tmp_path):
    with pytest.raises(DataError):
        list(mk.extract_linux_doc(str(tmp_path)))


def test_rst_inline():
    pieces = []
    text = markup_rst.rst_inline(r"See :ref:`the guide <guide>`, :c:type:`~struct.foo`, `target`_ and \*x\*.", pieces)
    assert text == "See the guide, foo, target and *x*."


POD = f"""\
=encoding utf8

=head1 NAME

perlfoo - Perl foo things

=head1 DESCRIPTION
X<foo>

This B<package> manager keeps C<< $a->b >> and L<the docs|perlfunc/open>
and E<lt>tagE<gt> in S<one list> of F</etc/passwd> things.

    my $x = 1;
    print $x;

=over 4

=item -w

{PROSE2}

=item * {PROSE}

=back

=begin html

<p>Raw markup that is not read at all.</p>

=end html

=for comment Nothing of this is read either.

=cut

sub foo {{ return 1 }}
"""


def test_perl_doc(tmp_path):
    pod = tmp_path / "usr/share/perl/5.36.0/pod"
    _write(pod / "perlfoo.pod", POD)
    _write(pod / "perltoc.pod", f"=head1 NAME\n\nperltoc - contents\n\n{PROSE}\n")
    _write(tmp_path / "usr/share/man/man1/perlfoo.1.gz", "x", gz=True)
    records, tally = _run(mk.extract_perl_doc, tmp_path)
    assert records == [
        ("perl-doc/perlfoo", "This package manager keeps $a->b and the docs and <tag> in one list of /etc/passwd "
                             "things."),
        ("perl-doc/perlfoo", PROSE2),
        ("perl-doc/perlfoo", PROSE),
    ]
    assert tally.files_read == 2 and tally.files_skipped == {"rendered_man_page": 1}
    d = tally.dropped
    assert d["code_block"] == [1, 6] and d["term"] == [1, 1] and d["index_term"] == [1, 1]
    assert d["heading"][0] == 3  # NAME, its line, DESCRIPTION
    assert d["format_block"][0] == 3 and d["toc"][0] == 3 and d["not_pod"][0] == 1


MAN = rf""".\" Copyright (C) 2005 Somebody
.\" SPDX-License-Identifier: Linux-man-pages-copyleft
.TH pipe 7 2022-12-04 "Linux man-pages 6.03"
.SH NAME
pipe \- overview of pipes and FIFOs
.SH SYNOPSIS
.nf
.B #include <unistd.h>
.fi
.SH DESCRIPTION
Pipes and FIFOs (also known as
.IR "named pipes" )
provide a \fBone-way\fP channel \(em between processes.
.PP
See
.BR fifo (7)
for the details of the \[lq]FIFO\[rq] files and their \(zz names.
.TP
.B \-x
{PROSE}
.SS Example
.EX
int main(void) {{ return 0; }}
.EE
.TS
l l.
one	two
.TE
"""


def test_manpages(tmp_path):
    man = tmp_path / "usr/share/man"
    _write(man / "man7/pipe.7.gz", MAN, gz=True)
    _write(man / "man7/fifo-link.7.gz", ".so man7/pipe.7\n", gz=True)
    _write(man / "fr/man7/pipe.7.gz", MAN, gz=True)
    records, tally = _run(mk.extract_manpages, tmp_path)
    assert records == [
        ("manpages/pipe.7", "Pipes and FIFOs (also known as named pipes) provide a one-way channel — between "
                            "processes."),
        ("manpages/pipe.7", "See fifo(7) for the details of the “FIFO” files and their names."),
        ("manpages/pipe.7", PROSE),
    ]
    assert tally.files_read == 1
    assert tally.files_skipped == {"so_link": 1, "other_language": 1}
    d = tally.dropped
    assert d["license"][0] == 2 and d["synopsis"] == [1, 3] and d["term"] == [1, 1]
    assert d["code_block"][0] == 1 and d["table"][0] == 1 and d["unknown_escape"] == [1, 1]
    assert d["heading"][0] == 6  # .TH, NAME, its line, SYNOPSIS, DESCRIPTION, Example


TEXINFO = f"""<html><head><title>GNU Coding Standards</title></head><body>
<h1 class="settitle">GNU Coding Standards</h1>
<div class="contents"><ul><li><a href="#Preface">1 About the GNU Coding Standards</a></li></ul></div>
<div class="top" id="Top">
<div class="header"><p>Next: <a href="#Preface">About the GNU Coding Standards</a></p></div>
<h1 class="top">GNU Coding Standards</h1>
<p>Copyright (C) 1992 Free Software Foundation, Inc. Permission is granted to copy this.</p>
<ul class="section-toc"><li><a href="#Preface">About the GNU Coding Standards</a></li></ul>
</div>
<div class="chapter" id="Non_002dGNU-Standards">
<div class="header"><p>Previous: <a href="#Top">Top</a></p></div>
<h2 class="chapter">2 Non-GNU Standards</h2>
<p>{PROSE}</p>
<div class="example"><pre class="example">fd = open (filename, O_WRONLY);</pre></div>
<dl><dt><code>--version</code></dt><dd><p>{PROSE2}</p></dd></dl>
</div>
<div class="appendix" id="GNU-Free-Documentation-License">
<h2 class="appendix">Appendix A GNU Free Documentation License</h2>
<p>Everyone is permitted to copy and distribute verbatim copies of this license document.</p>
</div>
</body></html>"""


def test_gnu_standards(tmp_path):
    base = tmp_path / "usr/share/doc/gnu-standards"
    _write(base / "standards.html", TEXINFO)
    _write(base / "standards.text.gz", "x", gz=True)
    _write(tmp_path / "usr/share/info/standards.info.gz", "x", gz=True)
    records, tally = _run(mk.extract_gnu_standards, tmp_path)
    assert records == [("gnu-standards/standards/Non-GNU-Standards", PROSE),
                       ("gnu-standards/standards/Non-GNU-Standards", PROSE2)]
    assert tally.files_read == 1 and tally.files_skipped == {"same_text_as_html": 1, "not_html": 1}
    d = tally.dropped
    assert d["license"][0] == 3 and d["code_block"][0] == 1 and d["term"] == [1, 1]  # notice, GFDL title + text
    assert d["navigation"][0] == 2 and d["toc"][0] == 2 and d["heading"][0] == 3


GIT_PAGE = f"""<html><head><title>git-commit(1)</title><style>body {{ margin: 0 }}</style></head>
<body class="manpage"><div id="header"><h1>git-commit(1) Manual Page</h1><h2>NAME</h2>
<div class="sectionbody"><p>git-commit - Record changes to the repository</p></div></div>
<div id="content">
<div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody"><div class="verseblock">
<pre class="content"><em>git commit</em> [-a | --interactive] [--amend]</pre></div></div></div>
<div class="sect1"><h2 id="_description">DESCRIPTION</h2><div class="sectionbody">
<div class="paragraph"><p>{PROSE}</p></div>
<div class="listingblock"><div class="content"><pre><code>$ git commit -a -m "fix"</code></pre></div></div>
<div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>
<td class="content">{PROSE2}</td></tr></table></div>
<div class="dlist"><dl><dt class="hdlist1">--amend</dt>
<dd><p>Replace the tip of the current branch by creating a new commit.</p></dd></dl></div>
<div class="tableblock"><table><tr><td>first cell</td><td>second cell</td></tr></table></div>
</div></div>
<div class="sect1"><h2 id="_git">GIT</h2><div class="sectionbody"><div class="paragraph">
<p>Part of the <a href="git.html">git(1)</a> suite</p></div></div></div></div>
<div id="footer"><div id="footer-text">Last updated 2023-01-01 12:00:00 UTC</div></div>
</body></html>"""


def test_git_doc(tmp_path):
    base = tmp_path / "usr/share/doc/git-doc"
    _write(base / "git-commit.html", GIT_PAGE)
    _write(base / "git-commit.txt", "git-commit(1)\n=============\n")
    _write(base / "RelNotes/2.39.0.txt", "Git 2.39 Release Notes\n")
    records, tally = _run(mk.extract_git_doc, tmp_path)
    assert records == [("git-doc/git-commit", PROSE), ("git-doc/git-commit", PROSE2),
                       ("git-doc/git-commit", "Replace the tip of the current branch by creating a new commit.")]
    assert tally.files_read == 1 and tally.files_skipped == {"asciidoc_source": 1, "release_notes": 1}
    d = tally.dropped
    assert d["code_block"][0] == 1 and d["synopsis"][0] == 1 and d["table"][0] == 2 and d["term"] == [1, 1]
    assert d["boilerplate"] == [1, 5] and d["admonition_title"] == [1, 1] and d["heading"][0] >= 4


SPHINX = f"""<html><head><title>Policy</title></head><body>
<div class="related" role="navigation"><ul><li><a href="index.html">Debian Policy Manual</a></li></ul></div>
<div class="body" role="main"><section><h1>Binary packages<a class="headerlink" href="#x">¶</a></h1>
<p>{PROSE}<a class="footnote-reference brackets" href="#f1">1</a></p>
<div class="highlight-default notranslate"><div class="highlight"><pre>Package: foo</pre></div></div>
<table class="docutils"><tr><td>first cell of the table</td></tr></table>
</section></div></body></html>"""

DOCBOOK = f"""<html><head><title>Chapter 2. Perl Packaging</title></head><body>
<div class="navheader"><table><tr><th>Chapter 2. Perl Packaging</th></tr></table></div>
<div class="chapter"><div class="titlepage"><h1 class="title">Chapter 2. Perl Packaging</h1></div>
<div class="toc"><dl class="toc"><dt><a href="#s">2.1. Versions</a></dt></dl></div>
<p>{PROSE2}</p><pre class="programlisting">use strict;</pre></div></body></html>"""


def test_debian_policy(tmp_path):
    base = tmp_path / "usr/share/doc/debian-policy"
    _write(base / "policy.html/ch-binary.html", SPHINX)
    _write(base / "policy.html/upgrading-checklist.html", SPHINX.replace(PROSE, "Version 4.6.2 changed the rules."))
    _write(base / "policy.html/_sources/ch-binary.rst.txt", "Binary packages\n")
    _write(base / "perl-policy.html/ch-perl.html", DOCBOOK)
    _write(base / "perl-policy-1.html", DOCBOOK)
    _write(base / "autopkgtest.html", f"<h1>Autopkgtest</h1><p>{PROSE} Tests run after the build.</p>")
    _write(base / "policy.txt.gz", "x", gz=True)
    records, tally = _run(mk.extract_debian_policy, tmp_path)
    assert records == [("debian-policy/autopkgtest", PROSE + " Tests run after the build."),
                       ("debian-policy/perl-policy/ch-perl", PROSE2),
                       ("debian-policy/policy/ch-binary", PROSE)]
    assert tally.files_read == 4
    assert tally.files_skipped == {"support_folder": 1, "same_text_as_chunked_html": 1, "not_html": 1}
    d = tally.dropped
    assert d["release_notes"][0] >= 1 and d["code_block"][0] == 2 and d["table"][0] == 1
    assert d["navigation"][0] == 1 and d["page_chrome"][0] >= 2 and d["toc"][0] == 1
    assert d["footnote_marker"] == [1, 1]


def test_extractors_are_deterministic(tmp_path):
    doc = tmp_path / "usr/share/doc/linux-doc-6.1/Documentation"
    for name in ("b.rst", "a/c.rst", "a.rst"):
        _write(doc / name, f"{PROSE} ({name})\n")
    first = _run(mk.extract_linux_doc, tmp_path)[0]
    assert [d for d, _ in first] == ["linux-doc/a", "linux-doc/a/c", "linux-doc/b"]
    assert first == _run(mk.extract_linux_doc, tmp_path)[0]

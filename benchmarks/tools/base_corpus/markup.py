"""The corpus sources written in plain-text markup (reST, POD, roff) and more HTML books: what each reads and drops.

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

The extractors live by format: ``markup_rst``, ``markup_pod``, ``markup_roff`` and ``markup_html``.
"""

from __future__ import annotations

from benchmarks.tools.base_corpus.markup_html import extract_debian_policy, extract_git_doc, extract_gnu_standards
from benchmarks.tools.base_corpus.markup_pod import extract_perl_doc
from benchmarks.tools.base_corpus.markup_roff import extract_manpages
from benchmarks.tools.base_corpus.markup_rst import extract_linux_doc

SOURCES = (
    ("linux-doc", extract_linux_doc),
    ("perl-doc", extract_perl_doc),
    ("manpages", extract_manpages),
    ("gnu-standards", extract_gnu_standards),
    ("git-doc", extract_git_doc),
    ("debian-policy", extract_debian_policy),
)

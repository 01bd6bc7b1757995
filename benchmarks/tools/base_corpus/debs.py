"""The Debian packages the base corpus reads: which source comes from which package, and finding,
extracting and versioning the ``.deb`` files.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import os
import re
import shutil
import subprocess
from typing import Callable, Iterable, Iterator


from benchmarks.tools.base_corpus.prose import Record, Tally
from benchmarks.tools.base_corpus.dictd import extract_gcide, extract_jargon
from benchmarks.tools.base_corpus.sources import (extract_debian_handbook, extract_debian_reference, extract_gnome_user_docs,
                                            extract_python_doc, extract_wordnet)
from keyboard_lm.errors import DataError



@dataclasses.dataclass(frozen=True)
class DebSource:
    """A source of the corpus: its name (the document prefix), its extractor and the .deb it reads.

    ``deb`` differs from ``name`` only for a metapackage: ``linux-doc`` depends on
    ``linux-doc-6.1``, which holds the text.  ``kind`` is the kind of text (``mix.KINDS``) that the
    mix's caps count it under.
    """

    name: str
    extractor: Callable[[str, Tally], Iterator[Record]]
    deb: str = ""
    kind: str = "technical"

    @property
    def package(self) -> str:
        return self.deb or self.name


def deb_sources() -> tuple[DebSource, ...]:
    """Every source of the corpus, in the order it is written (the readers of other formats live in
    ``markup``, ``texts`` and, for the informal text (novels, fortunes, game dialogue), ``texts_rdata``,
    ``texts_games`` and ``texts_gettext``).

    Only public text: the project's evaluation corpora (Tiny Shakespeare, the
    embedded conversations, the SpamAssassin mail) are not sources, so no
    held-out text of theirs can be in a model pretrained on this corpus.
    """
    from benchmarks.tools.base_corpus import markup, texts, texts_games, texts_gettext, texts_rdata

    extra = {name: fn for name, fn in markup.SOURCES + texts.SOURCES}
    dictionary = "dictionary"
    informal = (
        DebSource("r-cran-janeaustenr", texts_rdata.extract_janeausten, kind="novel"),
        DebSource("fortunes", texts_games.extract_fortunes, kind="quotes"),
        DebSource("endless-sky-data", texts_games.extract_endless_sky, kind="game"),
        DebSource("crawl-common", texts_games.extract_crawl, kind="game"),
    ) + tuple(DebSource(name, fn, kind="game") for name, fn in texts_gettext.SOURCES)
    return (
        DebSource("python3.11-doc", extract_python_doc),
        DebSource("debian-handbook", extract_debian_handbook),
        DebSource("debian-reference-en", extract_debian_reference),
        DebSource("gnome-user-docs", extract_gnome_user_docs),
        DebSource("wordnet-base", extract_wordnet, kind=dictionary),
        DebSource("dict-gcide", extract_gcide, kind=dictionary),
        DebSource("dict-jargon", extract_jargon, kind=dictionary),
        DebSource("bible-kjv-text", extra["bible-kjv-text"], kind="bible"),
        DebSource("linux-doc", extra["linux-doc"], deb="linux-doc-6.1"),
        DebSource("perl-doc", extra["perl-doc"]),
        DebSource("git-doc", extra["git-doc"]),
        DebSource("gnu-standards", extra["gnu-standards"]),
        DebSource("debian-policy", extra["debian-policy"]),
        DebSource("doc-debian", extra["doc-debian"]),
        DebSource("debian-history", extra["debian-history"]),
        DebSource("manpages", extra["manpages"]),
        DebSource("dict-foldoc", extra["dict-foldoc"], kind=dictionary),
        DebSource("dict-devil", extra["dict-devil"], kind=dictionary),
        DebSource("gnome-devel-docs", extra["gnome-devel-docs"]),
    ) + informal


def first_corpus_sources() -> tuple[DebSource, ...]:
    """The nineteen sources of the corpus as first built (the shipped base's): documentation, dictionaries and
    the Bible, without the informal kinds."""
    from benchmarks.tools.base_corpus.mix import INFORMAL

    return tuple(s for s in deb_sources() if s.kind not in INFORMAL)


def packages() -> tuple[str, ...]:
    """The .deb packages the corpus is read from."""
    return tuple(s.package for s in deb_sources())


# --------------------------------------------------------------------------------------------------------------
# Packages: finding, extracting, versions


def find_debs(debs_dir: str, wanted: Iterable[str] | None = None) -> dict[str, str]:
    """package -> its ``<package>_*.deb`` in ``debs_dir`` (exactly one each; default: every ``packages()``)."""
    if not os.path.isdir(debs_dir):
        raise DataError(f"{debs_dir}: not a directory (--debs)")
    found = {}
    for package in (packages() if wanted is None else wanted):
        matches = sorted(glob.glob(os.path.join(glob.escape(debs_dir), f"{glob.escape(package)}_*.deb")))
        if not matches:
            raise DataError(f"{debs_dir}: no {package}_*.deb (download it with `apt-get download {package}`)")
        if len(matches) > 1:
            raise DataError(f"{debs_dir}: several {package}_*.deb ({', '.join(map(os.path.basename, matches))}); "
                            "keep one")
        found[package] = matches[0]
    return found


def _dpkg_deb(*args: str) -> str:
    if not shutil.which("dpkg-deb"):
        raise DataError("dpkg-deb not found: it is needed to read .deb files (install dpkg, or pass --extracted)")
    out = subprocess.run(["dpkg-deb", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise DataError(f"dpkg-deb {' '.join(args)} failed: {out.stderr.strip() or out.returncode}")
    return out.stdout


def deb_field(deb: str, field: str) -> str:
    return _dpkg_deb("-f", deb, field).strip()


def extract_deb(deb: str, dest: str) -> str:
    os.makedirs(dest, exist_ok=True)
    _dpkg_deb("-x", deb, dest)
    return dest


def changelog_version(root: str, package: str) -> str | None:
    """The version in the first line of the package's Debian changelog in an extracted tree, if any."""
    for name in ("changelog.Debian.gz", "changelog.gz"):
        path = os.path.join(root, "usr/share/doc", package, name)
        if os.path.isfile(path):
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                m = re.match(r"\S+ \(([^)]+)\)", f.readline())
            if m:
                return m.group(1)
    return None

"""The license of each source's text, as its package's ``usr/share/doc/<package>/copyright`` states it.

Read by hand from the copyright file of the pinned version (``debs.deb_sources``) and kept here so the
base model's card (``benchmarks.tools.package_base``) carries it beside the version and the ``.deb``'s
sha256; docs/data.md and the corpus records show the same table.  A source added to ``deb_sources``
needs its line here (tests/test_package_base.py checks that none is missing).
"""

from __future__ import annotations

#: source name (``DebSource.name``) -> license of the text read from it
LICENSES = {
    # technical documentation
    "python3.11-doc": "PSF",
    "debian-handbook": "GPL-2+ or CC-BY-SA-3.0",
    "debian-reference-en": "GPL-2+",
    "gnome-user-docs": "CC-BY-SA-3.0",
    "linux-doc": "GPL-2",
    "perl-doc": "GPL-1+ or Artistic",
    "git-doc": "GPL-2",
    "gnu-standards": "GFDL-1.3",
    "debian-policy": "GPL-2+ (and others per book)",
    "doc-debian": "GPL-2+, Open Publication License",
    "debian-history": "GPL-2+",
    "manpages": "Linux man-pages copyleft, GPL-2+",
    "gnome-devel-docs": "CC-BY-SA-3.0/4.0, GFDL",
    # dictionaries
    "wordnet-base": "WordNet 3.0",
    "dict-gcide": "GPL-2+",
    "dict-jargon": "public domain",
    "dict-foldoc": "GFDL-1.1+",
    "dict-devil": "public domain",
    # the Bible
    "bible-kjv-text": "public-domain text, package GPL-2+",
    # informal text
    "r-cran-janeaustenr": "MIT (package); the novels are public domain",
    "fortunes": "BSD (fortune-mod)",
    "endless-sky-data": "GPL-3+",
    "crawl-common": "GPL-2+",
    "cataclysm-dda-data": "CC-BY-SA-3.0",
    "naev-data": "GPL-3+",
    "freedroidrpg-data": "GPL-2+",
    "freedink-data": "GPL-3+ and CC-BY-3.0 (per file)",
    "widelands-data": "GPL-2+",
}
#: Battle for Wesnoth's data and campaign packages share one copyright file's terms.
WESNOTH_LICENSE = "GPL-2+"


def license_of(source: str) -> str | None:
    """The license of ``source``'s text, or None when it is not recorded here."""
    if source.startswith("wesnoth-"):
        return WESNOTH_LICENSE
    return LICENSES.get(source)

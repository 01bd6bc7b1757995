"""The English "public text" corpus a base language model is pretrained on (no TensorFlow).

The corpus is built from these Debian packages only, each read from its own
files (the readers of ``sources``, ``markup`` and ``texts``; the prose rule is in ``prose``, the
packages in ``debs``):

=====================  ===========================================================  ==============================
source (user prefix)   what is read                                                 one document (one client)
=====================  ===========================================================  ==============================
python3.11-doc         Sphinx HTML under ``usr/share/doc/python3.11/html``          one page
debian-handbook        DocBook HTML of the ``en-US`` book only                      one page
debian-reference-en    DocBook HTML ``usr/share/debian-reference/*.en.html``        one chapter
gnome-user-docs        Mallard ``.page`` files of the ``C`` (English) locale        one page
wordnet-base           ``usr/share/wordnet/data.*``: glosses and their examples     one synset
dict-gcide             dictd ``gcide.dict.dz`` + ``.index`` (Webster's 1913 + ...)  one headword
dict-jargon            dictd ``jargon.dict.dz`` + ``.index`` (the Jargon File)      one headword
bible-kjv-text         ``texts``: the King James Bible                              one chapter
linux-doc              ``markup``: the kernel's reST (package ``linux-doc-6.1``)    one file
perl-doc, manpages     ``markup``: POD, roff                                        one page
git-doc, gnu-standards, debian-policy    ``markup``: HTML                           one page
doc-debian, debian-history, dict-foldoc, dict-devil, gnome-devel-docs    ``texts``  one file / chapter / headword / page
r-cran-janeaustenr     ``texts_rdata``: Austen's six novels (R lazy-load data)      one chapter
fortunes, endless-sky-data, crawl-common    ``texts_games``: fortunes, game data     one fortune / mission / entry
cataclysm-dda-data, naev-data, freedroidrpg-data, freedink-data, widelands-data, wesnoth-1.16-data and
the 16 wesnoth-1.16 campaigns    ``texts_gettext``: msgids of the .mo catalogs       a domain's hash bucket
=====================  ===========================================================  ==============================

Each source has a kind (``mix.KINDS``: technical, dictionary, bible, novel,
game, quotes); ``mix.word_caps`` keeps each source and each kind under a share
of the corpus (defaults ``DEFAULT_MAX_SOURCE_SHARE``, ``DEFAULT_MAX_KIND_SHARE``),
dropping whole documents as ``cap``.  Before the caps, ``filters`` drops the
sentences with profanity or gore and those sharing a word 8-gram (or the whole
sentence) with an evaluation corpus, each counted by reason.

No evaluation corpus of the project is a source: Tiny Shakespeare, the
embedded conversations (chatterbot-corpus) and the SpamAssassin mail stay out
whole, so a model pretrained here has seen none of their text, held-out or
not, under any partition.  The packaged base ships a fingerprint of this
corpus's sentences (``keyboard_lm.data.overlap``) that every warm-started run
checks its own text against.

What the extractors drop, and why (each dropped piece of text is counted by
source and reason, in pieces and whitespace words: nothing is dropped
silently):

* markup: tags are stripped; ``<br>`` and block boundaries become paragraph
  breaks; inline code in a sentence (``<code>``, ``<gui>``...) keeps its text;
* ``code_block``: ``<pre>``, Sphinx ``div.highlight*``, DocBook screens and
  program listings, Mallard ``<screen>``, ``<listing>`` and block ``<code>``,
  indented literal blocks of the Jargon File that do not read as prose;
* ``table``, ``heading`` (titles), ``toc``, ``navigation`` and
  ``page_chrome`` (everything outside the page's content), ``signature``
  (Sphinx API signatures), ``index_page`` (genindex, module index, search
  page), ``license`` (license pages, legal notices, database headers);
* ``mostly_symbols``: a record whose *plain words* (letters with inner ``'``
  or ``-``, abbreviations, numbers, with punctuation around them) make up less
  than 2/3 of its whitespace tokens or less than half of its non-space
  characters (``prose_verdict``), e.g. a path, a command line, an expression,
  a sentence that is mostly identifiers; ``too_short``: fewer than
  ``MIN_WORDS`` (3) plain words;
* ``duplicate``: a record already kept from the same source (exact text);
* the dictionaries: headwords, pronunciations and etymologies, source tags
  (``[1913 Webster]``), sense numbers and field labels, synonym lists,
  quotation attributions, usage tags (see ``dictd.gcide_records``,
  ``dictd.jargon_records``, ``sources.wordnet_records``).

Run ``python -m benchmarks.tools.base_corpus.builder --debs DIR --out DIR`` (``benchmarks/tools/base_corpus.sh`` downloads the packages).  It writes
``corpus.jsonl`` (``{"user": "<source>/<document>", "text": ...}`` per line,
read by ``--format jsonl``) and ``report.json`` (package versions, sha256 of
the ``.deb`` files and of the corpus, files read, documents, records and words
kept, dropped pieces and words by reason).  The output depends only on the
inputs: files are read in sorted order and nothing depends on the clock.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from typing import Callable


from benchmarks.tools.base_corpus.debs import (changelog_version, deb_field, deb_sources, DebSource, extract_deb,
    find_debs, first_corpus_sources, packages)
from benchmarks.tools.base_corpus.filters import (GORE_WORDS, Blocklist, OverlapIndex, filter_records, load_overlap,
                                            parse_overlap_spec)
from benchmarks.tools.base_corpus.mix import (DEFAULT_MAX_KIND_SHARE, DEFAULT_MAX_SOURCE_SHARE, KINDS,
                                        MixConfig, cap_records, mix_report, word_caps)
from benchmarks.tools.base_corpus.prose import MIN_PLAIN_SHARE, MIN_PROSE_SHARE, MIN_WORDS, Record, Tally
from benchmarks.tools.base_corpus.sources import require_dir
from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.models.run_dir import sha256_file



# --------------------------------------------------------------------------------------------------------------
# Capping and building


@dataclasses.dataclass
class SourceResult:
    name: str
    info: dict
    tally: Tally
    records: list[Record]
    available_words: int
    available_records: int
    available_documents: int


def _words(records: list[Record]) -> int:
    return sum(len(t.split()) for _, t in records)


def _finish_source(name: str, info: dict, tally: Tally, records: list[Record], max_words: int | None,
                   log: Callable[[str], None]) -> SourceResult:
    available_words = _words(records)
    available_records = len(records)
    available_documents = len({d for d, _ in records})
    records = cap_records(records, max_words, tally)
    log(f"{name}: {len(records)} records, {_words(records)} words")
    return SourceResult(name, info, tally, records, available_words, available_records, available_documents)


def build(out_dir: str, *, roots: dict[str, str], debs: dict[str, str] | None = None,
          max_words_per_source: int | None = None, log: Callable[[str], None] = lambda message: None,
          sources: tuple[DebSource, ...] | None = None, blocklist: Blocklist | None = None,
          overlap: OverlapIndex | None = None, overlap_info: dict | None = None,
          mix: MixConfig | None = None) -> dict:
    """Write ``out_dir/corpus.jsonl`` and ``out_dir/report.json``; return the report.

    Args:
      out_dir: created if missing; its two files are replaced.
      roots: package name -> its extracted tree (``dpkg-deb -x``), for every package of ``packages()``.
      debs: package name -> its ``.deb``; versions and sha256 come from it.  Without it the
        version comes from the tree's Debian changelog and no sha256 is reported.
      max_words_per_source: cap each source at this many words (``cap_records``); None = no cap.
      log: called with a line of progress per source.
      sources: the sources to read (default: ``deb_sources()``, the corpus).
      blocklist, overlap: the sentence filters (``filters``); None = not applied.
      overlap_info: what ``filters.load_overlap`` read of each evaluation corpus, for the report.
      mix: shares no source or kind may exceed (``mix.word_caps``, after the filters and before
        ``max_words_per_source``); None = no share caps.
    """
    sources = deb_sources() if sources is None else sources
    if max_words_per_source is not None and max_words_per_source < 1:
        raise DataError(f"max_words_per_source must be >= 1, got {max_words_per_source}")
    missing = [s.package for s in sources if s.package not in roots]
    if missing:
        raise DataError(f"no extracted tree for package(s) {', '.join(missing)}")
    for package, root in roots.items():
        require_dir(root, f"extracted {package}")
    debs = debs or {}
    for package, deb in debs.items():
        if not os.path.isfile(deb):
            raise DataError(f"{deb}: not found ({package} .deb)")

    read = []
    for source in sources:
        tally = Tally()
        root = roots[source.package]
        records = list(source.extractor(root, tally))
        if blocklist is not None or overlap is not None:
            records = list(filter_records(records, tally, blocklist, overlap))
        deb = debs.get(source.package)
        if deb:
            info = {"package": source.package, "version": deb_field(deb, "Version"), "version_from": "deb control",
                    "deb": os.path.basename(deb), "deb_sha256": sha256_file(deb)}
        else:
            info = {"package": source.package, "version": changelog_version(root, source.package),
                    "version_from": "changelog in the extracted tree", "deb": None, "deb_sha256": None}
        if deb and source.package != source.name:
            info["metapackage"] = source.name
        info["kind"] = source.kind
        read.append((source, info, tally, records))
        log(f"{source.name}: read {_words(records)} words")
    caps = {s.name: max_words_per_source for s, _, _, _ in read}
    if mix is not None:
        shares = word_caps({s.name: _words(r) for s, _, _, r in read}, {s.name: s.kind for s, _, _, _ in read}, mix)
        caps = {name: shares[name] if cap is None else min(cap, shares[name]) for name, cap in caps.items()}
    results = [_finish_source(s.name, info, tally, records, caps[s.name], log) for s, info, tally, records in read]

    os.makedirs(out_dir, exist_ok=True)
    corpus_path = os.path.join(out_dir, "corpus.jsonl")
    tmp = corpus_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for result in results:
            for doc, text in result.records:
                f.write(json.dumps({"user": doc, "text": text}, ensure_ascii=False) + "\n")
    os.replace(tmp, corpus_path)

    sources = {}
    for r in results:
        dropped = r.tally.dropped_json()
        sources[r.name] = {
            **r.info,
            "files_read": r.tally.files_read,
            "files_not_read": dict(sorted(r.tally.files_skipped.items())),
            "documents": len({d for d, _ in r.records}),
            "records": len(r.records),
            "words": _words(r.records),
            "documents_available": r.available_documents,
            "records_available": r.available_records,
            "words_available": r.available_words,
            "dropped": dropped,
            "dropped_words": sum(v["words"] for v in dropped.values()),
        }
    total_words = sum(s["words"] for s in sources.values()) or 1
    for s in sources.values():
        s["share"] = round(s["words"] / total_words, 4)
    filtered: dict[str, dict] = {}
    for s in sources.values():
        for reason, d in s["dropped"].items():
            if reason in ("profanity", "gore", "placeholder", "filter_remainder") or reason.startswith("overlap_"):
                entry = filtered.setdefault(reason, {"records": 0, "words": 0})
                entry["records"] += d["records"]
                entry["words"] += d["words"]
    report = {
        "builder": "benchmarks.tools.base_corpus.builder",
        "format": "jsonl: {\"user\": \"<source>/<document>\", \"text\": \"<paragraph>\"} (--format jsonl)",
        "rules": {"min_words": MIN_WORDS, "min_plain_token_share": MIN_PLAIN_SHARE,
                  "min_plain_char_share": MIN_PROSE_SHARE,
                  "words": "whitespace-separated", "max_words_per_source": max_words_per_source,
                  "mix": mix.as_json() if mix is not None else None,
                  "blocklist": None if blocklist is None else {
                      "profanity": "better-profanity 0.7.0 profanity_wordlist.txt less filters.ORDINARY_WORDS",
                      "profanity_entries": len(blocklist.words) + len(blocklist.prefixes) + len(blocklist.phrases)
                      - len(GORE_WORDS), "gore_words": len(GORE_WORDS)},
                  "overlap": None if overlap is None else {
                      "ngram": OverlapIndex.N, "whole_sentence_min_words": OverlapIndex.MIN_SENTENCE,
                      "corpora": overlap_info or {}}},
        "sources": sources,
        "mix": mix_report({n: s["words"] for n, s in sources.items()}, {n: s["kind"] for n, s in sources.items()}),
        "filtered": dict(sorted(filtered.items())),
        "totals": {"sources": len(sources),
                   "documents": sum(s["documents"] for s in sources.values()),
                   "records": sum(s["records"] for s in sources.values()),
                   "words": sum(s["words"] for s in sources.values()),
                   "words_available": sum(s["words_available"] for s in sources.values()),
                   "dropped_words": sum(s["dropped_words"] for s in sources.values())},
        "corpus": "corpus.jsonl",
        "corpus_sha256": sha256_file(corpus_path),
    }
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(report, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return report


def format_summary(report: dict) -> str:
    """A per-source table of a build report."""
    rows = [("source", "version", "kind", "docs", "records", "words", "share", "available", "dropped words")]
    for name, s in report["sources"].items():
        rows.append((name, str(s.get("version") or "-"), s.get("kind", "-"), str(s["documents"]),
                     str(s["records"]), str(s["words"]), f"{s.get('share', 0):.3f}", str(s["words_available"]),
                     str(s["dropped_words"])))
    t = report["totals"]
    rows.append(("total", "", "", str(t["documents"]), str(t["records"]), str(t["words"]), "1.000",
                 str(t["words_available"]), str(t["dropped_words"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    if "mix" in report:
        kinds = ", ".join(f"{k} {v['words']} ({v['share']:.1%})" for k, v in report["mix"]["kinds"].items())
        lines.append(f"mix: {kinds}; informal {report['mix']['informal_share']:.1%}")
    if report.get("filtered"):
        lines.append("filtered: " + ", ".join(f"{r} {v['words']} words ({v['records']} sentences)"
                                             for r, v in report["filtered"].items()))
    lines.append(f"corpus sha256 {report['corpus_sha256']}")
    return "\n".join(lines)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 < share <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {share}")
    return share


def _kind_share(value: str) -> tuple[str, float]:
    kind, eq, share = value.partition("=")
    if not eq or kind not in KINDS:
        raise argparse.ArgumentTypeError(f"expected KIND=SHARE with KIND one of {', '.join(KINDS)}, got {value!r}")
    return kind, _share(share)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tools.base_corpus.builder",
        description="Build the English public-text corpus (corpus.jsonl + report.json) from Debian "
                    "packages of documentation, dictionaries, novels, fortunes and game dialogue (public text "
                    "only: no evaluation corpus of the project, and none of their sentences).")
    parser.add_argument("--debs", help="directory with one <package>_*.deb per package (" + ", ".join(packages())
                        + "); extracted into a temporary directory with dpkg-deb unless --extracted is given")
    parser.add_argument("--extracted", help="directory with one extracted tree per package, named like the "
                        "package (dpkg-deb -x FILE DIR/<package>); with --debs the versions and sha256 still "
                        "come from the .deb files")
    parser.add_argument("--out", required=True, help="output directory (corpus.jsonl, report.json)")
    parser.add_argument("--max-words-per-source", type=_positive_int, default=None,
                        help="cap every source at N whitespace words (whole documents in a fixed pseudo-random "
                             "order); default: no cap")
    parser.add_argument("--max-source-share", type=_share, default=DEFAULT_MAX_SOURCE_SHARE,
                        help="no source above this share of the corpus's words (default %(default)s; 1 = no cap)")
    parser.add_argument("--max-kind-share", action="append", type=_kind_share, metavar="KIND=SHARE",
                        help=f"no kind of text ({', '.join(KINDS)}) above this share; repeatable "
                             f"(default: {' '.join(f'{k}={v}' for k, v in DEFAULT_MAX_KIND_SHARE)})")
    parser.add_argument("--overlap", action="append", metavar="NAME=FORMAT:PATH",
                        help="an evaluation corpus no sentence may share text with (read with --format FORMAT); "
                             "repeatable; the embedded corpus ('default') is always checked")
    parser.add_argument("--no-filters", action="store_true",
                        help="no profanity, gore or overlap filter and no share caps")
    parser.add_argument("--first-corpus", action="store_true",
                        help="the corpus as first built (the shipped base's): the nineteen packages of "
                             "documentation, dictionaries and the Bible, no filters, no share caps")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if not args.debs and not args.extracted:
        parser.error("give --debs DIR or --extracted DIR")
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    start = time.monotonic()
    chosen = first_corpus_sources() if args.first_corpus else deb_sources()
    args.no_filters = args.no_filters or args.first_corpus
    try:
        debs = find_debs(args.debs, [s.package for s in chosen]) if args.debs else None
        with tempfile.TemporaryDirectory(prefix="public_text.") as tmp:
            if args.extracted:
                require_dir(args.extracted, "--extracted")
                roots = {}
                for p in (s.package for s in chosen):
                    roots[p] = os.path.join(args.extracted, p)
                    if not os.path.isdir(roots[p]):
                        raise DataError(f"{roots[p]}: not found (extracted tree of package {p})")
            else:
                roots = {}
                for p, deb in debs.items():
                    log(f"extracting {os.path.basename(deb)}")
                    roots[p] = extract_deb(deb, os.path.join(tmp, p))
            if args.no_filters:
                filters = {}
            else:
                specs = [("default", "default", None)] + [parse_overlap_spec(o) for o in args.overlap or []]
                log("reading the evaluation corpora for the overlap check: " + ", ".join(n for n, _, _ in specs))
                overlap, overlap_info = load_overlap(specs)
                filters = {"blocklist": Blocklist.load(), "overlap": overlap, "overlap_info": overlap_info,
                           "mix": MixConfig(args.max_source_share,
                                            tuple(args.max_kind_share or DEFAULT_MAX_KIND_SHARE))}
            report = build(args.out, roots=roots, debs=debs,
                           max_words_per_source=args.max_words_per_source, log=log, sources=chosen, **filters)
    except (DataError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_summary(report))
    print(f"wrote {os.path.join(args.out, 'corpus.jsonl')} and report.json in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Build the English public-text corpus of the base model from scratch on a Debian machine:
#   1. `apt-get download` the 45 Debian packages it is made of (apt's own sources; no archive is
#      named here) into OUT_DIR/debs, skipping those already there: nineteen of documentation,
#      dictionaries and the Bible, and 26 of informal text (Austen's novels, fortunes, game dialogue);
#   2. `python -m benchmarks.tools.base_corpus.builder`, which extracts them with dpkg-deb into a temporary
#      directory, drops profanity, gore and every sentence sharing text with an evaluation corpus, caps
#      each source's and each kind's share, and writes OUT_DIR/corpus.jsonl and OUT_DIR/report.json
#      (versions and sha256 of the .deb files, words kept and dropped by reason, the mix, sha256 of the corpus).
# Public text only: none of the project's evaluation corpora (Tiny Shakespeare, the embedded conversations,
# the SpamAssassin mail) is a source, and their sentences and 8-grams are filtered out; the two files
# ../shared/data holds are checked when present (a warning says when one is not).
#
# Usage: benchmarks/tools/base_corpus.sh [OUT_DIR] [-- EXTRA_BUILDER_ARGS...]   (OUT_DIR: build/base_corpus)
#   e.g. benchmarks/tools/base_corpus.sh build/base_corpus_v2
#        benchmarks/tools/base_corpus.sh build/base_corpus -- --first-corpus --max-words-per-source 1000000
#        (the shipped base's corpus)
# Environment: PYTHON (default .venv/bin/python of the repository), BASE_CORPUS_PIN=1 to download the
# exact versions of the reference build below instead of apt's candidates (an archive may have dropped
# an old version).
# Needs apt-get and dpkg-deb; runs `apt-get update` (as root) only when apt knows none of the packages.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"

out="$repo/build/base_corpus"  # the default; a given OUT_DIR is relative to the current directory
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  case "$1" in /*) out="$1" ;; *) out="$(pwd)/$1" ;; esac
  shift
fi
if [ "${1:-}" = "--" ]; then
  shift
fi

# linux-doc is a metapackage: its text is in linux-doc-6.1, which is what is downloaded and read.
packages=(python3.11-doc debian-handbook debian-reference-en gnome-user-docs wordnet-base dict-gcide dict-jargon
          bible-kjv-text linux-doc-6.1 perl-doc git-doc gnu-standards debian-policy doc-debian debian-history
          manpages dict-foldoc dict-devil gnome-devel-docs
          r-cran-janeaustenr fortunes endless-sky-data crawl-common cataclysm-dda-data naev-data freedroidrpg-data
          freedink-data widelands-data wesnoth-1.16-data wesnoth-1.16-did wesnoth-1.16-dm wesnoth-1.16-dw
          wesnoth-1.16-ei wesnoth-1.16-httt wesnoth-1.16-l wesnoth-1.16-low wesnoth-1.16-nr wesnoth-1.16-sof
          wesnoth-1.16-sota
          wesnoth-1.16-sotbe wesnoth-1.16-thot wesnoth-1.16-trow wesnoth-1.16-tsg wesnoth-1.16-ttb wesnoth-1.16-utbs)
# The versions of the reference build (Debian 12 "bookworm"), used with BASE_CORPUS_PIN=1.
pinned=("python3.11-doc=3.11.2-6+deb12u9" "debian-handbook=11.20220922" "debian-reference-en=2.100"
        "gnome-user-docs=43.0-2" "wordnet-base=1:3.0-37" "dict-gcide=0.48.5+nmu2" "dict-jargon=4.4.7-3.1"
        "bible-kjv-text=4.38" "linux-doc-6.1=6.1.192-2" "perl-doc=5.36.0-7+deb12u4" "git-doc=1:2.39.5-0+deb12u3"
        "gnu-standards=2022.03.23-0.1" "debian-policy=4.6.2.0" "doc-debian=11.3+nmu1" "debian-history=2.28"
        "manpages=6.03-2" "dict-foldoc=20230119-1" "dict-devil=1.0-13.1" "gnome-devel-docs=40.3-1"
        "r-cran-janeaustenr=1.0.0-1" "fortunes=1:1.99.1-7.3" "endless-sky-data=0.9.8-1.2"
        "crawl-common=2:0.28.0-1.1" "cataclysm-dda-data=0.F-3-9" "naev-data=0.8.2-1" "freedroidrpg-data=1.0-1"
        "freedink-data=1.08.20190120-2" "widelands-data=2:1.1-3" "wesnoth-1.16-data=1:1.16.9-1"
        "wesnoth-1.16-did=1:1.16.9-1"
        "wesnoth-1.16-dm=1:1.16.9-1" "wesnoth-1.16-dw=1:1.16.9-1" "wesnoth-1.16-ei=1:1.16.9-1"
        "wesnoth-1.16-httt=1:1.16.9-1" "wesnoth-1.16-l=1:1.16.9-1" "wesnoth-1.16-low=1:1.16.9-1"
        "wesnoth-1.16-nr=1:1.16.9-1" "wesnoth-1.16-sof=1:1.16.9-1" "wesnoth-1.16-sota=1:1.16.9-1"
        "wesnoth-1.16-sotbe=1:1.16.9-1" "wesnoth-1.16-thot=1:1.16.9-1" "wesnoth-1.16-trow=1:1.16.9-1"
        "wesnoth-1.16-tsg=1:1.16.9-1" "wesnoth-1.16-ttb=1:1.16.9-1" "wesnoth-1.16-utbs=1:1.16.9-1")

python="${PYTHON:-$repo/.venv/bin/python}"
for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "base_corpus.sh: $tool not found (a Debian machine is needed)" >&2; exit 1; }
done
[ -x "$python" ] || command -v "$python" >/dev/null ||
  { echo "base_corpus.sh: $python not found (run 'bash dev.sh env', or set PYTHON)" >&2; exit 1; }

debs="$out/debs"
mkdir -p "$debs"
apt_opts=()
if [ "$(id -u)" = 0 ]; then
  # As root apt downloads as the _apt user, which may not write here; keep root instead of warning.
  apt_opts=(-o APT::Sandbox::User=root)
fi
candidate() { apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }'; }
if [ -z "$(candidate python3.11-doc)" ] || [ "$(candidate python3.11-doc)" = "(none)" ]; then
  echo "base_corpus.sh: apt knows no python3.11-doc; running apt-get update" >&2
  apt-get update -qq >&2
fi
wanted=()
for i in "${!packages[@]}"; do
  p="${packages[$i]}"
  if compgen -G "$debs/${p}_*.deb" >/dev/null; then
    echo "base_corpus.sh: keeping $(cd "$debs" && ls "${p}"_*.deb)" >&2
  elif [ "${BASE_CORPUS_PIN:-0}" = 1 ]; then
    wanted+=("${pinned[$i]}")
  else
    wanted+=("$p")
  fi
done
if [ ${#wanted[@]} -gt 0 ]; then
  (cd "$debs" && apt-get download -q "${apt_opts[@]}" "${wanted[@]}" >&2)
fi

# The evaluation corpora beside the repository (as the tests find them); the embedded one is always checked.
overlap=()
shared="$(dirname "$repo")/shared/data"
for spec in "tinyshakespeare=shakespeare:$shared/tinyshakespeare/input.txt" \
            "spamassassin=mbox:$shared/spamassassin-ham/ham.mbox"; do
  if [ -f "${spec#*:}" ]; then
    overlap+=(--overlap "$spec")
  else
    echo "base_corpus.sh: ${spec#*:} not found: no overlap check against ${spec%%=*}" >&2
  fi
done

cd "$repo"
start=$(date +%s)
# Below the priority of a training run that shares the machine.
nice -n 10 "$python" -m benchmarks.tools.base_corpus.builder --debs "$debs" --out "$out" "${overlap[@]}" "$@"
echo "base_corpus.sh: built $out/corpus.jsonl in $(( $(date +%s) - start )) s" >&2

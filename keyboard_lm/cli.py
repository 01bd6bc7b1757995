"""The ``keyboard-lm`` command line.  Flags and argument parsing live only here."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*pkg_resources.*")

from keyboard_lm.errors import KeyboardLMError  # noqa: E402

FORMATS = ("default", "jsonl", "textdir", "shakespeare", "stackoverflow")


def add_data_args(p: argparse.ArgumentParser) -> None:
    """--data/--format/--skip-bad, shared by every command that reads a corpus."""
    p.add_argument("--data", metavar="PATH",
                   help="corpus file or directory (not needed for --format default; "
                        "for stackoverflow, the download cache directory)")
    p.add_argument("--format", default="default", choices=FORMATS,
                   help="corpus format (default: the embedded chatterbot-corpus English conversations)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed records and count them, instead of stopping at the first")


def load_corpus_from_args(args):
    """The corpus named by --data/--format."""
    if args.format == "stackoverflow":
        from keyboard_lm.federated.client_data import stackoverflow_corpus

        return stackoverflow_corpus(args.data)
    from keyboard_lm.data.corpora import load_corpus

    return load_corpus(args.data, args.format, skip_bad=args.skip_bad)


def cmd_data_stats(args) -> int:
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.data.stats import corpus_stats, format_stats

    corpus = load_corpus_from_args(args)
    stats = corpus_stats(corpus, vocab_size=args.vocab_size,
                         split=SplitConfig(heldout_fraction=args.heldout_fraction, seed=args.seed))
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keyboard-lm", description="Federated next-word prediction for mobile keyboards.")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="inspect corpora").add_subparsers(dest="data_command", required=True)
    stats = data.add_parser("stats", help="clients, examples, words, vocabulary coverage, OOV rate")
    add_data_args(stats)
    stats.add_argument("--vocab-size", type=int, default=10_000, help="vocabulary size incl. special tokens")
    stats.add_argument("--heldout-fraction", type=float, default=0.1, help="share of clients held out")
    stats.add_argument("--seed", type=int, default=0, help="seed of the client split")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=cmd_data_stats)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardLMError as e:
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keyboard-lm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

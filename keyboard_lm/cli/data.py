"""``keyboard-lm data stats``: clients, examples, words, vocabulary coverage and OOV rate of a corpus."""

from __future__ import annotations

import json

from keyboard_lm.cli.args import (VOCAB_SIZE, add_data_args, add_split_args, load_corpus_from_args, positive_int,
                                  split_from_args)


def cmd_data_stats(args) -> int:
    from keyboard_lm.data.stats import corpus_stats, format_stats

    corpus = load_corpus_from_args(args)
    stats = corpus_stats(corpus, vocab_size=args.vocab_size,
                         split=split_from_args(args))
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def register(sub) -> None:
    """Add ``data stats``."""
    data = sub.add_parser("data", help="inspect corpora").add_subparsers(dest="data_command", required=True)
    stats = data.add_parser("stats", help="clients, examples, words, vocabulary coverage, OOV rate")
    add_data_args(stats)
    stats.add_argument("--vocab-size", type=positive_int, default=VOCAB_SIZE,
                       help="vocabulary size incl. special tokens (%(default)s)")
    add_split_args(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=cmd_data_stats)

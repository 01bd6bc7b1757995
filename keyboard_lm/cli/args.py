"""Arguments and helpers shared by several commands: corpus, split and number flags."""

from __future__ import annotations

import argparse
import math
import os
import sys

from keyboard_lm.data.corpora import READERS
from keyboard_lm.data.limits import MAGNITUDE_MAX, MAX_ROUNDS, SEED_MAX
from keyboard_lm.data.split import SplitConfig
from keyboard_lm.models.config import ModelConfig

#: Every --format: the corpus readers, and Stack Overflow, which comes through TFF.
FORMATS = (*READERS, "stackoverflow")
#: Default vocabulary size of every command that builds one (Hard et al.'s 10k).
VOCAB_SIZE = ModelConfig().vocab_size


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump), like every other CLI error."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _whole(text: str) -> int:
    """``int(text)``, or ArgumentTypeError quoting at most 40 characters of ``text`` (Python refuses to
    convert more than 4,300 digits, and no count or seed needs 40)."""
    try:
        if len(text) > 40:
            raise ValueError
        return int(text)
    except ValueError:
        shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text):,} characters)"
        raise argparse.ArgumentTypeError(f"expected a whole number, got {shown}") from None


def _int_at_least(minimum: int, maximum: int | None = None):
    """argparse type: an integer >= ``minimum`` (and <= ``maximum``, if given)."""

    def parse(text: str) -> int:
        value = _whole(text)
        if value < minimum or (maximum is not None and value > maximum):
            upper = "" if maximum is None else f" and <= {maximum:,}"
            raise argparse.ArgumentTypeError(f"must be >= {minimum}{upper}, got {value:,}")
        return value

    return parse


positive_int = _int_at_least(1)
non_negative_int = _int_at_least(0)
#: A federated round count (``limits.MAX_ROUNDS`` at most).
round_count = _int_at_least(1, MAX_ROUNDS)


def _int_in(minimum: int, maximum: int, what: str):
    """argparse type: an integer in [``minimum``, ``maximum``], ``what`` naming the range in the error."""

    def parse(text: str) -> int:
        value = _whole(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
        return value

    return parse


#: A seed numpy accepts (``keyboard_lm.limits.SEED_MAX``).
seed_int = _int_in(0, SEED_MAX, "a whole number in [0, 2**32 - 1]")
#: A TCP port to listen on or connect to.
port_number = _int_in(1, 65535, "a TCP port in [1, 65535]")


def _float_above(minimum: float, strict: bool, maximum: float = math.inf):
    """argparse type: a finite number > ``minimum`` (``strict``) or >= it, and at most ``maximum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text[:40]}")
        if (value <= minimum if strict else value < minimum) or value > maximum:
            upper = f" and <= {maximum:g}" if maximum < math.inf else ""
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum:g}{upper}, got {text[:40]}")
        return value

    return parse


positive_float = _float_above(0.0, strict=True)
non_negative_float = _float_above(0.0, strict=False)
#: A finite number, its range left to the config field it sets (a fraction, a momentum).
finite_float = _float_above(-math.inf, strict=False)
#: A rate, step size, norm or noise scale: finite, > 0 (or >= 0) and at most ``limits.MAGNITUDE_MAX``.
positive_magnitude = _float_above(0.0, strict=True, maximum=MAGNITUDE_MAX)
non_negative_magnitude = _float_above(0.0, strict=False, maximum=MAGNITUDE_MAX)


def comma_list(item):
    """argparse type: comma-separated values, each parsed (and checked) by the argparse type ``item``."""

    def parse(text: str) -> list:
        try:
            values = [item(v.strip()) for v in text.split(",") if v.strip()]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"expected comma-separated values: {e}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, got {text!r}")
        return values

    return parse


def add_data_args(p: argparse.ArgumentParser) -> None:
    """--data/--format/--skip-bad, shared by every command that reads a corpus."""
    p.add_argument("--data", metavar="PATH",
                   help="corpus file or directory (not needed for --format default; "
                        "for stackoverflow, the download cache directory)")
    p.add_argument("--format", default="default", choices=FORMATS,
                   help="corpus format (default: the embedded chatterbot-corpus English conversations)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed records and count them, instead of stopping at the first")
    p.add_argument("--partition", default="natural", choices=("natural", "iid", "record"),
                   help="natural: the corpus' own users; iid: pool the records and deal them to "
                        "--num-clients synthetic clients (Ji et al.), seeded by --split-seed; record: one "
                        "client per record (a speech of Tiny Shakespeare, for user-level DP) (natural)")
    p.add_argument("--num-clients", type=positive_int, default=None, metavar="N",
                   help="clients of --partition iid")


def load_corpus_from_args(args):
    """The corpus named by --data/--format, re-partitioned if --partition asks."""
    from keyboard_lm.data.partition import apply_partition

    if args.format == "stackoverflow":
        from keyboard_lm.federated.client_data import stackoverflow_corpus

        corpus = stackoverflow_corpus(args.data)
    else:
        from keyboard_lm.data.corpora import load_corpus

        corpus = load_corpus(args.data, args.format, skip_bad=args.skip_bad)
        if args.skip_bad and corpus.skipped:  # skipped, never dropped silently: one line, before any work on it
            print(f"keyboard-lm: --skip-bad: {corpus.skipped_summary()}", file=sys.stderr)
    seed = getattr(args, "partition_seed", None)
    return apply_partition(corpus, getattr(args, "partition", "natural"), getattr(args, "num_clients", None),
                           getattr(args, "split_seed", 0) if seed is None else seed)


def data_source(args) -> dict:
    """How to load the corpus again (run.json "data.source"; eval reloads it from there)."""
    source = {"path": data_path(args), "format": args.format}
    if getattr(args, "partition", "natural") != "natural":
        source.update(partition=args.partition, num_clients=args.num_clients, partition_seed=args.split_seed)
        if args.partition == "record":
            source.update(num_clients=None, partition_seed=None)
    return source


def add_split_args(p: argparse.ArgumentParser) -> None:
    split = SplitConfig()
    p.add_argument("--heldout-fraction", type=finite_float, default=split.heldout_fraction,
                   help="share of clients held out (%(default)s)")
    p.add_argument("--split-seed", type=seed_int, default=split.seed,
                   help="seed of the train/held-out client split, kept apart from --seed so a seed sweep "
                        "evaluates on the same clients (%(default)s)")


def split_from_args(args) -> SplitConfig:
    return SplitConfig(heldout_fraction=args.heldout_fraction, seed=args.split_seed)


def data_path(path_or_args) -> str | None:
    """A corpus path as recorded in run.json: absolute, so eval finds it from any directory."""
    path = getattr(path_or_args, "data", path_or_args)
    return os.path.abspath(path) if path else None


def default_data_to_run(args, info: dict) -> None:
    """Without --data/--format, use the corpus the run (or model) was trained on."""
    source = (info.get("data") or {}).get("source") or {}  # run.json or a model card's "data"
    if args.data is None and args.format == "default" and source:
        args.data, args.format = source.get("path"), source.get("format", "default")
        if args.partition == "natural" and source.get("partition", "natural") != "natural":
            args.partition, args.num_clients = source["partition"], source.get("num_clients")
            args.partition_seed = source.get("partition_seed", 0)


def check_same_corpus(args, corpus, info: dict, what: str) -> None:
    """Refuse to score a corpus other than the one ``what`` was trained on, unless told."""
    expected = (info.get("data") or {}).get("fingerprint")
    if expected and expected != corpus.fingerprint() and not args.allow_other_data:
        from keyboard_lm.errors import ConfigError

        raise ConfigError(f"{corpus.name} is not the corpus {what} was trained on (fingerprint "
                          f"{corpus.fingerprint()[:12]} != {expected[:12]}); its held-out clients would be "
                          f"a different set: pass --allow-other-data to evaluate on it anyway")

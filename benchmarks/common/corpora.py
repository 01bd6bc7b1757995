"""The corpora the studies train on, as `keyboard-lm train` arguments, and reading those arguments back."""

from __future__ import annotations

import os

SHARED = os.path.join("..", "shared", "data")
MAIL = os.path.join(SHARED, "spamassassin-ham", "ham.mbox")
SHAKESPEARE = os.path.join(SHARED, "tinyshakespeare", "input.txt")

#: name -> the corpus arguments of `keyboard-lm train`.
CORPORA = {
    "mail": ["--data", MAIL, "--format", "mbox"],
    "shakespeare": ["--data", SHAKESPEARE, "--format", "shakespeare"],
    "embedded": ["--format", "default"],
    # the same lines dealt IID to about as many clients as there are roles: rounds cost the same, and only
    # the users' skew differs from "shakespeare"
    "shakespeare-iid300": ["--data", SHAKESPEARE, "--format", "shakespeare", "--partition", "iid",
                           "--num-clients", "300"],
}


def flag_value(args: list[str], flag: str) -> str | None:
    """The value given to ``flag`` in an argument list, or None."""
    return args[args.index(flag) + 1] if flag in args else None


def ngram_args(corpus_args: list[str]) -> tuple:
    """(data, format, partition, num_clients) of a corpus given as train arguments, as the 5-gram takes them."""
    num_clients = flag_value(corpus_args, "--num-clients")
    return (flag_value(corpus_args, "--data"), flag_value(corpus_args, "--format"),
            flag_value(corpus_args, "--partition") or "natural", int(num_clients) if num_clients else None)

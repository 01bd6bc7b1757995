"""``keyboard-lm``: the parser of every command group and the one place errors become exit codes."""

from __future__ import annotations

import os
import platform
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*pkg_resources.*")

from keyboard_lm import __version__  # noqa: E402
from keyboard_lm.cli import data, demo, evaluate, export, personal, phrases, predict, privacy, train, worker  # noqa: E402
from keyboard_lm.cli.args import OneLineParser  # noqa: E402
from keyboard_lm.errors import KeyboardLMError  # noqa: E402
from keyboard_lm.log import show_on_stdout  # noqa: E402
from keyboard_lm.text import TEXT_SPEC_VERSION  # noqa: E402

#: Command groups in the order ``keyboard-lm --help`` lists them.
GROUPS = (data, train, phrases, evaluate, export, predict, personal, privacy, worker, demo)
#: Packages of the ``train`` extra: a command that needs one says how to install it.
TRAINING_STACK = ("tensorflow", "tensorflow_federated", "tensorflow_text", "yaml", "chatterbot_corpus", "matplotlib")


def build_parser() -> OneLineParser:
    """The ``keyboard-lm`` parser: one sub-command per ``register`` of each command group."""
    parser = OneLineParser(prog="keyboard-lm", description="Federated next-word prediction for mobile keyboards.")
    parser.add_argument("--version", action="version",
                        version=f"keyboard-lm {__version__} (text spec {TEXT_SPEC_VERSION}, "
                                f"Python {platform.python_version()})")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv=None) -> int:
    """Run one command; returns its exit code (2 for a usage or input error, with one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # progress lines show up at once in logs and pipes
    show_on_stdout()  # the library's progress lines (logging), one message a line, as they were printed
    try:
        return args.func(args)
    except KeyboardLMError as e:
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in TRAINING_STACK:
            print(f"keyboard-lm: error: '{args.command}' needs the training stack ({e.name} is not installed); "
                  f"install it with: pip install 'keyboard-lm[train]'", file=sys.stderr)
            return 2
        raise
    except OSError as e:  # a file that cannot be written or read, named by the OS error
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keyboard-lm: interrupted", file=sys.stderr)
        return 130

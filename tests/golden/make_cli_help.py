"""Write tests/golden/cli_help.txt: the --help of every `keyboard-lm` command, as the parser prints it.

    python tests/golden/make_cli_help.py

The file pins the command line while the code under it moves (tests/test_cli_help.py compares); run this
only when an option or its help is meant to change, and say so in the commit.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_help.txt")


def all_help() -> str:
    """Every command's and sub-command's help, in a fixed width, in parser order."""
    os.environ["COLUMNS"] = "120"
    from keyboard_lm.cli.main import build_parser

    out = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        out.append(f"==== {path}\n{parser.format_help()}")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "keyboard-lm")
    return "\n".join(out)


if __name__ == "__main__":
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(all_help())
    print(f"written {OUT}")

"""The ``keyboard-lm`` command line: one module per command group, flags and parsing only here.

``main.py`` builds the parser from each group's ``register``; ``args.py`` holds the flags several groups
share.  Recipe defaults are read from the library's config dataclasses, never typed here.
"""

from keyboard_lm.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

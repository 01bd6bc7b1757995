"""The ``keyboard-lm`` command line: one module per command group, flags and parsing only here.

``main.py`` builds the parser from each group's ``register`` and sends the library's progress lines
(``keyboard_lm.log``) to stdout; ``args.py`` holds the flags several groups share, ``flags.py`` declares
each training flag beside the config field it sets and ``train_flags.py`` lists ``train``'s. Recipe
defaults are read from the library's config dataclasses, never typed here.
"""

from keyboard_lm.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

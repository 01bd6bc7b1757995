"""Where the library's progress lines go: ``logging``, under the ``keyboard_lm`` logger.

Library modules log with ``logging.getLogger(__name__)``; a program chooses where the lines go. The
command line shows each line's message alone on stdout (:func:`show_on_stdout`), the lines it printed
before logging replaced ``log=print``. A caller that still passes a ``log=`` callable to a trainer gets
the run's lines through it instead (:func:`lines_to`), the way that parameter always worked.
"""

from __future__ import annotations

import contextlib
import logging

ROOT = "keyboard_lm"


class LineHandler(logging.Handler):
    """Each record's message, one line, to ``write`` (None: ``print``, looked up at each line so a replaced
    ``sys.stdout`` is honoured). An exception ``write`` raises reaches the code that logged: a caller's
    callback may stop a run, as it could when it was called directly."""

    def __init__(self, write=None):
        super().__init__(logging.INFO)
        self.write = write

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.write is None:
            print(message)
        else:
            self.write(message)


def show_on_stdout() -> None:
    """The command line's output: every ``keyboard_lm`` line at INFO and above, its message alone, on stdout."""
    logger = logging.getLogger(ROOT)
    if not any(isinstance(h, LineHandler) and h.write is None for h in logger.handlers):
        logger.addHandler(LineHandler())
    logger.setLevel(logging.INFO)
    logger.propagate = False  # TensorFlow configures the root logger; the lines are shown once, as they are


@contextlib.contextmanager
def lines_to(write):
    """Inside the block the library's lines go to ``write`` alone (a trainer's deprecated ``log=``
    callable); None leaves them where logging sends them."""
    if write is None or isinstance(getattr(write, "__self__", None), logging.Logger):
        yield  # a logger's own method already sends the lines through logging
        return
    logger = logging.getLogger(ROOT)
    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers[:] = [LineHandler(write)]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.handlers[:], logger.propagate = saved[0], saved[2]
        logger.setLevel(saved[1])

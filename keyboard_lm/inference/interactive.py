"""``keyboard-lm predict --interactive``: a suggestion strip that follows your typing.

On a terminal, keys are read one at a time (raw mode): after a space the strip
shows next-word suggestions, while a word is being typed it shows completions.
Enter starts a new field, Ctrl-D or Ctrl-C quits.  Without a terminal (piped
input), each input line is treated as typed text and answered with one strip.
A ``context`` (``predict MODEL CONTEXT --interactive``) is the text each field
starts with, its words committed (a space is added after its last word): the
first strip is what ``predict MODEL CONTEXT`` prints, on a terminal the text
is shown (and can be erased), and each piped line is typed after it.
"""

from __future__ import annotations

import sys

from keyboard_lm.inference.predictor import Predictor


def _strip(pairs) -> str:
    # Gboard-style 3 slots: the most likely candidate in the center.
    words = [w for w, _ in pairs]
    if len(words) >= 3:
        words = [words[1], words[0], words[2]] + words[3:]
    return " | ".join(words) if words else "(no suggestion)"


def _strip_for(predictor: Predictor, typed: str, k: int) -> str:
    committed, _, partial = typed.rpartition(" ") if not typed.endswith(" ") else (typed, "", "")
    session = predictor.session()
    session.commit(committed)
    return _strip(session.complete(partial, k) if partial else session.suggestions(k))


def run_interactive(predictor: Predictor, k: int = 3, context: str = "") -> int:
    """Answer typing with suggestion strips until the input ends; every field starts with ``context``."""
    if context and not context[-1].isspace():
        context += " "  # its last word is committed, as ``predict MODEL CONTEXT`` reads it
    if not sys.stdin.isatty():
        for line in sys.stdin:
            print(_strip_for(predictor, context + line.rstrip("\n"), k))
        return 0
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    typed = context
    print("type; Enter = new field, Ctrl-D = quit\r")
    try:
        tty.setcbreak(fd)
        sys.stdout.write(f"\r\x1b[K{typed}   [{_strip_for(predictor, typed, k)}]")
        sys.stdout.flush()
        while True:
            ch = sys.stdin.read(1)
            if ch in ("\x04", "\x03", ""):
                break
            if ch in ("\r", "\n"):
                typed = context
            elif ch in ("\x7f", "\b"):
                typed = typed[:-1]
            else:
                typed += ch
            sys.stdout.write(f"\r\x1b[K{typed}   [{_strip_for(predictor, typed, k)}]")
            sys.stdout.flush()
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        print()
    return 0

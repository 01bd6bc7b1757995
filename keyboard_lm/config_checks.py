"""Range checks for the settings dataclasses: one line naming the field and the values it may take.

Every config class validates itself when it is made (``__post_init__``), so a bad setting fails before any
data is read or any model is built, as a ``ConfigError`` the command line prints without a traceback. These
helpers write that line the same way for every class. They sit in the lowest layer beside
``keyboard_lm.errors`` (no numpy, no TensorFlow), so the text and inference layers can use them too.
"""

from __future__ import annotations

import numbers

from keyboard_lm.errors import ConfigError


def _show(number) -> str:
    """A bound as a reader writes it: 100,000 for an int, 0.5 or 1e+06 for a float."""
    if isinstance(number, numbers.Integral):
        return f"{number:,}"
    return f"{number:g}"


def describe_range(low=None, high=None, *, low_open: bool = False, high_open: bool = False,
                   bounds: bool = False) -> str:
    """``in [0, 1)``, ``>= 1`` or ``<= 100``: the allowed values in the words the error messages use.

    ``bounds``: a range with both ends as two comparisons, ``> 0 and <= 1e+06``, the way a magnitude
    (a rate, a norm, a noise scale) and its ceiling read, where an interval reads as a fraction's.
    """
    if low is not None and high is not None and bounds:
        return f"{describe_range(low, low_open=low_open)} and {describe_range(high=high, high_open=high_open)}"
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{_show(low)}, {_show(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {_show(low)}"
    if high is not None:
        return f"{'<' if high_open else '<='} {_show(high)}"
    raise ValueError("a range needs a low or a high bound")


def in_range(value, low=None, high=None, *, low_open: bool = False, high_open: bool = False,
             integer: bool = False) -> bool:
    """Whether ``value`` is a real number (a whole one with ``integer``) within the bounds; NaN never is."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real):
        return False
    # Written as "not within" tests so that NaN, which compares false with everything, is outside.
    if low is not None and not (value > low if low_open else value >= low):
        return False
    if high is not None and not (value < high if high_open else value <= high):
        return False
    return True


def check_range(name: str, value, low=None, high=None, *, low_open: bool = False, high_open: bool = False,
                integer: bool = False, kind: str = "", bounds: bool = False) -> None:
    """Raise ConfigError unless ``low <= value <= high`` (strict at an open end; either bound may be None).

    ``integer``: the value must also be a whole number (an ``int``, not a ``bool``). ``kind`` names what the
    value is in the message (``an integer``, ``a probability``); ``bounds`` as in ``describe_range``. The message reads
    ``{name} must be [kind ]{range}, got {value!r}``, e.g. ``dropout must be in [0, 1), got 1.5``.
    """
    if not in_range(value, low, high, low_open=low_open, high_open=high_open, integer=integer):
        what = f"{kind} " if kind else ""
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        allowed = describe_range(low, high, low_open=low_open, high_open=high_open, bounds=bounds)
        raise ConfigError(f"{name} must be {what}{allowed}, got {shown}")


def check_fields(config, names, low=None, high=None, *, prefix: str = "", **options) -> None:
    """``check_range`` on each attribute of ``config`` in ``names``, named ``prefix + name`` in the message."""
    for name in names:
        check_range(prefix + name, getattr(config, name), low, high, **options)

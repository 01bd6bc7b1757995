"""Flags declared once, beside the config field each one sets: the parser and the config read one table.

A :class:`Flag` names its option, the config dataclass fields it sets
(``fields``), its argparse settings and a help template. ``add_flags`` builds
the options from a table; ``given`` reads back, for one config class, the
fields a user set. So a config field's default, its flag and the way the
flag's value reaches the config are written in one place, and a test checks
every field a table names against its dataclass.

Help templates are ``str.format`` strings over the namespace the caller
passes (for ``train``: the default configs, so ``{cen.epochs}`` prints
``CentralizedConfig().epochs``): a default shown in ``--help`` is read from
the dataclass, never retyped.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Mapping, Optional, Sequence


@dataclasses.dataclass(frozen=True)
class Flag:
    """One command-line option.

    Attributes:
      option: the option string, ``--client-lr``.
      help: a ``str.format`` template over the namespace given to ``add_flags``.
      fields: config class -> the field this flag sets in it (empty: a flag of the command, not of a config).
      kwargs: the rest of ``add_argument``'s settings (type, default, choices, metavar, action, ...).
        Without ``default`` the flag is None when left out, so the config keeps its own default.
      zero_off: a 0 on the command line is None (off) in the config.
    """

    option: str
    help: str
    fields: Mapping[type, str] = dataclasses.field(default_factory=dict)
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    zero_off: bool = False

    @property
    def dest(self) -> str:
        return self.option[2:].replace("-", "_")


def field_flag(option: str, config: type | Sequence[type] | Mapping[type, str], help: str,
               field: Optional[str] = None, zero_off: bool = False, **kwargs) -> Flag:
    """A flag that sets ``field`` (default: the option's name) of ``config``: one class, several, or a mapping
    from each class to its own name for the field."""
    if isinstance(config, Mapping):
        return Flag(option, help, dict(config), kwargs, zero_off)
    name = field or option[2:].replace("-", "_")
    classes = (config,) if isinstance(config, type) else tuple(config)
    return Flag(option, help, {c: name for c in classes}, kwargs, zero_off)


def flag(option: str, help: str, **kwargs) -> Flag:
    """A flag of the command itself (no config field)."""
    return Flag(option, help, {}, kwargs)


def add_flags(parser, flags: Sequence[Flag], namespace: Mapping[str, Any]) -> None:
    """``add_argument`` for each flag, its help rendered from ``namespace``."""
    for f in flags:
        parser.add_argument(f.option, help=f.help.format(**namespace), **f.kwargs)


def given(args: argparse.Namespace, flags: Sequence[Flag], config: type) -> dict:
    """The fields of ``config`` that ``args`` sets: every flag of ``flags`` for it whose value is not None."""
    out = {}
    for f in flags:
        if config in f.fields and getattr(args, f.dest, None) is not None:
            value = getattr(args, f.dest)
            out[f.fields[config]] = None if f.zero_off and value == 0 else value
    return out


def options_given(args: argparse.Namespace, flags: Sequence[Flag]) -> list[str]:
    """The options of ``flags`` that ``args`` sets (for "X applies only to Y" errors)."""
    return [f.option for f in flags if getattr(args, f.dest, None) not in (None, False)]

"""Errors that keyboard_lm raises for bad input.

Every user-facing failure is a ``KeyboardLMError`` whose message names what is
wrong and where (file, line, client), so the CLI can print it without a
traceback.
"""


class KeyboardLMError(Exception):
    """Base class of the errors keyboard_lm reports to users."""


class DataError(KeyboardLMError, ValueError):
    """A corpus file, record or client is unreadable or malformed."""


class ConfigError(KeyboardLMError, ValueError):
    """A setting, checkpoint or model description is invalid or inconsistent."""


class TrainingDivergedError(ConfigError):
    """The training loss became NaN/Inf or exploded; the last good state is kept."""

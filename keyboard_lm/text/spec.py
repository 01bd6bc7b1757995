"""The text spec: one definition of normalization, tokens and special tokens.

The spec is written in terms of Unicode general categories and plain character
lists so that every implementation (pure Python here, tensorflow-text ops in
``keyboard_lm.data.preprocessing``, Java in the Android demo) can follow it
without sharing code.  ``tests/golden/text_spec_vectors.json`` pins it.

Spec ``kblm-text-1``:

1. Normalize: control characters (general category Cc, U+0000-U+001F and
   U+007F-U+009F) become spaces, then Unicode NFKC, then the Unicode default lowercase mapping
   (Python ``str.lower``, Java ``toLowerCase(Locale.ROOT)``, ICU lower), then
   the apostrophe look-alikes U+2018, U+2019, U+02BC become U+0027.
2. Scan left to right; at each position take the first rule that matches, as
   a leftmost-first regular expression would:
   URL, NUMBER, WORD, EMOJI, TERMINATOR; any other single character is a
   separator and is dropped (white space, punctuation, control characters).
3. Tokens are the matches of URL, NUMBER, WORD and EMOJI.  A TERMINATOR ends
   the current sentence; so does the end of the text.  Sentences with no
   token are dropped (a lone "..." is not a sentence).

``W`` below is the class of letters, marks and numbers (general categories
L*, M*, N*).
"""

from __future__ import annotations

import dataclasses

TEXT_SPEC_VERSION = "kblm-text-1"

APOSTROPHE_VARIANTS = ("\u2018", "\u2019", "\u02bc")

#: Category Cc: replaced by a space before anything else (a NUL would
#: otherwise end the string in C-string based implementations).
CONTROL_RANGES = ((0x00, 0x1F), (0x7F, 0x9F))
RE2_CONTROL = r"[\x00-\x1f\x7f-\x{9f}]"

#: URL prefixes; a URL runs to the next ASCII white space (``URL_STOP``),
#: minus trailing characters from ``URL_TRAILING_STRIP``; it needs at least
#: one character after the prefix that is not stripped.
URL_PREFIXES = ("https://", "http://", "www.")
URL_STOP = " \t\n\r\f\v"
URL_TRAILING_STRIP = ".,!?;:'\")]}"

#: NUMBER: W-digits (category N*) groups joined by one of these, at least one join.
NUMBER_JOINERS = ".,:"

#: WORD: a run of W, optionally continued by "'" + run of W (don't, o'clock).
WORD_JOINER = "'"

#: EMOJI: one character of category So, followed by any number of
#: variation selector 16, skin tone modifiers, or ZWJ + another So character.
EMOJI_VARIATION_SELECTOR = "\ufe0f"
EMOJI_SKIN_TONES = ("\U0001f3fb", "\U0001f3fc", "\U0001f3fd", "\U0001f3fe", "\U0001f3ff")
EMOJI_ZWJ = "\u200d"

#: TERMINATOR: a run of sentence-ending characters.
TERMINATOR_CHARS = ".!?\u2026\u3002"

# The same rules as RE2 patterns, for tensorflow-text (kept here beside the
# prose so a change to one is a change to both).
_W = r"\p{L}\p{M}\p{N}"
RE2_URL = r"(?:https?://|www\.)[^ \t\n\r\f\v]*[^ \t\n\r\f\v\.,!\?;:'\"\)\]\}]"
RE2_NUMBER = r"\p{N}+(?:[\.,:]\p{N}+)+"
RE2_WORD = "[" + _W + "]+(?:'[" + _W + "]+)*"
RE2_EMOJI = r"\p{So}(?:\x{FE0F}|[\x{1F3FB}-\x{1F3FF}]|\x{200D}\p{So})*"
RE2_TERMINATOR = r"[\.!\?\x{2026}\x{3002}]+"
RE2_TOKEN = "|".join((RE2_URL, RE2_NUMBER, RE2_WORD, RE2_EMOJI))
RE2_KEEP = "|".join((RE2_URL, RE2_NUMBER, RE2_WORD, RE2_EMOJI, RE2_TERMINATOR))
RE2_ANY = RE2_KEEP + r"|(?s:.)"


@dataclasses.dataclass(frozen=True)
class SpecialTokens:
    """The special tokens, defined once for training, metrics, export and inference.

    Ids are fixed: they are the first entries of every vocabulary, so a
    vocabulary file, a checkpoint and a .tflite file agree on them.
    """

    pad: str = "<pad>"
    bos: str = "<bos>"
    eos: str = "<eos>"
    oov: str = "<oov>"

    @property
    def tokens(self) -> tuple[str, ...]:
        """The special tokens in id order."""
        return (self.pad, self.bos, self.eos, self.oov)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def bos_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    @property
    def oov_id(self) -> int:
        return 3

    @property
    def ids(self) -> tuple[int, ...]:
        return (self.pad_id, self.bos_id, self.eos_id, self.oov_id)


SPECIAL_TOKENS = SpecialTokens()

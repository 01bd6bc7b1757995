"""keyboard_lm: federated next-word prediction for mobile keyboards.

The public API is what this module exports; everything else is internal.
"""

from keyboard_lm.data.corpora import Corpus, load_corpus
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import ConfigError, DataError, KeyboardLMError
from keyboard_lm.text import SPECIAL_TOKENS, TEXT_SPEC_VERSION, SpecialTokens, Vocabulary, sentences, tokenize

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "Corpus", "DataError", "KeyboardLMError", "SPECIAL_TOKENS", "SpecialTokens",
    "SplitConfig", "TEXT_SPEC_VERSION", "Vocabulary", "load_corpus", "sentences", "split_clients", "tokenize",
]

"""The text spec and what reads words by it, without TensorFlow: normalization, tokenizer and vocabulary
(exported here), the phrase table, typo candidates and a word's spelling as the char encoder reads it
(``phrase_table``, ``typos``, ``spelling``)."""

from keyboard_lm.text.spec import SPECIAL_TOKENS, TEXT_SPEC_VERSION, SpecialTokens
from keyboard_lm.text.tokenizer import normalize, sentences, tokenize
from keyboard_lm.text.vocabulary import DEFAULT_VOCAB_SIZE, Vocabulary

__all__ = [
    "DEFAULT_VOCAB_SIZE",
    "SPECIAL_TOKENS",
    "SpecialTokens",
    "TEXT_SPEC_VERSION",
    "Vocabulary",
    "normalize",
    "sentences",
    "tokenize",
]

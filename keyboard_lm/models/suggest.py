"""Top-k next-word suggestions from a Keras model (for the demo and quick checks).

The app-side predictor over a .tflite file lives in ``keyboard_lm.inference``;
this one reads a run directory's Keras model directly.
"""

from __future__ import annotations

import numpy as np

from keyboard_lm.text import tokenizer
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary


def suggest(model, vocab: Vocabulary, context: str, k: int = 3) -> list[tuple[str, float]]:
    """The k most probable next words after ``context`` (special tokens never suggested).

    The context's last sentence is fed as ``<bos> w1 .. wn``; probabilities
    are the softmax over the whole vocabulary.
    """
    sents = tokenizer.sentences(context)
    words = [] if tokenizer.ends_sentence(context) or not sents else sents[-1]
    ids = np.array([[SPECIAL_TOKENS.bos_id, *vocab.encode(words)]], np.int32)
    logits = np.asarray(model(ids))[0, -1].astype(np.float64)  # [V]
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    probs[list(SPECIAL_TOKENS.ids)] = 0.0
    top = np.argsort(-probs)[:k]
    return [(vocab.token_of(int(i)), float(probs[i])) for i in top]

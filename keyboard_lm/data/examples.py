"""Sentences to next-word training examples, in plain Python (no TensorFlow).

Each sentence becomes ``[BOS] + ids + [EOS]``; a sentence longer than the
sequence length is cut into consecutive chunks so no word is dropped: chunk
``i`` predicts tokens ``i*S+1 .. i*S+S`` from the tokens before them.  Inputs
and targets are padded with the pad id (0), which the loss and metrics mask.
This is the reference for the tf.data pipeline in ``preprocessing.py``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary


def sentence_examples(ids: Sequence[int], seq_len: int) -> list[tuple[list[int], list[int]]]:
    """(inputs, targets) chunks of length ``seq_len`` for one encoded sentence."""
    sp = SPECIAL_TOKENS
    full = [sp.bos_id, *ids, sp.eos_id]
    out = []
    for start in range(0, len(full) - 1, seq_len):
        x = full[start:min(start + seq_len, len(full) - 1)]
        y = full[start + 1:start + seq_len + 1]
        out.append((x + [sp.pad_id] * (seq_len - len(x)), y + [sp.pad_id] * (seq_len - len(y))))
    return out


def corpus_examples(sentences: Iterable[Sequence[str]], vocab: Vocabulary, seq_len: int):
    """All (inputs, targets) chunks of tokenized sentences, in order."""
    for sentence in sentences:
        yield from sentence_examples(vocab.encode(sentence), seq_len)

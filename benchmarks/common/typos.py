"""The typo injection model: one substitution (a neighbouring key), transposition, omission or insertion."""

from __future__ import annotations

import numpy as np

KINDS = ("substitution", "transposition", "omission", "insertion")


def neighbour_keys() -> dict:
    """Each letter -> the letters next to it on the QWERTY layout."""
    from keyboard_lm.text.typos import QWERTY_ROWS, neighbours

    letters = "".join(QWERTY_ROWS)
    return {a: [b for b in letters if neighbours(a, b)] for a in letters}


def inject(word: str, rng: np.random.Generator, near: dict | None = None) -> tuple[str, str]:
    """(the word with one typo of the injection model, its kind); the word must be 3+ letters a-z."""
    near = near or neighbour_keys()
    while True:
        kind = KINDS[rng.integers(len(KINDS))]
        n = len(word)
        if kind == "substitution":
            i = int(rng.integers(n))
            return word[:i] + near[word[i]][rng.integers(len(near[word[i]]))] + word[i + 1:], kind
        if kind == "transposition":
            spots = [i for i in range(n - 1) if word[i] != word[i + 1]]
            if spots:
                i = spots[rng.integers(len(spots))]
                return word[:i] + word[i + 1] + word[i] + word[i + 2:], kind
            continue
        if kind == "omission":
            i = int(rng.integers(n))
            return word[:i] + word[i + 1:], kind
        i = int(rng.integers(n))
        keys = [word[i], *near[word[i]]]
        return word[:i + 1] + keys[rng.integers(len(keys))] + word[i + 1:], kind

"""Regenerate ``user_history_vectors.json``: what the Python ``UserHistory`` computes (run by hand).

    .venv/bin/python tests/golden/make_user_history_vectors.py

A small history (half-life 8 words, at most 12 words and 16 pairs, so decay and
both evictions happen) learns SENTENCES in order, then has its mixture weight
set to WEIGHT. The file holds the settings, the sentences, the state after
them (``to_dict``: what ``save`` writes, the weight included), and for each
context in PREVIOUS the full next-word distribution, the 5 most counted words
and the context's decayed count (``context_count``). tests/test_user_history.py
checks the committed file against the current Python code; the Java core's
UserHistoryGoldenTest reads it too.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from keyboard_lm.inference.user_history import UserHistory  # noqa: E402

SETTINGS = {"half_life": 8.0, "max_words": 12, "max_pairs": 16, "beta": 2.0}
SENTENCES = [["thanks", "anna"], ["see", "you", "at", "the", "meetup"], ["thanks", "anna"],
             ["the", "zorblaxen", "is", "ready"], ["café", "at", "noon"], ["thanks", "all"],
             ["see", "you", "soon"], ["the", "build", "is", "broken", "again"], ["thanks", "anna"],
             ["ok"], ["see", "the", "zorblaxen"], ["regards", "anna"]]
PREVIOUS = [None, "thanks", "the", "see", "is", "never-typed"]
#: The user's mixture weight (``UserHistory.weight``, as ``Session.personalize`` chooses it), set after learning.
WEIGHT = 0.2


def vectors() -> dict:
    h = UserHistory(**SETTINGS)
    for sentence in SENTENCES:
        h.learn(sentence)
    h.weight = WEIGHT  # the user's mixture weight, saved with the history
    return {"settings": SETTINGS, "sentences": SENTENCES, "state": h.to_dict(),
            "cases": [{"previous": prev, "distribution": h.distribution(prev), "top_words": h.top_words(5),
                       "context_count": h.context_count(prev)}
                      for prev in PREVIOUS]}


if __name__ == "__main__":
    out = HERE / "user_history_vectors.json"
    out.write_text(json.dumps(vectors(), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print("written", out)

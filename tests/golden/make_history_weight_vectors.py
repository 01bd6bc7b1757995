"""Regenerate ``history_weight_vectors.json``: the user's history weight the Python code chooses (run by hand).

    .venv/bin/python tests/golden/make_history_weight_vectors.py

For each case, a default ``UserHistory`` learns the case's history sentences (the
tokenized ``history`` texts, oldest first), a session of the golden model MODEL
holds it, and ``Session.choose_history_weight`` runs on the tokenized ``held_out``
texts with HISTORY_WEIGHTS: at each held-out word the 3 suggestions at every
weight, a hit when the word is among them, then the word is committed and learnt
into a copy of the history. The file holds the inputs as token lists, each
weight's hit count, the number of words and the chosen weight (most hits, equal
counts to the smaller weight), and for diagnosis the 3 suggested words at every
word and weight (``trace``, computed by repeating that loop here; its hits add up
to the real ones). tests/test_history_weight_golden.py checks the committed file
against the current Python code; the Java core's HistoryWeightGoldenTest reads it
and must count the same hits and choose the same weight.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from keyboard_lm.inference import Predictor  # noqa: E402
from keyboard_lm.inference.personalization import HISTORY_WEIGHTS  # noqa: E402
from keyboard_lm.inference.user_history import UserHistory  # noqa: E402
from keyboard_lm.text import tokenizer  # noqa: E402

OUT = HERE / "history_weight_vectors.json"
MODEL = "cifg_dynamic-range.tflite"
#: A user who writes about a device the model never saw ("zorblaxen"), in the model's own small vocabulary.
HISTORY = [
    "My printer is not working.",
    "Check the power cable.",
    "Restart the router and try again.",
    "I forgot my password.",
    "The zorblaxen is not connected.",
    "Is the zorblaxen plugged in?",
    "Turn the zorblaxen on.",
    "I think the zorblaxen is broken.",
    "My zorblaxen has no sound.",
    "Can you hear the zorblaxen?",
    "Try the other usb port.",
    "The zorblaxen won't turn on!",
]
CASES = [
    # The newest text of the same user: the history knows its words and contexts.
    {"name": "same user", "history": HISTORY,
     "held_out": ["My zorblaxen is not working.", "Turn the zorblaxen on.", "Check the zorblaxen cable.",
                  "Is the printer plugged in?"]},
    # Text the history never saw (nothing after most of its previous words): the model alone does as well.
    {"name": "new topic", "history": HISTORY,
     "held_out": ["What is your favorite movie?", "I like to play soccer with my friends.", "Who wrote that book?"]},
]


def sentences(texts: list[str]) -> list[list[str]]:
    return [s for text in texts for s in tokenizer.sentences(text)]


def history_of(history: list[list[str]]) -> UserHistory:
    h = UserHistory()
    for sentence in history:
        h.learn(sentence)
    return h


def trace(predictor: Predictor, history: list[list[str]], held_out: list[list[str]]) -> list[dict]:
    """The 3 words suggested at every held-out word and weight: ``choose_history_weight``'s loop, repeated."""
    trial = predictor.session(history=history_of(history))
    out = []
    for sentence in held_out:
        trial.reset()
        for word in sentence:
            top = {}
            for w in HISTORY_WEIGHTS:
                trial.history_weight = w
                top[repr(w)] = [x for x, _ in trial.suggestions(3)]
            out.append({"word": word, "top3": top})
            trial.commit_word(word)
    return out


def case(predictor: Predictor, spec: dict) -> dict:
    history, held_out = sentences(spec["history"]), sentences(spec["held_out"])
    h = history_of(history)
    before = h.to_dict()
    report = predictor.session(history=h).choose_history_weight(held_out)
    assert h.to_dict() == {**before, "weight": report["history_weight"]}, "choosing changed more than the weight"
    words = report["history_weight_words"]
    hits = [round(report["history_weight_emr3"][w] * words) for w in HISTORY_WEIGHTS]
    steps = trace(predictor, history, held_out)
    assert hits == [sum(s["word"] in s["top3"][repr(w)] for s in steps) for w in HISTORY_WEIGHTS], "trace disagrees"
    return {"name": spec["name"], "history": history, "held_out": held_out, "hits": hits, "words": words,
            "weight": report["history_weight"], "trace": steps}


def vectors() -> dict:
    predictor = Predictor.load(str(HERE / "models" / MODEL))
    return {"model": MODEL, "weights": list(HISTORY_WEIGHTS), "k": 3,
            "cases": [case(predictor, spec) for spec in CASES]}


if __name__ == "__main__":
    OUT.write_text(json.dumps(vectors(), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print("written", OUT)

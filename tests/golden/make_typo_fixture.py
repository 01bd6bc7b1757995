"""Regenerate ``typo_fixture.json`` (run by hand after a change to typo correction or to the demo's model).

    .venv/bin/python tests/golden/make_typo_fixture.py

The strips the Python predictor gives for words typed with typos, over the demo keyboard's model
(android_demo/app/src/main/assets/model.tflite: its vocabulary, phrase table and weights, named by its sha256):
for every case in CASES (each slip of ``keyboard_lm.text.typos``, the letters as typed kept or not, a phrase
table match, a user history, blocklisted words, strips of 1 to 5 words, the examples a user met), the words
and scores of ``Session.complete`` and the typo prefixes the index found; also the QWERTY neighbours and the
default channel's factors with their natural logs. tests/test_typo_parity.py checks that the committed file
is what this script and the current Python predictor give; the Java core's TypoParityGoldenTest reads the
same file and must give the same strips.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODEL = REPO / "android_demo" / "app" / "src" / "main" / "assets" / "model.tflite"
FIXTURE = HERE / "typo_fixture.json"
K = 3
_HISTORY = [["meet", "zorblax", "today"], ["meet", "the", "team"], ["meet", "zorblaxian", "friends"]] * 3
#: The cases, each named. "context": the committed text; "typed": the letters of the word being typed;
#: "k": the strip's length (default K); "history": sentences a UserHistory learnt first; "blocklist": the
#: predictor's.
CASES = [
    {"name": "swapped letters: see you at the weke", "context": "see you at the", "typed": "weke"},
    {"name": "swapped letters of a word the vocabulary holds: i think teh", "context": "i think", "typed": "teh"},
    {"name": "swapped letters: going to the sotre", "context": "going to the", "typed": "sotre"},
    {"name": "a neighbouring key", "context": "i would like to", "typed": "wprk"},
    {"name": "a neighbouring key, another", "context": "i would like to", "typed": "wlrk"},
    {"name": "a far key", "context": "i would like to thank you", "typed": "becamse"},
    {"name": "a far key in four letters is not corrected", "context": "i would like to", "typed": "wzrk"},
    {"name": "a left-out letter", "context": "thanks for your", "typed": "hlp"},
    {"name": "a doubled letter", "context": "thanks for your", "typed": "hellp"},
    {"name": "a far extra letter", "context": "i would like to", "typed": "woqrk"},
    {"name": "a left-out apostrophe", "context": "i", "typed": "dont"},
    {"name": "no table match", "context": "please let me", "typed": "knwo"},
    {"name": "a sentence start", "context": "", "typed": "becuase"},
    {"name": "after a terminator", "context": "see you. ", "typed": "tomorow"},
    {"name": "upper case and spaces", "context": "i think", "typed": " Teh "},
    {"name": "two letters: no correction yet", "context": "i think", "typed": "th"},
    {"name": "nothing one slip away", "context": "i think", "typed": "qzxv"},
    {"name": "letters typed right, corrections compete", "context": "see you at the", "typed": "wee"},
    {"name": "letters typed right, a short word", "context": "i would like to", "typed": "kno"},
    {"name": "longer than the letters corrected", "context": "", "typed": "internationalizationsx"},
    {"name": "a one-word strip", "context": "i think", "typed": "teh", "k": 1},
    {"name": "five words", "context": "see you at the", "typed": "weke", "k": 5},
    {"name": "two words", "context": "going to the", "typed": "sotre", "k": 2},
    {"name": "a blocklisted correction", "context": "i think", "typed": "teh", "blocklist": ["the"]},
    {"name": "blocklisted letters as typed", "context": "see you at the", "typed": "weke", "blocklist": ["weke"]},
    {"name": "history: a vocabulary word one slip away", "context": "meet", "typed": "tema", "history": _HISTORY},
    {"name": "history: the history's word by its prefix", "context": "meet", "typed": "zorbl", "history": _HISTORY},
    {"name": "history: the history's word with a typo is not corrected", "context": "meet", "typed": "zorbalx",
     "history": _HISTORY},
    {"name": "history and table", "context": "thanks for your", "typed": "hlep",
     "history": [["thanks", "for", "your", "help"], ["thanks", "for", "your", "hospitality"]] * 2},
]


def default_model() -> dict:
    """The default channel's factors and their natural logs (the Java core takes Math.log of the same values)."""
    sys.path.insert(0, str(REPO))
    import dataclasses

    from keyboard_lm.text.typos import TypoModel

    model = dataclasses.asdict(TypoModel())
    return {**model, "logs": {k: math.log(v) for k, v in model.items() if k != "min_letters"}}


def neighbours() -> dict:
    """{letter: its QWERTY neighbours, sorted}."""
    sys.path.insert(0, str(REPO))
    from keyboard_lm.text.typos import QWERTY_ROWS
    from keyboard_lm.text.typos import neighbours as near

    letters = "".join(QWERTY_ROWS)
    return {a: "".join(sorted(b for b in letters if near(a, b))) for a in sorted(letters)}


def fixture_cases(model_path: Path) -> list[dict]:
    """Each case with the Python predictor's strip and typo prefixes over ``model_path``."""
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference import Predictor, UserHistory
    from keyboard_lm.text import tokenizer

    predictors: dict = {}
    out = []
    for case in CASES:
        blocklist = tuple(case.get("blocklist", ()))
        if blocklist not in predictors:
            predictors[blocklist] = Predictor.load(str(model_path), blocklist=list(blocklist))
        p = predictors[blocklist]
        history = None
        if case.get("history"):
            history = UserHistory()
            for sentence in case["history"]:
                for prev, word in zip([None, *sentence], sentence):
                    history.learn_word(prev, word)
        s = p.session(history=history, learn=False)
        s.commit(case["context"])
        k = case.get("k", K)
        strip = s.complete(case["typed"], k)
        completion = p.ranker.completion(tokenizer.normalize(case["typed"]).strip())
        match = s._phrase()
        out.append({"name": case["name"], "context": case["context"], "typed": case["typed"], "k": k,
                    "blocklist": list(blocklist), "history": case.get("history"),
                    "phrase_weight": 0.0 if match is None else match.weight,
                    "history_share": s._history_share(),
                    "typos": [[prefix, f] for prefix, f in completion.typos],
                    "words": [w for w, _ in strip], "probabilities": [float(x) for _, x in strip]})
    return out


def fixture() -> dict:
    return {"model": "../../android_demo/app/src/main/assets/model.tflite",
            "model_sha256": hashlib.sha256(MODEL.read_bytes()).hexdigest(),
            "typo_model": default_model(), "neighbours": neighbours(), "cases": fixture_cases(MODEL)}


def main() -> None:
    sys.path.insert(0, str(REPO))
    from keyboard_lm.durable import replace_file

    data = fixture()
    replace_file(str(FIXTURE), (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"), mode=0o644)
    print(f"wrote {FIXTURE.relative_to(REPO)}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()

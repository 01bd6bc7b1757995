"""tests/golden/history_weight_vectors.json (read by the Java core's HistoryWeightGoldenTest) is what the code computes.

The file holds, per case, the history sentences, the held-out sentences, each weight's hits, the
number of words and the weight ``Session.choose_history_weight`` chose on the golden model
(tests/golden/make_history_weight_vectors.py writes it). A change to the predictor, the user
history, the weights or the golden model that moves any of them fails here; the fix is to rerun
the generator, review the diff, and run the Java suite (tests/test_android_core.py).
"""

import importlib.util
import json

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personalization import HISTORY_WEIGHTS
from tests.conftest import REPO

GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("make_history_weight_vectors",
                                                  GOLDEN / "make_history_weight_vectors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def committed():
    return json.loads((GOLDEN / "history_weight_vectors.json").read_text(encoding="utf-8"))


def test_the_committed_vectors_are_what_the_python_code_computes(generator, committed):
    fresh = json.loads(json.dumps(generator.vectors(), ensure_ascii=False))  # as written: tuples become lists
    assert fresh == committed


def test_the_vectors_cover_a_choice_the_history_wins_with_a_tie_and_one_it_does_not(committed):
    assert committed["weights"] == list(HISTORY_WEIGHTS) and committed["k"] == 3
    assert (GOLDEN / "models" / committed["model"]).is_file()
    by_name = {c["name"]: c for c in committed["cases"]}
    for c in committed["cases"]:
        assert c["words"] == sum(len(s) for s in c["held_out"]) == len(c["trace"])
        most = max(c["hits"])
        assert c["weight"] == min(w for w, h in zip(HISTORY_WEIGHTS, c["hits"]) if h == most)  # ties: the smaller
    same = by_name["same user"]
    assert same["weight"] > 0 and same["hits"].count(max(same["hits"])) >= 2  # the tie rule decides
    assert any("zorblaxen" in s for s in same["history"]) and any("zorblaxen" in s for s in same["held_out"])
    assert by_name["new topic"]["weight"] == 0.0


def test_choosing_needs_a_history_weights_in_range_and_a_word(generator):
    from keyboard_lm.inference import Predictor

    p = Predictor.load(str(GOLDEN / "models" / generator.MODEL))
    with pytest.raises(ConfigError, match="needs a user history"):
        p.session().choose_history_weight([["hello"]])
    s = p.session(history=generator.history_of([["hello", "there"]]))
    for bad in ([], [0.1, 1.5], [0.2, 0.2]):  # a weight twice would count its hits twice: refused, as in Java
        with pytest.raises(ConfigError, match=r"history weights must be distinct numbers in \[0, 1\]"):
            s.choose_history_weight([["hello"]], bad)
    for empty in ([], [[], []]):
        with pytest.raises(ConfigError, match="needs held-out text with at least one word"):
            s.choose_history_weight(empty)
    assert s.history.weight is None

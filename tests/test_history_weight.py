"""How much the user history weighs: per context (n / (n + K)) and per user (chosen on their newest text)."""

import pytest

from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.personalization import HISTORY_WEIGHTS
from keyboard_lm.inference.ranker import HISTORY_CONTEXT_K
from keyboard_lm.inference.session import HISTORY_WEIGHT
from keyboard_lm.inference.user_history import UserHistory
from tests.conftest import REPO

MODEL = str(REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite")


@pytest.fixture(scope="module")
def predictor():
    return Predictor.load(MODEL)


def test_a_context_the_user_never_typed_leaves_the_model_alone(predictor):
    history = UserHistory()
    for _ in range(6):
        history.learn(["see", "you", "at", "the", "zorblaxen"])
    with_history, without = predictor.session(history=history, learn=False), predictor.session()
    for s in (with_history, without):
        s.commit("what a lovely ")  # "lovely" never typed: n = 0
    assert history.context_count("lovely") == 0 and with_history.effective_history_weight() == 0
    assert with_history.suggestions(3) == without.suggestions(3)
    with_history.reset()
    with_history.commit("see you at the ")
    n = history.context_count("the")
    assert n > 5 and with_history.effective_history_weight() == pytest.approx(HISTORY_WEIGHT * n / (n + HISTORY_CONTEXT_K))
    assert with_history.suggestions(3)[0][0] == "zorblaxen"
    assert history.context_count(None) == history.context_count("<s>") > 5  # a sentence start


def test_the_weight_set_on_a_session_wins_over_the_users_which_wins_over_the_default(predictor, tmp_path):
    history = UserHistory()
    history.learn(["hello", "there"])
    s = predictor.session(history=history)
    assert s.history_weight == HISTORY_WEIGHT
    history.weight = 0.1
    assert s.history_weight == 0.1
    s.history_weight = 0.5
    assert s.history_weight == 0.5 and predictor.session(history=history).history_weight == 0.1
    path = str(tmp_path / "me.history")
    history.save(path)
    assert UserHistory.load(path).weight == 0.1
    history.clear()
    assert history.weight is None
    for bad in (-0.1, 1.5, True, "0.2"):
        with pytest.raises(ConfigError, match="history_weight must be a number"):
            s.history_weight = bad
        d = UserHistory().to_dict()
        d["weight"] = bad
        with pytest.raises(DataError, match="damaged user history"):
            UserHistory.from_dict(d, "me.history")


def test_personalize_chooses_the_users_weight_on_their_newest_text_and_learns_it_too(predictor):
    # a user who always writes the same sentences: the history predicts them, so it should weigh a lot
    texts = ["see you at the zorblaxen meetup tonight.", "thanks for the zorblaxen notes, anna."] * 10
    s = predictor.session()
    report = s.personalize(texts)
    assert report["history_weight"] == s.history.weight == s.history_weight
    emr3 = report["history_weight_emr3"]
    assert set(emr3) == set(HISTORY_WEIGHTS) and emr3[report["history_weight"]] == max(emr3.values())
    assert report["history_weight"] >= 0.2 and emr3[report["history_weight"]] > emr3[0.0]
    # every sentence is learnt, the newest tenth after it chose the weight
    assert report["history_words_learnt"] == s.history.clock == 10 * 7 + 10 * 6
    # given held-out text, that text chooses and is not learnt
    t = predictor.session()
    report = t.personalize(texts[:10], validation_texts=texts[10:12])
    assert report["history_words_learnt"] == t.history.clock == 5 * 7 + 5 * 6
    assert report["history_weight_words"] == 13
    # choose_weight=False keeps the default; too little text (under 10 sentences) chooses nothing
    assert predictor.session().personalize(texts, choose_weight=False).get("history_weight") is None
    assert "history_weight" not in predictor.session().personalize(texts[:4])


def test_choosing_needs_a_history_and_sane_weights(predictor):
    with pytest.raises(ConfigError, match="needs a user history"):
        predictor.session().choose_history_weight([["hello"]])
    s = predictor.session(history=UserHistory())
    s.history.learn(["hello", "there"])
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        s.choose_history_weight([["hello"]], weights=(0.2, 2.0))
    with pytest.raises(ConfigError, match="at least one word"):
        s.choose_history_weight([[]])
    before = s.history.to_dict()
    s.choose_history_weight([["hello", "there"]])
    after = s.history.to_dict()
    after.pop("weight")
    assert after == before  # choosing learns nothing into the user's history


def test_after_a_word_the_user_never_typed_the_graph_top_serves_the_strip():
    """The history's share is 0 there, so no full step is needed: the same answers, at the graph's cost."""
    from tests.test_prefix_cache import CountingModelFile

    model = CountingModelFile.load(MODEL)
    p = Predictor(model)
    history = UserHistory()
    for _ in range(3):
        history.learn(["see", "you", "at", "the", "zorblaxen"])
    s, plain = p.session(history=history, learn=False), Predictor.load(MODEL).session()
    s.commit("what a lovely")
    plain.commit("what a lovely")
    before = dict(model.steps)
    s.commit_word("day")  # never typed: the graph's top K
    plain.commit_word("day")
    assert model.steps == {"step": before["step"] + 1, "step_full": before["step_full"]}
    assert s.suggestions(3) == plain.suggestions(3)
    s.commit_word("the")  # typed after "at" before: the mixture reads the full distribution
    assert model.steps["step_full"] == before["step_full"] + 1
    assert "zorblaxen" in [w for w, _ in s.suggestions(3)]

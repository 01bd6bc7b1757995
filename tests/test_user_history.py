"""The user-history model: decayed word and word-pair counts of one user, bounded, stored safely."""

import json

import pytest

from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.inference.user_history import UserHistory


def test_pairs_rank_what_followed_the_previous_word_and_the_unigrams_fill_in():
    h = UserHistory()
    for _ in range(3):
        h.learn(["thanks", "john"])
    h.learn(["thanks", "all"])
    h.learn(["see", "you", "soon"])
    assert [w for w, _ in h.top("thanks", 2)] == ["john", "all"]
    assert h.top(None, 1)[0][0] == "thanks"  # a sentence's first word follows <s>
    assert h.top("unseen-word", 1)[0][0] in ("thanks", "john")  # no pair: the unigram counts decide
    for prev in ("thanks", "you", None, "unseen-word"):
        assert sum(h.distribution(prev).values()) == pytest.approx(1.0)
    assert "zorblaxen" not in h.distribution("thanks")
    h.learn(["zorblaxen"])  # any spelling, in the model's vocabulary or not
    assert h.count("zorblaxen") == pytest.approx(1.0)


def test_counts_halve_every_half_life_of_learnt_words():
    h = UserHistory(half_life=100)
    h.learn(["hello", "world"])
    # hello was counted at clock 1, world and the pair at clock 2 (now)
    assert h.count("hello") == pytest.approx(0.5 ** (1 / 100)) and h.count("world", "hello") == pytest.approx(1.0)
    for i in range(50):
        h.learn([f"w{i}", "x"])  # 100 more words
    assert h.count("hello") == pytest.approx(0.5 * 0.5 ** (1 / 100))  # counted at clock 1, now clock 102
    assert h.count("world", "hello") == pytest.approx(0.5)
    h.learn(["hello"])  # clock 103: the old count decays one more word, then one is added
    assert h.count("hello") == pytest.approx(0.5 ** (102 / 100) + 1.0)


def test_bounds_evict_the_faintest_entries_and_keep_the_distribution_whole():
    h = UserHistory(half_life=1000, max_words=20, max_pairs=30)
    for _ in range(5):
        h.learn(["regards", "anna"])
    for i in range(200):
        h.learn([f"once{i}"])
    assert h.num_words <= 20 and h.num_pairs <= 30
    assert h.count("regards") > 0 and h.count("anna", "regards") > 0  # frequent beats recent-but-once
    assert h.top("regards", 1)[0][0] == "anna"
    assert sum(h.distribution("regards").values()) == pytest.approx(1.0)


def test_state_round_trips_and_bad_files_are_refused_in_one_line(tmp_path):
    h = UserHistory(half_life=50)
    h.learn(["meet", "at", "noon"])
    h.learn(["meet", "at", "the", "café"])
    path = tmp_path / "user.history"
    h.save(str(path))
    back = UserHistory.load(str(path))
    assert back.distribution("at") == h.distribution("at") and back.clock == h.clock
    assert "café" in path.read_text(encoding="utf-8")  # the one file that holds what the user typed
    (tmp_path / "garbage").write_bytes(b"\x00\x01 not json")
    with pytest.raises(DataError, match="garbage: not a keyboard_lm user history"):
        UserHistory.load(str(tmp_path / "garbage"))
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}), encoding="utf-8")
    with pytest.raises(DataError, match="other.json: not a keyboard_lm user history"):
        UserHistory.load(str(tmp_path / "other.json"))
    d = h.to_dict()
    d["words"][0][1] = -3.0
    (tmp_path / "tampered.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(DataError, match="tampered.json: damaged user history"):
        UserHistory.load(str(tmp_path / "tampered.json"))
    d = h.to_dict()
    d["clock"] = float("inf")
    (tmp_path / "infinite.json").write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(DataError, match="infinite.json: damaged user history"):
        UserHistory.load(str(tmp_path / "infinite.json"))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(DataError, match="deep.json: not a keyboard_lm user history"):
        UserHistory.load(str(tmp_path / "deep.json"))
    with pytest.raises(DataError, match="cannot read"):
        UserHistory.load(str(tmp_path / "missing"))


def test_bad_arguments_and_clear():
    with pytest.raises(ConfigError, match="not a string"):
        UserHistory().learn("a whole sentence")
    with pytest.raises(ConfigError, match="half_life"):
        UserHistory(half_life=0)
    h = UserHistory()
    h.learn(["a", "b"])
    h.clear()
    assert h.num_words == 0 and h.distribution(None) == {} and h.clock == 0


def test_a_session_learns_its_user_and_suggests_their_own_words(small_tflite):
    """The real exported model: what the user typed, in and out of the vocabulary, comes back."""
    from keyboard_lm.inference.predictor import Predictor

    predictor = Predictor.load(small_tflite)
    history = UserHistory()
    s = predictor.session(history=history)
    for _ in range(4):
        s.commit("see you at the zorblaxen meetup. thanks, anna.")
    assert history.count("zorblaxen", "the") > 3 and history.count("meetup", "zorblaxen") > 3
    fresh = predictor.session(history=history)
    fresh.commit("see you at the")
    assert "zorblaxen" in [w for w, _ in fresh.suggestions(3)]  # outside the model's vocabulary
    assert fresh.complete("zorb")[0][0] == "zorblaxen"
    without = predictor.session()
    without.commit("see you at the")
    assert "zorblaxen" not in [w for w, _ in without.suggestions(3)]
    fresh.history_weight = 0.0  # the model alone again
    assert fresh.suggestions(3) == without.suggestions(3)
    # A field that must not be learnt from (a password): the history does not change.
    before = history.to_dict()
    secret = predictor.session(history=history, learn=False)
    secret.commit("hunter2 correct horse battery staple.")
    assert history.to_dict() == before


def test_blocklisted_words_are_neither_learnt_nor_suggested(small_tflite):
    from keyboard_lm.inference.predictor import Predictor

    predictor = Predictor.load(small_tflite, blocklist=["darnit"])
    history = UserHistory()
    s = predictor.session(history=history)
    for _ in range(5):
        s.commit("oh darnit again.")
    assert history.count("darnit") == 0 and history.count("again") > 0
    s.commit("oh")
    assert "darnit" not in [w for w, _ in s.suggestions(3)]


def test_candidates_are_the_exact_probabilities_of_the_likeliest_words():
    h = UserHistory(max_words=300, max_pairs=600)
    words = [f"w{i % 97}" for i in range(3000)]
    for i in range(0, len(words), 7):
        h.learn(words[i:i + 7])
    for prev in (None, "w3", "w50", "never-typed"):
        full = h.distribution(prev)
        assert sum(full.values()) == pytest.approx(1.0)
        cand = h.candidates(prev, n=10)
        assert all(cand[w] == pytest.approx(full[w]) for w in cand)
        best = max(full, key=full.get)
        assert best in cand  # the likeliest word is always a candidate
    # the most counted words, kept up to date word by word, are those a full sort finds
    assert h.top_words() == h.top_words(65)[:64] and len(h.top_words()) == 64


def _close(a, b) -> bool:
    """Equal, floats to 12 significant digits (libm's pow may differ in the last bit between machines)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def test_golden_vectors_shared_with_the_java_core_still_hold():
    """tests/golden/user_history_vectors.json (read by the Java core's test too) is what this code computes."""
    import importlib.util

    from tests.conftest import REPO

    path = REPO / "tests" / "golden" / "make_user_history_vectors.py"
    spec = importlib.util.spec_from_file_location("make_user_history_vectors", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fresh = module.vectors()
    golden = json.loads((REPO / "tests" / "golden" / "user_history_vectors.json").read_text(encoding="utf-8"))
    assert _close(json.loads(json.dumps(fresh["state"])), golden["state"])  # as saved: tuples become lists
    assert golden["state"]["weight"] == module.WEIGHT  # the user's weight is saved with the state
    assert len(fresh["cases"]) == len(golden["cases"])
    for f, g in zip(fresh["cases"], golden["cases"]):
        assert f["top_words"] == g["top_words"]
        assert f["context_count"] == pytest.approx(g["context_count"], rel=1e-12)
        assert f["distribution"].keys() == g["distribution"].keys()
        assert all(f["distribution"][w] == pytest.approx(g["distribution"][w], rel=1e-12) for w in g["distribution"])
    back = UserHistory.from_dict(golden["state"])  # the stored state loads and predicts the same
    assert back.distribution("thanks") == pytest.approx(golden["cases"][1]["distribution"], rel=1e-12)
    assert back.weight == module.WEIGHT and back.context_count("thanks") == pytest.approx(
        golden["cases"][1]["context_count"], rel=1e-12)


def test_personalize_learns_the_users_text_into_the_history_by_default(tmp_path):
    """Without a char encoder ``personalize`` is the user history alone (what measured best on real mail):
    the user's words, inside the vocabulary or not, join the suggestions after their contexts."""
    from keyboard_lm.inference import Predictor
    from tests.conftest import REPO

    p = Predictor.load(str(REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite"),
                       blocklist=["darn"])
    s = p.session()
    s.commit("meet me at the ")
    before = [w for w, _ in s.suggestions(3)]
    assert "zorblaxen" not in p.vocab and "zorblaxen" not in before
    texts = ["Meet me at the zorblaxen, darn it.", "See you at the zorblaxen tonight."] * 3
    report = s.personalize(texts)
    assert not report["adapter_trained"] and s.history is not None
    assert report["history_words_learnt"] == s.history.clock == (7 - 1) * 3 + 6 * 3  # "darn" is never learnt
    assert s.history.count("darn") == 0 and s.history.count("zorblaxen", "the") > 5
    s.reset()
    s.commit("meet me at the ")
    assert "zorblaxen" in [w for w, _ in s.suggestions(3)]
    path = tmp_path / "me.history"
    s.history.save(str(path))
    assert UserHistory.load(str(path)).count("zorblaxen") == s.history.count("zorblaxen")
    with pytest.raises(ConfigError, match="learn=False"):
        p.session(learn=False).personalize(texts)
    with pytest.raises(ConfigError, match="epochs: options of the adapter"):
        p.session().personalize(texts, epochs=3)
    with pytest.raises(ConfigError, match="needs the adapter"):
        p.session().personalize(texts, history=False)
    with pytest.raises(ConfigError, match="at least one word"):
        p.session().personalize(["...", ""])


def test_words_with_prefix_stay_exact_while_words_are_learnt_and_evicted():
    import random

    rng = random.Random(3)
    h = UserHistory(max_words=40)
    letters = "abcé"
    for step in range(600):
        h.learn(["".join(rng.choice(letters) for _ in range(rng.randint(1, 4))) for _ in range(3)])
        if step % 7 == 0:
            for prefix in ("", "a", "ab", "é", "abcd", "z"):
                assert h.words_with_prefix(prefix) == sorted(w for w in h._words if w.startswith(prefix))
    h.clear()
    assert h.words_with_prefix("a") == []

"""Typo-tolerant completion: the channel's slips, the deletion index against brute force, and the ranking.

Real vocabulary and model: the demo keyboard's committed model (android_demo's model.tflite, 9,847 words
of the mail corpus). The index's candidates and the words they cover are checked against a brute-force
enumeration of every single slip over every prefix of the vocabulary; the session's completions against
scoring every vocabulary word (and every history word) by ``factor * probability``.
"""

import zipfile

import numpy as np
import pytest

from keyboard_lm.data.corpora import load_corpus
from keyboard_lm.errors import ConfigError
from keyboard_lm.inference import Predictor, UserHistory
from keyboard_lm.inference.ranker import Completion, Ranker
from keyboard_lm.text import tokenizer
from keyboard_lm.text.typos import MAX_LETTERS, TypoIndex, TypoModel, neighbours
from tests.conftest import REPO

APK_MODEL = REPO / "android_demo" / "app" / "src" / "main" / "assets" / "model.tflite"
MODEL = TypoModel()


@pytest.fixture(scope="module")
def words():
    with zipfile.ZipFile(APK_MODEL) as z:
        tokens = z.read("vocab.txt").decode("utf-8").split("\n")
    return sorted(t for t in tokens[4:] if t)


@pytest.fixture(scope="module")
def index(words):
    return TypoIndex(words)


@pytest.fixture(scope="module")
def predictor():
    return Predictor.load(str(APK_MODEL))


def test_neighbours_are_the_adjacent_keys_of_a_staggered_qwerty():
    assert {c for c in "abcdefghijklmnopqrstuvwxyz" if neighbours("g", c)} == set("tyfhvb")
    assert {c for c in "abcdefghijklmnopqrstuvwxyz" if neighbours("q", c)} == set("wa")
    assert {c for c in "abcdefghijklmnopqrstuvwxyz" if neighbours("a", c)} == set("qwsz")
    assert {c for c in "abcdefghijklmnopqrstuvwxyz" if neighbours("m", c)} == set("njk")
    assert not neighbours("e", "e") and not neighbours("e", "t") and not neighbours("é", "e")
    assert all(neighbours(a, b) == neighbours(b, a) for a in "qazxsw" for b in "edcrfv")


@pytest.mark.parametrize("bad", [{"near_substitution": 0.0}, {"omission": 1.0}, {"transposition": -0.1},
                                 {"far_insertion": True}, {"far_substitution": "0.1"}, {"min_letters": 1},
                                 {"min_letters": MAX_LETTERS + 1}, {"min_letters": 3.0}, {"far_min_letters": 1},
                                 {"far_min_letters": MAX_LETTERS + 2}])
def test_typo_model_refuses_a_factor_or_letter_count_out_of_range(bad):
    with pytest.raises(ConfigError, match="typo model"):
        TypoModel(**bad)


def test_each_slip_gets_its_factor():
    index = TypoIndex(sorted(["week", "weeks", "the", "store", "work", "because", "wake", "weed"]))
    got = dict(index.candidates("weke", MODEL))
    assert got["week"] == MODEL.transposition  # swapped e and k
    assert "wake" not in got, "a far key is not corrected in four letters"
    assert dict(index.candidates("becamse", MODEL))["because"] == MODEL.far_substitution  # m for u: far, 7 letters
    assert dict(index.candidates("wprk", MODEL))["work"] == MODEL.near_substitution  # p is next to o
    assert dict(index.candidates("wok", MODEL))["work"] == MODEL.omission  # r left out
    assert dict(index.candidates("worrk", MODEL))["work"] == MODEL.near_insertion  # a doubled r
    assert dict(index.candidates("woxrk", MODEL))["work"] == MODEL.far_insertion  # x is near neither o nor r
    assert "wor" not in dict(index.candidates("worx", MODEL)), "a far extra key is not corrected in four letters"
    assert dict(index.candidates("thee", MODEL))["the"] == MODEL.near_insertion  # a doubled e in four letters
    assert dict(index.candidates("teh", MODEL))["the"] == MODEL.transposition
    assert index.candidates("te", MODEL) == []  # below min_letters
    assert index.candidates("w" * (MAX_LETTERS + 1), MODEL) == []
    assert all(p != "week" for p, _ in index.candidates("week", MODEL)), "the letters as typed are no typo prefix"


def _slip_factor(p: str, t: str, model: TypoModel, last_far: bool = True) -> float:
    """The largest factor of a single slip that turns the intended prefix ``p`` into the typed ``t`` (0: none);
    ``last_far``: a far key for the last typed letter counts."""
    n, best = len(t), 0.0
    if len(p) == n:
        diff = [i for i in range(n) if p[i] != t[i]]
        if len(diff) == 1:
            i = diff[0]
            if neighbours(p[i], t[i]):
                best = model.near_substitution
            elif n >= model.far_min_letters and (last_far or i < n - 1):
                best = model.far_substitution
        if len(diff) == 2 and diff[1] == diff[0] + 1 and p[diff[0]] == t[diff[1]] and p[diff[1]] == t[diff[0]]:
            best = max(best, model.transposition)
    if len(p) == n + 1 and any(p[:j] + p[j + 1:] == t for j in range(n)):
        best = max(best, model.omission)
    if len(p) == n - 1:
        for i in range(n):
            if t[:i] + t[i + 1:] == p:
                near = any(0 <= m < n and (t[m] == t[i] or neighbours(t[m], t[i])) for m in (i - 1, i + 1))
                if near or n >= model.far_min_letters:
                    best = max(best, model.near_insertion if near else model.far_insertion)
    return best


def _brute_force_factors(words, typed, model):
    """{word position: factor}: 1 for the words that start with ``typed``, else the best slip over their prefixes."""
    n, out = len(typed), {}
    for i, w in enumerate(words):
        if w.startswith(typed):
            out[i] = 1.0
            continue
        f = max((_slip_factor(w[:m], typed, model) for m in (n - 1, n, n + 1) if m <= len(w)), default=0.0)
        if f > 0:
            out[i] = f
    return out


TYPED = ["weke", "teh", "sotre", "wprk", "becuase", "thw", "yoi", "hte", "aaa", "meeeting", "dont", "ther",
         "qzx", "internat", "recieve", "wek", "tthe"]


@pytest.mark.parametrize("typed", TYPED)
def test_the_index_covers_every_word_one_slip_away_with_its_largest_factor(words, index, typed):
    cover = {i: f for lo, hi, f in index.cover(typed, index.candidates(typed, MODEL)) for i in range(lo, hi)}
    assert cover == _brute_force_factors(words, typed, MODEL)


def test_far_keys_are_looked_up_from_far_min_letters_and_at_the_last_letter_when_they_outweigh_an_extra_one(
        words, index):
    model = TypoModel(far_substitution=0.009, far_insertion=0.001, far_min_letters=3)  # the index's own lookups
    for typed in ("thx", "sotre", "wprk", "becamse"):
        cover = {i: f for lo, hi, f in index.cover(typed, index.candidates(typed, model)) for i in range(lo, hi)}
        assert cover == _brute_force_factors(words, typed, model), typed


def _brute_force_candidates(prefixes, alphabet, typed, model):
    """``candidates`` by definition: every string one edit from ``typed`` (any letter of the vocabulary's alphabet
    put in, swapped or left out) that is a vocabulary prefix, with its channel factor; a far key for the last letter
    only where it outweighs a far extra one (that extra letter's prefix holds its words already)."""
    n = len(typed)
    if not model.min_letters <= n <= MAX_LETTERS:
        return []
    variants = {typed[:i] + typed[i + 1:] for i in range(n)}  # typed[i] extra
    variants |= {typed[:i] + typed[i + 1] + typed[i] + typed[i + 2:] for i in range(n - 1)}
    variants |= {typed[:i] + c + typed[i + 1:] for i in range(n) for c in alphabet}  # c intended
    variants |= {typed[:i] + c + typed[i:] for i in range(n + 1) for c in alphabet}  # c left out
    variants.discard(typed)
    last_far = model.far_substitution > model.far_insertion
    return sorted((p, f) for p in variants & prefixes if (f := _slip_factor(p, typed, model, last_far)) > 0)


def _typed_with_slips(corpus_words, rng):
    """Every prefix of 3+ letters of each word, and the same prefix with one slip by a seeded random key."""
    out = set()
    for w in corpus_words:
        for n in range(3, min(len(w), MAX_LETTERS) + 1):
            p, i, c = w[:n], int(rng.integers(n)), "abcdefghijklmnopqrstuvwxyz"[int(rng.integers(26))]
            out |= {p, p[:i] + c + p[i + 1:], p[:i] + c + p[i:], p[:i] + p[i + 1:]}
    return sorted(t for t in out if len(t) >= 3)


def test_candidates_are_every_prefix_one_slip_away_on_the_embedded_corpus(words, index):
    """The index's lookups give, for the typed prefixes of real text and slips of them, the list a scan of every
    vocabulary prefix gives, factors included; under the default channel and one that corrects far keys from 3."""
    corpus = load_corpus(None, "default")
    text = " ".join(t for c in corpus.client_ids[:40] for t in corpus.clients[c])
    corpus_words = sorted({w for w in tokenizer.tokenize(text) if w.isalpha()})[:120]
    typed = _typed_with_slips(corpus_words, np.random.default_rng(0))
    prefixes = {w[:m] for w in words for m in range(1, min(len(w), MAX_LETTERS + 1) + 1)}
    alphabet = sorted({c for w in words for c in w})
    far = TypoModel(far_substitution=0.009, far_insertion=0.001, far_min_letters=3)
    assert len(typed) > 1000
    for model in (MODEL, far):
        found = 0
        for t in typed:
            want = _brute_force_candidates(prefixes, alphabet, t, model)
            assert index.candidates(t, model) == want, t
            found += bool(want)
        assert found > len(typed) // 2


def test_a_completion_weighs_a_word_by_the_largest_factor_of_the_prefixes_it_starts_with():
    c = Completion("teh", (("te", 0.01), ("tej", 0.02), ("th", 0.01), ("the", 0.02)))
    assert c.weight("teheran") == 1.0 and c.weight("them") == 0.02 and c.weight("thx") == 0.01
    assert c.weight("tejas") == 0.02 and c.weight("ten") == 0.01 and c.weight("t") == 0.0 and c.weight("abc") == 0.0
    assert c == Completion("teh", c.typos) and Completion("teh").weight("the") == 0.0


def _brute_force_strip(predictor, session, typed, k, history=None, a=0.0):
    """The k best (word, score) by factor * ((1 - a) p_model + a h), scoring every vocabulary and history word."""
    ranker = predictor.ranker
    log_probs = session._log_probs
    scores = {}
    for i, f in _brute_force_factors(ranker._sorted_words, typed, MODEL).items():
        w = ranker._sorted_words[i]
        scores[w] = f * float(np.exp(log_probs[predictor.vocab.id_of(w)]))
    if history is not None:
        dist = history.distribution(session.previous_word)
        scores = {w: s * (1 - a) for w, s in scores.items()}
        for w, h in dist.items():  # typo prefixes are the vocabulary's: a word only the history knows by its prefix
            f = _brute_force_factors([w], typed, MODEL).get(0, 0.0) if w in predictor.vocab else float(w.startswith(typed))
            if f > 0 and ranker.learnable(w) and not (w in predictor.vocab and ranker.never[predictor.vocab.id_of(w)]):
                scores[w] = scores.get(w, f * (1 - a) * float(np.exp(log_probs[predictor.vocab.id_of(w)]))
                                       if w in predictor.vocab else 0.0) + a * f * h
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@pytest.mark.parametrize("context,typed", [("see you at the", "weke"), ("i think", "teh"), ("", "becuase"),
                                           ("please let me", "knwo"), ("thanks for your", "hlep")])
def test_a_completion_ranks_every_candidate_by_factor_times_probability(predictor, context, typed):
    p = Predictor(predictor.model, typos=MODEL)
    p.ranker = Ranker(p.vocab, typos=MODEL)  # the model alone: the phrase table's mixture has its own tests
    s = p.session()
    s.commit(context)
    got = s.complete(typed, 5)
    want = _brute_force_strip(p, s, typed, 5)
    strip = [w for w, _ in got]
    if typed not in [w for w, _ in want] and any(not w.startswith(typed) for w, _ in want):
        assert strip[-1] == typed, "the letters as typed keep the last place beside a correction"
        got, want = got[:-1], want[:4]
    assert [w for w, _ in got] == [w for w, _ in want]
    assert [x for _, x in got] == pytest.approx([x for _, x in want], rel=1e-6)


def test_history_words_rank_with_their_factor_and_words_only_the_history_knows_by_prefix(predictor):
    history = UserHistory()
    for _ in range(3):
        for sentence in (["meet", "zorblax", "today"], ["meet", "the", "team"], ["meet", "zorblaxian", "friends"]):
            for prev, word in zip([None, *sentence], sentence):
                history.learn_word(prev, word)
    p = Predictor(predictor.model, typos=MODEL)
    p.ranker = Ranker(p.vocab, typos=MODEL)
    s = p.session(history=history, learn=False)
    s.commit("meet")
    a = s.effective_history_weight()
    assert a > 0
    for typed in ("zorbl", "zorbalx", "teh", "tema"):
        got = s.complete(typed, 4)
        want = _brute_force_strip(p, s, typed, 4, history, a)
        if typed not in [w for w, _ in want] and any(not w.startswith(typed) for w, _ in want):
            got, want = got[:-1], want[:3]
        assert [w for w, _ in got] == [w for w, _ in want], typed
        assert [x for _, x in got] == pytest.approx([x for _, x in want], rel=1e-6)
    assert {"zorblax", "zorblaxian"} <= {w for w, _ in s.complete("zorbl", 3)}
    assert "zorblax" not in [w for w, _ in s.complete("zorbalx", 3)], "typo prefixes are the vocabulary's"
    assert "team" in [w for w, _ in s.complete("tema", 3)]


@pytest.mark.parametrize("context,typed,intended", [("see you at the", "weke", {"week", "weeks"}),
                                                    ("i think", "teh", {"the"}),
                                                    ("going to the", "sotre", {"store"})])
def test_the_demo_models_strip_holds_the_intended_word(predictor, context, typed, intended):
    strip = [w for w, _ in predictor.complete(context, typed, 3)]
    assert intended & set(strip), strip
    assert typed in strip, "the letters as typed stay in the strip"
    s = predictor.session()
    s.commit(context)
    assert [w for w, _ in s.complete(typed, 3)] == strip
    off = Predictor(predictor.model, typos=None)
    assert not intended & {w for w, _ in off.complete(context, typed, 3)}, "prefix matching alone misses it"


def test_without_typos_a_completion_is_the_prefix_match_it_was(predictor):
    off = Predictor(predictor.model, typos=None)
    off.ranker = Ranker(off.vocab)  # the model alone, no typos
    s = off.session()
    s.commit("see you at the")
    for typed in ("wee", "weke", "th", "sotre"):
        assert s.complete(typed, 3) == off.ranker.top_model(s._log_probs, off.ranker.prefix_ids(typed), 3)


def test_the_letters_as_typed_are_kept_only_beside_a_correction(predictor):
    s = predictor.session()
    s.commit("see you at the")
    assert [w for w, _ in s.complete("wee", 3)] == ["week", "week's", "weekend"], "no correction, no typed word"
    corrected = s.complete("weke", 3)
    assert corrected[-1] == ("weke", 0.0) and len(corrected) == 3
    assert [w for w, _ in s.complete("weke", 1)] == ["week"], "a one-word strip shows the best word"
    blocked = Predictor(predictor.model, blocklist=["weke"])
    s = blocked.session()
    s.commit("see you at the")
    assert "weke" not in [w for w, _ in s.complete("weke", 3)]


def test_a_blocklisted_word_is_never_offered_as_a_correction(predictor):
    p = Predictor(predictor.model, blocklist=["the"])
    s = p.session()
    s.commit("i think")
    assert "the" not in [w for w, _ in s.complete("teh", 5)]

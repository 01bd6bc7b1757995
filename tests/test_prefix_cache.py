"""The predictor's two shortcuts return exactly what the full computation returns.

* The graph's top K (the file's ``step`` signature) against the full distribution
  (``step_full``) ranked in numpy: same words, same probabilities, on real text, and
  the fallback to the full path where the graph's answer could differ (blocklist,
  k above K, the user history).
* The prefix cache of ``Predictor.suggest``/``complete`` against a predictor without
  it, over thousands of random edits of real text; what a call costs in model steps.

Real components only: the committed golden model files, the TFLite interpreter and
sentences of the embedded default corpus.
"""

import concurrent.futures
import pathlib
import random

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference import Predictor
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text import tokenizer

MODELS = pathlib.Path(__file__).resolve().parent / "golden" / "models"
ALL_MODELS = sorted(p.name for p in MODELS.glob("*.tflite"))


class CountingModelFile(ModelFile):
    """The real model file, counting the steps taken through each signature."""

    def __init__(self, *args, **kwargs):
        self.steps = {"step": 0, "step_full": 0}
        super().__init__(*args, **kwargs)

    def step(self, token, state):
        self.steps["step"] += 1
        return super().step(token, state)

    def step_full(self, token, state):
        self.steps["step_full"] += 1
        return super().step_full(token, state)


@pytest.fixture(scope="module")
def real_words(default_corpus):
    """About 3,000 words of the embedded corpus, sentence ends kept, as typed."""
    lines = [t for c in default_corpus.client_ids[:300] for t in default_corpus.clients[c]]
    words = " ".join(lines).split()
    assert len(words) > 3000
    return words[:3000]


def full_ranking(predictor, session, k):
    """The k best suggestions from the full distribution (what the graph's top must equal)."""
    return predictor.ranker.top_model(session._log_probs, session._all_ids, k)


# -- the graph's top K against the full distribution -----------------------------------------------------------------

@pytest.mark.parametrize("name", ALL_MODELS)
def test_graph_step_and_full_step_agree_bit_for_bit(name, real_words):
    model = ModelFile.load(str(MODELS / name))
    vocab = model.vocab
    state = model.initial_state()
    for word in [t for w in real_words[:200] for t in tokenizer.tokenize(w)]:
        top_ids, top_log_probs, after = model.step(vocab.id_of(word), state)
        log_probs, after_full = model.step_full(vocab.id_of(word), state)
        assert np.array_equal(after, after_full)
        assert np.array_equal(top_log_probs, log_probs[top_ids])
        order = sorted(range(4, len(vocab)), key=lambda i: (-log_probs[i], i))[:model.top_k]
        assert top_ids.tolist() == order  # by log-prob, ties by id ascending, specials excluded
        state = after


@pytest.mark.parametrize("name", ALL_MODELS)
def test_streaming_suggestions_from_the_graph_equal_the_full_ranking(name, real_words):
    p = Predictor.load(str(MODELS / name))
    s = p.session()
    used_graph = 0
    for word in real_words[:400]:
        s.commit(word + " ")
        for k in (1, 2, 3):
            fast = s._graph_suggestions(k)
            used_graph += fast is not None
            assert s.suggestions(k) == full_ranking(p, s, k), (word, k)
        assert fast is not None and fast == full_ranking(p, s, 3)
    assert used_graph == 3 * 400


@pytest.mark.parametrize("name", ["cifg_dynamic-range.tflite", "lstm_weight-only.tflite"])
def test_blocklisted_words_in_the_graphs_top_fall_back_to_the_full_ranking(name, real_words):
    plain = Predictor.load(str(MODELS / name))
    # The words the graph ranks first most often: blocking them empties its top K often.
    counts = {}
    s = plain.session()
    for word in real_words[:300]:
        s.commit(word + " ")
        for i in s._graph_top[0][:2].tolist():
            counts[i] = counts.get(i, 0) + 1
    blocked_words = [plain.vocab.token_of(i) for i, _ in sorted(counts.items(), key=lambda kv: -kv[1])[:4]]
    p = Predictor.load(str(MODELS / name), blocklist=blocked_words)
    s = p.session()
    fell_back = graph = 0
    for word in real_words[:400]:
        s.commit(word + " ")
        for k in (1, 2, 3):
            fast = s._graph_suggestions(k)
            ranked = full_ranking(p, s, k)
            if fast is None:
                fell_back += 1
            else:
                graph += 1
                assert fast == ranked
            got = s.suggestions(k)
            assert got == ranked and not set(blocked_words) & {w for w, _ in got}
    assert fell_back > 50 and graph > 50  # both paths were taken


def test_k_above_the_graphs_top_uses_the_full_ranking():
    p = Predictor.load(str(MODELS / "gru_dynamic-range.tflite"))
    s = p.session()
    s.commit("what is your ")
    assert s._graph_suggestions(p.model.top_k + 1) is None
    assert s.suggestions(10) == full_ranking(p, s, 10)
    assert p.suggest("what is your", 10)[:3] == p.suggest("what is your", 3)


def test_the_user_history_is_mixed_in_not_skipped_by_the_graph():
    p = Predictor.load(str(MODELS / "cifg_dynamic-range.tflite"))
    history = UserHistory()
    s = p.session(history=history)
    s.commit("how are zorblaxen. how are zorblaxen. how are ")
    assert s._graph_suggestions(3) is None  # the history changes the ranking: the full path decides
    assert "zorblaxen" in [w for w, _ in s.suggestions(3)]
    s.history_weight = 0.0  # no mixture: the graph's answer is the answer
    assert s.suggestions(3) == full_ranking(p, s, 3) == p.suggest("how are", 3)


def test_a_completion_computes_the_full_distribution_once_per_position():
    model = CountingModelFile.load(str(MODELS / "cifg_dynamic-range.tflite"))
    p = Predictor(model)
    s = p.session()
    s.commit("what is your ")
    steps = dict(model.steps)
    s.suggestions(3)
    assert model.steps == steps  # the strip came with the step
    first = s.complete("n", 3)
    assert model.steps["step_full"] == steps["step_full"] + 1
    s.complete("na", 3)
    assert s.complete("n", 3) == first
    assert model.steps["step_full"] == steps["step_full"] + 1
    assert first == p.ranker.top_model(s._log_probs, p.ranker.prefix_ids("n"), 3)


def test_after_a_completion_the_next_word_steps_in_full_once():
    """A user who typed letters at one position gets one full step at the next, serving strip and completions."""
    model = CountingModelFile.load(str(MODELS / "cifg_dynamic-range.tflite"))
    p = Predictor(model)
    s = p.session()
    s.commit("what is your ")
    s.complete("na", 3)  # typing: the full distribution here
    before = dict(model.steps)
    s.commit("name ")
    assert model.steps == {"step": before["step"], "step_full": before["step_full"] + 1}
    strip, completion = s.suggestions(3), s.complete("i", 3)
    assert model.steps["step_full"] == before["step_full"] + 1  # both from that one step
    s.commit("is ")  # completed at "name" too: in full again
    s.suggestions(3)
    s.commit("the ")  # no completion after "is" (a tapped suggestion): the graph's top K again
    assert model.steps == {"step": before["step"] + 1, "step_full": before["step_full"] + 2}
    s.commit("fine. ")
    full = model.steps["step_full"]
    assert s.complete("w", 3) == p.complete("fine.", "w", 3)  # a sentence start: <bos>'s, computed at load
    assert model.steps["step_full"] == full
    assert strip == p.suggest("what is your name", 3) and completion == p.complete("what is your name", "i", 3)


def test_ties_rank_by_id_ascending_as_the_graph_does():
    p = Predictor.load(str(MODELS / "cifg_dynamic-range.tflite"))
    log_probs = np.full(len(p.vocab), -9.0, np.float32)
    log_probs[[40, 7, 99, 12]] = -1.0  # four-way tie at the top
    ids = p.ranker.suggestable_ids
    assert [p.vocab.id_of(w) for w, _ in p.ranker.top_model(log_probs, ids, 3)] == [7, 12, 40]
    assert [p.vocab.id_of(w) for w, _ in p.ranker.top_model(log_probs, ids[::-1].copy(), 2)] == [7, 12]
    assert p.ranker.top_all(log_probs, 3) == p.ranker.top_model(log_probs, ids, 3)


def test_argmax_top_of_every_word_equals_the_sorted_top_with_ties_blocklist_and_personal_words():
    p = Predictor.load(str(MODELS / "cifg_dynamic-range.tflite"), blocklist=["the", "you"])
    rng = np.random.default_rng(0)
    personal = ["zorblaxen", "quux"]
    for trial in range(300):
        log_probs = rng.standard_normal(len(p.vocab) + 2).astype(np.float32)
        if trial % 2:
            log_probs = np.round(log_probs, 1)  # many ties
        log_probs[p.vocab.id_of("the")] = 9.0  # blocklisted: never suggested, whatever its score
        joint = np.concatenate([p.ranker.suggestable_ids, len(p.vocab) + np.arange(2)])
        for k in (1, 3, 8):
            assert p.ranker.top_all(log_probs, k, personal) == p.ranker.top_model(log_probs, joint, k, personal)
            assert p.ranker.top_all(log_probs[:-2], k) == p.ranker.top_model(log_probs[:-2], p.ranker.suggestable_ids, k)


# -- the prefix cache against no cache -------------------------------------------------------------------------------

#: Pieces whose tokens depend on what follows them: numbers with joiners, URLs, apostrophes, emoji, terminators.
TRICKY = ["3.", "5", "3.5", ",", "http://example.com/a.", "www.x", "don't", "'", "😀", "\u200d", "👍🏽", "e.g.",
          "...", "İstanbul", "ﬁne", "\t", "\u2026", "い。", "o'", "12:30", "x\u0301"]


def random_edit(rng, field, words):
    """One edit of a text field (a list of typed words): what a user or an app does to it."""
    op = rng.random()
    if op < 0.05 and field:
        field[-1] += rng.choice(TRICKY + list("abc.'3"))  # typing inside the last word, no space yet
    elif op < 0.1:
        field.append(rng.choice(TRICKY))
    elif op < 0.45 or not field:
        field.append(rng.choice(words))  # typing on
    elif op < 0.55:
        field.pop()  # backspace over a word
    elif op < 0.7:
        field[rng.randrange(len(field))] = rng.choice(words)  # correct a word in the middle
    elif op < 0.8:
        field.insert(rng.randrange(len(field)), rng.choice(words))
    elif op < 0.88:
        del field[rng.randrange(len(field))]
    elif op < 0.94:
        field[rng.randrange(len(field))] += rng.choice([".", "!", "?", ","])  # a sentence end (or not)
    else:
        del field[rng.randrange(len(field)):]  # cut the end
    if len(field) > 70:
        del field[:20]


@pytest.mark.parametrize("name,edits,cache_size", [("cifg_dynamic-range.tflite", 3000, 64),
                                                   ("gru_weight-only.tflite", 1500, 8),
                                                   ("si-cifg_dynamic-range.tflite", 1000, 1)])
def test_cached_stateless_calls_equal_uncached_ones_over_random_edits(name, edits, cache_size, real_words):
    cached = Predictor.load(str(MODELS / name), prefix_cache_size=cache_size)
    uncached = Predictor.load(str(MODELS / name), prefix_cache_size=0)
    rng = random.Random(len(name) + edits)
    field = []
    for i in range(edits):
        random_edit(rng, field, real_words)
        context = " ".join(field) + rng.choice([" ", ""])
        k = rng.choice([1, 3, 3, 3, 5])
        assert cached.suggest(context, k) == uncached.suggest(context, k), (i, context)
        # The reused scan of the text equals a scan of the whole context.
        events = list(tokenizer.scan(context))
        sentence = [t for _, t in events[max([j + 1 for j, (kind, _) in enumerate(events) if kind == "end"],
                                             default=0):]]
        expected = (len(sentence), tuple(sentence[-cached.model.seq_len:]))
        assert cached._prefix_cache._last_sentence(tokenizer.normalize(context)) == expected, context
        if i % 5 == 0:
            prefix = rng.choice(real_words)[:rng.randint(1, 3)]
            assert cached.complete(context, prefix, 3) == uncached.complete(context, prefix, 3), (i, context, prefix)
        assert len(cached._prefix_cache) <= cache_size


def test_stateless_calls_equal_a_session_that_typed_the_whole_field(real_words):
    # The reference is the full distribution of a session that stepped over every word (no replay,
    # no cache, no graph top): what suggestions were before either shortcut existed.
    p = Predictor.load(str(MODELS / "lstm_dynamic-range.tflite"))
    s = p.session()
    typed = []
    for word in real_words[:600]:
        s.commit(word + " ")
        typed.append(word)
        assert p.suggest(" ".join(typed), 3) == full_ranking(p, s, 3), len(typed)


def test_a_stateless_call_costs_the_steps_after_the_longest_cached_prefix(real_words):
    model = CountingModelFile.load(str(MODELS / "cifg_dynamic-range.tflite"))
    p = Predictor(model)
    seq_len = model.seq_len

    def cost(context):
        before = dict(model.steps)
        p.suggest(context, 3)
        return {key: model.steps[key] - before[key] for key in before}

    field = "i think that you are a very good friend and"
    assert cost(field) == {"step": 10, "step_full": 0}  # <bos> was computed at load
    assert cost(field + " i") == {"step": 1, "step_full": 0}  # one more word: one step
    assert cost(field + " i") == {"step": 0, "step_full": 0}  # the same field again
    assert cost("i think that we are a very good friend and i") == {"step": 8, "step_full": 0}  # from the edit on
    assert cost("i like it. you") == {"step": 1, "step_full": 0}  # a new sentence starts at <bos>
    # Across a chunk boundary the new chunk starts from zeros: still one step per new word.
    words = tokenizer.tokenize(" ".join(real_words[1000:1100]))  # one long field, sentence ends dropped
    for n in range(1, 3 * seq_len):
        assert cost(" ".join(words[:n])) == {"step": 1, "step_full": 0}, n
    assert p.complete(field, "y", 3) and model.steps["step_full"] == 2  # <bos> at load, then this completion's


def test_the_cache_is_bounded_and_evicts_the_least_recently_used():
    model = CountingModelFile.load(str(MODELS / "cifg_dynamic-range.tflite"))
    p = Predictor(model, prefix_cache_size=6)

    def cost(context):
        before = model.steps["step"]
        p.suggest(context)
        return model.steps["step"] - before

    assert cost("how are you") == 3  # caches <bos>, +how, +are, +you
    assert cost("what is your name") == 4  # uses <bos> (now the newest), adds 4: "how" and "how are" go
    assert len(p._prefix_cache) == 6
    assert cost("how are you") == 0 and cost("what is your name") == 0  # still cached
    assert cost("how are") == 2  # evicted: stepped again from <bos>
    assert len(p._prefix_cache) == 6


def test_many_threads_share_one_cache(real_words):
    name = str(MODELS / "gru_dynamic-range.tflite")
    cached, uncached = Predictor.load(name, prefix_cache_size=16), Predictor.load(name, prefix_cache_size=0)
    contexts = [" ".join(real_words[i:i + n]) for i in range(0, 600, 7) for n in (3, 4, 12, 25)]
    expected = {c: uncached.suggest(c) for c in contexts}
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda c: (c, cached.suggest(c)), contexts * 3))
    assert all(answer == expected[c] for c, answer in got)
    assert len(cached._prefix_cache) <= 16


@pytest.mark.parametrize("bad", [-1, 2.5, "8", None, True])
def test_bad_prefix_cache_size_is_refused_in_one_line(bad):
    with pytest.raises(ConfigError, match="prefix_cache_size must be an int >= 0"):
        Predictor.load(str(MODELS / "cifg_dynamic-range.tflite"), prefix_cache_size=bad)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "3", None])
def test_bad_k_is_a_value_error_on_both_paths(bad):
    p = Predictor.load(str(MODELS / "cifg_dynamic-range.tflite"))
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        p.suggest("how are", bad)
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        p.complete("how are", "y", bad)


# -- a file with a phrase table --------------------------------------------------------------------------------------

PHRASES_MODEL = pathlib.Path(__file__).resolve().parent / "golden" / "phrases" / "cifg_phrases.tflite"


def test_cached_calls_equal_uncached_ones_with_a_phrase_table(real_words):
    cached = Predictor.load(str(PHRASES_MODEL), prefix_cache_size=16)
    uncached = Predictor.load(str(PHRASES_MODEL), prefix_cache_size=0)
    rng = random.Random(71)
    field, matched = [], 0
    for i in range(600):
        random_edit(rng, field, real_words)
        context = " ".join(field) + rng.choice([" ", ""])
        assert cached.suggest(context, 3) == uncached.suggest(context, 3), (i, context)
        if i % 4 == 0:
            prefix = rng.choice(real_words)[:rng.randint(1, 2)]
            assert cached.complete(context, prefix, 3) == uncached.complete(context, prefix, 3), (i, context, prefix)
        inputs = cached._prefix_cache.chunk_inputs(context)
        matched += cached.ranker.phrase_match(inputs[-4:]) is not None
    assert matched > 30  # the table's contexts were exercised, not only the model's


def test_where_the_table_matches_a_grown_field_costs_one_full_step_not_two(real_words):
    model = CountingModelFile.load(str(PHRASES_MODEL))
    p = Predictor(model)

    def cost(context):
        before = dict(model.steps)
        p.suggest(context, 3)
        return {key: model.steps[key] - before[key] for key in before}

    words, seen = tokenizer.tokenize(" ".join(real_words[:400])), {"match": 0, "no match": 0}
    for n in range(2, 120):
        context = " ".join(words[:n])
        match = p.ranker.phrase_match(p._prefix_cache.chunk_inputs(context)[-4:]) is not None
        cost(" ".join(words[:n - 1]))  # the field one word shorter is cached
        assert cost(context) == ({"step": 0, "step_full": 1} if match else {"step": 1, "step_full": 0}), context
        assert cost(context) == {"step": 0, "step_full": 0}  # the same field again: the full distribution is kept
        seen["match" if match else "no match"] += 1
    assert min(seen.values()) > 5, seen

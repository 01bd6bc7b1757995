"""The memorization audit (Carlini et al. 2019): canary format, planting, scoring, exposure.

Fast tests use a numpy bigram "model" (a fixed random logit table indexed by
the previous token); one test trains a real tiny CIFG with Keras on the
embedded corpus with a canary planted 50 times and checks that the audit
finds it and not an unplanted one.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.examples import sentence_examples
from keyboard_lm.errors import ConfigError
from keyboard_lm.evaluation import log_softmax
from keyboard_lm.privacy import canaries as C
from keyboard_lm.privacy import exposure as E
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.tokenizer import sentences, tokenize
from keyboard_lm.text.vocabulary import Vocabulary
from tests.conftest import REPO

FMT = C.CanaryFormat()


def _tiny_corpus() -> Corpus:
    return Corpus("tiny", {"a": ["hello there", "how are you?"], "b": ["fine thanks"], "c": ["bye", "see you", "ok"]})


def _bigram(vocab: Vocabulary, seed: int = 0, boost: tuple[str, ...] = ()):
    """predict(x) = table[x]: logits depend on the previous token only; ``boost`` makes one sequence likely."""
    table = np.random.default_rng(seed).normal(0.0, 1.0, (len(vocab), len(vocab)))
    ids = [SPECIAL_TOKENS.bos_id] + vocab.encode(boost)
    for a, b in zip(ids, ids[1:]):
        table[a, b] += 6.0
    return lambda x: table[np.asarray(x)]  # [B, T] -> [B, T, V]


def _format_vocab(fmt: C.CanaryFormat = FMT) -> Vocabulary:
    return Vocabulary.from_sentences([list(fmt.prefix) + list(fmt.alphabet)], 100)


# --- format -----------------------------------------------------------------

def test_default_format_tokenizes_into_exactly_prefix_and_slots():
    assert FMT.space_size == 10 ** 4 and FMT.max_exposure == pytest.approx(math.log2(10 ** 4))
    for index in (0, 1, 4321, 9999):
        secret = FMT.secret(index)
        text = FMT.text(secret)
        assert sentences(text) == [[*FMT.prefix, *secret]]
        assert FMT.index(secret) == index and FMT.parse(text) == secret
    assert FMT.secret(12) == ("air", "air", "body", "city")  # most significant slot first


def test_format_accepts_strings_and_round_trips_through_json():
    fmt = C.CanaryFormat("my number is", "air body city", 2)
    assert fmt.prefix == ("my", "number", "is") and fmt.alphabet == ("air", "body", "city")
    assert C.CanaryFormat.from_dict(json.loads(json.dumps(fmt.to_dict()))) == fmt


@pytest.mark.parametrize("kwargs, names", [
    ({"alphabet": ("air",)}, "at least 2"),
    ({"alphabet": ("air", "body", "air")}, "'air' twice"),
    ({"alphabet": ("Air", "body")}, "'Air'"),
    ({"alphabet": ("ice-cream", "body")}, "'ice-cream'"),
    ({"prefix": ("my", "pin!", "is")}, "'pin!'"),
    ({"slots": 0}, "slots"),
])
def test_bad_format_raises_naming_the_problem(kwargs, names):
    with pytest.raises(ConfigError, match=names):
        C.CanaryFormat(**kwargs)


def test_parse_rejects_text_that_is_not_a_canary():
    for text in ("my number is air body city", "my number is air body city dust money",
                 "my number is air. body city dust", "your number is air body city dust",
                 "my number is air body city sand"):
        with pytest.raises(ConfigError, match="is not a canary"):
            FMT.parse(text)


# --- making and planting ----------------------------------------------------

def test_make_canaries_is_deterministic_distinct_and_covers_a_small_space():
    a, b = C.make_canaries(20, seed=3), C.make_canaries(20, seed=3)
    assert a == b and len({c.secret for c in a}) == 20
    assert [c.secret for c in C.make_canaries(20, seed=4)] != [c.secret for c in a]
    small = C.make_canaries(8, seed=0, alphabet=("air", "body"), slots=3)
    assert sorted(c.secret for c in small) == sorted(C.CanaryFormat(alphabet=("air", "body"), slots=3).secret(i)
                                                     for i in range(8))
    with pytest.raises(ConfigError, match="9 canaries asked for, but the format has only 8"):
        C.make_canaries(9, seed=0, alphabet=("air", "body"), slots=3)


def test_plant_inserts_exact_counts_into_listed_clients_and_keeps_originals_in_order():
    corpus = _tiny_corpus()
    original = {k: list(v) for k, v in corpus.clients.items()}
    cans = C.make_canaries(3, seed=1)
    planted, record = C.plant_canaries(corpus, cans, [5, 1, 2], ["a", "c"], seed=7)
    again, record2 = C.plant_canaries(corpus, cans, [5, 1, 2], ["c", "a"], seed=7)
    assert planted.clients == again.clients and record == record2  # deterministic, client order irrelevant
    assert corpus.clients == original  # the input is not modified
    assert planted.clients["b"] == original["b"]  # not listed: untouched
    assert json.loads(json.dumps(record)) == record
    texts = {c.text for c in cans}
    for cid, records in planted.clients.items():
        assert [r for r in records if r not in texts] == original[cid]
    for c, row, n in zip(cans, record["canaries"], [5, 1, 2]):
        assert row["text"] == c.text and row["secret"] == list(c.secret) and row["repeats"] == n
        assert row["client"] in ("a", "c") and row["clients"] == [row["client"]]
        assert sum(r == c.text for recs in planted.clients.values() for r in recs) == n
        assert [planted.clients[row["client"]][p] for p in row["positions"][0]] == [c.text] * n
    assert planted.num_records == corpus.num_records + 8
    assert record["corpus_fingerprint"] == planted.fingerprint() != corpus.fingerprint()
    assert C.plant_canaries(corpus, cans, [5, 1, 2], ["a", "c"], seed=8)[0].clients != planted.clients


def test_plant_spreads_copies_among_the_clients_records():
    corpus = Corpus("one", {"u": [f"record {i}" for i in range(100)]})
    planted, record = C.plant_canaries(corpus, C.make_canaries(1, seed=0), 20, ["u"], seed=0)
    positions = record["canaries"][0]["positions"][0]
    assert len(set(positions)) == 20 and min(positions) < 40 and max(positions) > 80  # not bunched at one end
    assert [r for r in planted.clients["u"] if r.startswith("record")] == corpus.clients["u"]


def test_plant_gives_each_canary_its_own_client_while_there_are_enough():
    corpus = Corpus("many", {f"u{i}": [f"text {i}"] for i in range(10)})
    _, record = C.plant_canaries(corpus, C.make_canaries(6, seed=0), 2, corpus.client_ids, seed=0)
    assert len({row["client"] for row in record["canaries"]}) == 6


def test_plant_puts_a_shared_canary_in_several_distinct_clients_with_its_copies_in_each():
    corpus = Corpus("many", {f"u{i}": [f"text {i}", f"more {i}"] for i in range(10)})
    cans = C.make_canaries(3, seed=2)
    planted, record = C.plant_canaries(corpus, cans, [4, 1, 2], corpus.client_ids, seed=3, clients_per_canary=3)
    one, _ = C.plant_canaries(corpus, cans, [4, 1, 2], corpus.client_ids, seed=3)
    assert one.clients != planted.clients
    held = set()
    for c, row, n in zip(cans, record["canaries"], [4, 1, 2]):
        assert len(set(row["clients"])) == 3 and row["client"] == row["clients"][0]
        for cid, where in zip(row["clients"], row["positions"]):
            assert [planted.clients[cid][p] for p in where] == [c.text] * n
            assert sum(r == c.text for r in planted.clients[cid]) == n
        assert sum(r == c.text for recs in planted.clients.values() for r in recs) == 3 * n
        held |= set(row["clients"])
    assert len(held) == 9  # nine of ten clients: distinct across canaries while there are enough
    for cid, records in planted.clients.items():
        assert [r for r in records if r.startswith(("text", "more"))] == corpus.clients[cid]
    with pytest.raises(ConfigError, match="11 clients per canary, but only 10 clients"):
        C.plant_canaries(corpus, cans, 1, corpus.client_ids, seed=0, clients_per_canary=11)
    with pytest.raises(ConfigError, match="clients per canary must be an integer >= 1, got 0"):
        C.plant_canaries(corpus, cans, 1, corpus.client_ids, seed=0, clients_per_canary=0)


@pytest.mark.parametrize("case, match", [
    ("repeats_zero", "repeats of canary .* must be an integer >= 1, got 0"),
    ("repeats_negative", "must be an integer >= 1, got -2"),
    ("repeats_count", "2 repeat counts for 3 canaries"),
    ("too_many", "3 canaries, but the format has only 2 distinct secrets"),
    ("duplicate", "is listed twice"),
    ("unknown_client", "client 'zz' is not in tiny"),
    ("no_clients", "the client list is empty"),
    ("no_canaries", "no canaries to plant"),
    ("mixed_formats", "share one format"),
])
def test_plant_raises_on_bad_input(case, match):
    cans = C.make_canaries(3, seed=0)
    args = {"canaries": cans, "repeats": 1, "clients": ["a"]}
    tiny = C.CanaryFormat(alphabet=("air", "body"), slots=1)
    args.update({
        "repeats_zero": {"repeats": [1, 0, 1]}, "repeats_negative": {"repeats": -2},
        "repeats_count": {"repeats": [1, 2]},
        "too_many": {"canaries": [C.Canary(tiny, ("air",)), C.Canary(tiny, ("body",)), C.Canary(tiny, ("air",))]},
        "duplicate": {"canaries": [cans[0], cans[1], cans[0]]}, "unknown_client": {"clients": ["a", "zz"]},
        "no_clients": {"clients": []}, "no_canaries": {"canaries": []},
        "mixed_formats": {"canaries": [cans[0], C.Canary(tiny, ("air",))]},
    }[case])
    with pytest.raises(ConfigError, match=match):
        C.plant_canaries(_tiny_corpus(), args["canaries"], args["repeats"], args["clients"], seed=0)


# --- exposure ---------------------------------------------------------------

def test_exact_exposure_hand_computed():
    scores = [3.0, 1.0, 4.0, 2.0]  # |R| = 4
    assert E.exact_exposure(1.0, scores) == pytest.approx(2.0)  # ranked first: log2 |R|
    assert E.exact_exposure(4.0, scores) == pytest.approx(0.0)  # ranked last
    assert E.exact_exposure(2.0, scores) == pytest.approx(1.0)  # rank 2
    assert E.exact_exposure(2.5, scores) == pytest.approx(2 - math.log2(3))  # rank 3


def test_exact_exposure_breaks_ties_in_the_canarys_favour():
    assert E.exact_exposure(1.0, [1.0, 1.0, 1.0, 5.0]) == pytest.approx(2.0)
    assert E.exact_exposure(5.0, [0.0, 5.0, 5.0, 5.0]) == pytest.approx(1.0)  # rank 2 of 4


def test_exposure_rejects_nan_and_empty_scores():
    for call in (lambda: E.exact_exposure(1.0, []), lambda: E.exact_exposure(float("nan"), [1.0]),
                 lambda: E.exact_exposure(1.0, [1.0, float("nan")]),
                 lambda: E.extrapolated_exposure(1.0, np.arange(50.0), 10 ** 6),
                 lambda: E.extrapolated_exposure(1.0, np.ones(500), 10 ** 6)):
        with pytest.raises(ConfigError):
            call()


def _discrete_scores(seed: int) -> np.ndarray:
    """Log-perplexities of all 10^5 secrets of 5 slots x 10 tokens under random independent slot distributions."""
    rng = np.random.default_rng(seed)
    logp = np.log(rng.dirichlet(np.full(10, 0.5), size=5))  # [slots, tokens]
    every = np.indices((10,) * 5).reshape(5, -1).T  # [10^5, slots]
    return -logp[np.arange(5), every].sum(axis=1) / math.log(2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_extrapolated_exposure_agrees_with_exact_in_the_bulk(seed):
    scores = _discrete_scores(seed)
    sample = scores[np.random.default_rng(100 + seed).integers(0, scores.size, 5000)]
    ordered = np.sort(scores)
    for rank in (1000, 10_000, 50_000):
        exact = E.exact_exposure(ordered[rank - 1], scores)
        assert E.extrapolated_exposure(ordered[rank - 1], sample, scores.size) == pytest.approx(exact, abs=0.5)
    # The documented limit: the hard minimum of discrete scores is beyond the skew-normal's reach.
    top = E.extrapolated_exposure(ordered[0], sample, scores.size)
    assert 8 < top < E.exact_exposure(ordered[0], scores) - 2


def test_extrapolated_exposure_is_capped_at_log2_space_size():
    sample = np.random.default_rng(0).normal(50, 3, 1000)
    assert E.extrapolated_exposure(-1e6, sample, 1000) == pytest.approx(math.log2(1000))
    assert E.extrapolated_exposure(1e6, sample, 1000) == pytest.approx(0.0, abs=1e-9)


# --- scoring and the audit (numpy model) ------------------------------------

def test_log_perplexity_is_the_projects_encoding_scored_slot_by_slot():
    vocab = _format_vocab()
    predict = _bigram(vocab, seed=1)
    texts = [c.text for c in C.make_canaries(5, seed=2)]
    got = E.canary_log_perplexity(predict, vocab, texts)
    whole = E.canary_log_perplexity(predict, vocab, texts, whole_sequence=True)
    n = len(FMT.prefix) + FMT.slots
    for text, g, w in zip(texts, got, whole):
        x, y = sentence_examples(vocab.encode(tokenize(text)), n)[0]  # the training pipeline's first chunk
        logp = log_softmax(predict(np.array([x])))[0]  # [T, V]
        per_token = -logp[np.arange(n), y] / math.log(2)
        assert g == pytest.approx(per_token[len(FMT.prefix):].sum())
        assert w == pytest.approx(per_token.sum())
    assert np.ptp(whole - got) == pytest.approx(0.0, abs=1e-9)  # the prefix term is shared: same ranks


def test_oov_canary_token_raises_naming_it():
    vocab = Vocabulary.from_sentences([["my", "number", "is", *FMT.alphabet[:-1]]], 100)  # no "world"
    with pytest.raises(ConfigError, match="alphabet token 'world' is not in the model's vocabulary"):
        E.canary_log_perplexity(_bigram(vocab), vocab, [FMT.text(("air",) * 4)])
    vocab = Vocabulary.from_sentences([["my", "is", *FMT.alphabet]], 100)
    _, record = C.plant_canaries(_tiny_corpus(), C.make_canaries(1, 0), 1, ["a"], 0)
    with pytest.raises(ConfigError, match="prefix token 'number'"):
        E.audit(_bigram(vocab), vocab, record)


def test_audit_ranks_match_brute_force_and_find_a_boosted_canary():
    vocab = _format_vocab()
    cans = C.make_canaries(6, seed=5)
    predict = _bigram(vocab, seed=3, boost=(*FMT.prefix, *cans[0].secret))
    _, record = C.plant_canaries(_tiny_corpus(), cans[:2], [3, 1], ["a", "b"], seed=0)
    rows = E.audit(predict, vocab, record, controls=cans[2:])
    every = E.canary_log_perplexity(predict, vocab, [FMT.text(FMT.secret(i)) for i in range(FMT.space_size)])
    assert [r["text"] for r in rows] == [c.text for c in cans]
    assert [r["repeats"] for r in rows] == [3, 1, 0, 0, 0, 0]
    assert [r["client"] for r in rows[:2]] == [row["client"] for row in record["canaries"]]
    assert [r["clients"] for r in rows] == [[row["client"]] for row in record["canaries"]] + [[]] * 4
    for r in rows:
        score = every[FMT.index(r["secret"])]
        assert r["log_perplexity"] == pytest.approx(score)
        assert r["rank"] == 1 + np.count_nonzero(every < score) and r["method"] == "exact"
        assert r["exposure"] == pytest.approx(math.log2(FMT.space_size) - math.log2(r["rank"]))
        assert r["max_exposure"] == pytest.approx(FMT.max_exposure)
    assert rows[0]["rank"] == 1 and rows[0]["exposure"] == pytest.approx(FMT.max_exposure)
    assert json.loads(json.dumps(rows)) == rows
    table = E.format_audit(rows)
    assert all(c.text in table for c in cans) and "exposure" in table.splitlines()[1]


def test_audit_extrapolates_beyond_max_exhaustive_and_agrees_with_exact():
    vocab = _format_vocab()
    cans = C.make_canaries(8, seed=0)
    _, record = C.plant_canaries(_tiny_corpus(), cans[:1], 1, ["a"], seed=0)
    predict = _bigram(vocab, seed=0)
    exact = E.audit(predict, vocab, record, controls=cans[1:])
    approx = E.audit(predict, vocab, record, controls=cans[1:], max_exhaustive=FMT.space_size - 1,
                     sample_size=5000, seed=1)
    assert approx == E.audit(predict, vocab, record, controls=cans[1:], max_exhaustive=0, sample_size=5000, seed=1)
    for e, a in zip(exact, approx):
        assert a["method"] == "extrapolated" and a["rank"] is None
        assert a["log_perplexity"] == pytest.approx(e["log_perplexity"])
        assert a["exposure"] == pytest.approx(e["exposure"], abs=0.25)


def test_calibrated_exposure_ranks_what_training_added_not_what_the_start_knew():
    vocab = _format_vocab()
    cans = C.make_canaries(6, seed=5)
    # The start already favours a control strongly; training adds a smaller pull toward the planted canary.
    start = _bigram(vocab, seed=3, boost=(*FMT.prefix, *cans[3].secret))
    # Training moves every logit a little (continuous differences, as a network's) and the canary's more.
    pull = np.random.default_rng(7).normal(0.0, 0.5, (len(vocab), len(vocab)))
    ids = [SPECIAL_TOKENS.bos_id] + vocab.encode((*FMT.prefix, *cans[0].secret))
    for a, b in zip(ids, ids[1:]):
        pull[a, b] += 2.0
    trained = lambda x: start(x) + pull[np.asarray(x)]  # noqa: E731
    _, record = C.plant_canaries(_tiny_corpus(), cans[:2], [3, 1], ["a", "b"], seed=0)
    rows = E.audit(trained, vocab, record, controls=cans[2:], reference=start)
    assert E.audit(trained, vocab, record, controls=cans[2:]) == [
        {k: v for k, v in r.items() if k not in ("reference_log_perplexity", "calibrated_exposure")} for r in rows]
    texts = [FMT.text(FMT.secret(i)) for i in range(FMT.space_size)]
    every = E.canary_log_perplexity(trained, vocab, texts) - E.canary_log_perplexity(start, vocab, texts)
    for r in rows:
        i = FMT.index(r["secret"])
        assert r["reference_log_perplexity"] == pytest.approx(E.canary_log_perplexity(start, vocab, [r["text"]])[0])
        assert r["calibrated_exposure"] == pytest.approx(E.exact_exposure(every[i], every))
    # Raw exposure puts the start's favourite first; calibrated, the planted canary is first and the control
    # is back among the rest.
    assert rows[3]["exposure"] == pytest.approx(FMT.max_exposure) and rows[0]["exposure"] < FMT.max_exposure
    assert rows[0]["calibrated_exposure"] == pytest.approx(FMT.max_exposure)
    assert rows[3]["calibrated_exposure"] < 0.5 * FMT.max_exposure
    assert "calibrated" in E.format_audit(rows).splitlines()[1]
    # Beyond max_exhaustive both scores are extrapolated from one sample.
    approx = E.audit(trained, vocab, record, controls=cans[2:], reference=start, max_exhaustive=0,
                     sample_size=5000, seed=1)
    for e, a in zip(rows, approx):
        assert a["reference_log_perplexity"] == pytest.approx(e["reference_log_perplexity"])
        assert a["calibrated_exposure"] == pytest.approx(e["calibrated_exposure"], abs=0.5)


def test_audit_rejects_malformed_records_and_foreign_controls():
    vocab = _format_vocab()
    _, record = C.plant_canaries(_tiny_corpus(), C.make_canaries(1, 0), 1, ["a"], 0)
    other = C.make_canaries(1, 0, slots=2)
    with pytest.raises(ConfigError, match="not of the planted canaries' format"):
        E.audit(_bigram(vocab), vocab, record, controls=other)
    with pytest.raises(ConfigError, match="was planted; controls must be secrets never planted"):
        E.audit(_bigram(vocab), vocab, record, controls=C.make_canaries(1, 0))
    with pytest.raises(ConfigError, match="not a canary placement record"):
        E.audit(_bigram(vocab), vocab, {"canaries": record["canaries"]})


def test_importing_the_audit_loads_no_tensorflow():
    code = ("import sys, keyboard_lm.privacy.canaries;"
            "print(sorted(m for m in sys.modules if m.startswith('tensorflow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


# --- the default alphabet is in real vocabularies -----------------------------

def _assert_format_in_vocab(corpus):
    from keyboard_lm.data.split import SplitConfig, split_clients

    train, _ = split_clients(corpus.client_ids, SplitConfig())
    for vocab in (Vocabulary.from_sentences(corpus.sentences(), 10_000),
                  Vocabulary.from_sentences(corpus.sentences(train), 10_000)):
        missing = [t for t in (*FMT.prefix, *FMT.alphabet) if t not in vocab]
        assert not missing, f"{corpus.name}: {missing}"


def test_default_format_is_in_the_default_corpus_vocabulary(default_corpus):
    _assert_format_in_vocab(default_corpus)


@pytest.mark.shakespeare
def test_default_format_is_in_the_tiny_shakespeare_vocabulary(shakespeare):
    _assert_format_in_vocab(shakespeare)


# --- end to end: a real Keras model memorizes a planted canary -----------------

@pytest.fixture(scope="module")
def trained(default_corpus):
    """A 32-unit CIFG trained 3 epochs (~400 steps) on the default corpus with one canary planted 50 times."""
    import tensorflow as tf

    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model
    from keyboard_lm.models.metrics import loss_fn

    planted_canary, control = C.make_canaries(2, seed=0, slots=3)
    corpus, record = C.plant_canaries(default_corpus, [planted_canary], 50, default_corpus.client_ids, seed=0)
    vocab = Vocabulary.from_sentences(corpus.sentences(), 10_000)
    examples = list(corpus_examples(corpus.sentences(), vocab, 20))
    x = np.array([e[0] for e in examples], np.int32)
    y = np.array([e[1] for e in examples], np.int32)
    tf.keras.utils.set_random_seed(0)
    config = ModelConfig("cifg", len(vocab), embedding_dim=16, units=32)
    model = build_model(config)
    model.compile(tf.keras.optimizers.Adam(0.01), loss_fn())
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    return model, config, vocab, record, control


def test_keras_model_exposes_the_planted_canary_not_the_unplanted_one(trained):
    model, _, vocab, record, control = trained
    rows = E.audit(E.keras_predict_fn(model, 3 + 3), vocab, record, controls=[control])
    planted, unplanted = rows
    assert planted["repeats"] == 50 and unplanted["repeats"] == 0
    # Over seeds 0-5: the planted canary ranked first of 1,000 (9.97 bits), the unplanted one at most 3.1 bits.
    assert planted["exposure"] > 0.8 * planted["max_exposure"]
    assert planted["exposure"] > unplanted["exposure"] + 4


def test_audit_run_loads_a_run_directory(trained, tmp_path):
    from keyboard_lm.models.run_dir import save_run
    from keyboard_lm.models.language_model import weights_dict

    model, config, vocab, record, control = trained
    save_run(str(tmp_path), config, vocab, weights_dict(model), {"trainer": "test"})
    from_run = E.audit_run(str(tmp_path), record, controls=[control])
    direct = E.audit(E.keras_predict_fn(model, 6), vocab, record, controls=[control])
    assert [r["rank"] for r in from_run] == [r["rank"] for r in direct]
    assert [r["log_perplexity"] for r in from_run] == pytest.approx([r["log_perplexity"] for r in direct], abs=1e-4)

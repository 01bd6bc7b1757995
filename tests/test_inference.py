"""The inference module: API, streaming, completion, reliability, threads, fuzz."""

import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyboard_lm.cli import main
from keyboard_lm.inference import ModelFileError, Predictor
from tests.conftest import REPO, assert_in_top_k

SPECIALS = {"<pad>", "<bos>", "<eos>", "<oov>"}


@pytest.fixture(scope="module")
def predictor(small_tflite):
    return Predictor.load(small_tflite)


def test_inference_imports_no_tensorflow(small_tflite):
    code = ("import sys; from keyboard_lm.inference import Predictor; p = Predictor.load(sys.argv[1]);"
            "p.suggest('how are'); print(sorted(m for m in sys.modules if m.startswith('tensorflow')))")
    out = subprocess.run([sys.executable, "-c", code, small_tflite], capture_output=True, text=True,
                         cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_suggest_returns_k_sorted_probabilities(predictor):
    pairs = predictor.suggest("how are", k=3)
    assert len(pairs) == 3
    probs = [p for _, p in pairs]
    assert probs == sorted(probs, reverse=True) and all(0 < p < 1 for p in probs)
    assert not SPECIALS & {w for w, _ in pairs}


def test_suggestions_follow_the_model(predictor):
    # The model learned the corpus' most common continuation.
    assert "you" in [w for w, _ in predictor.suggest("how are", k=3)]


def test_streaming_session_equals_stateless_suggest(predictor):
    s = predictor.session()
    for word in ["what", "is", "your"]:
        s.commit(word + " ")
    assert s.steps == 4  # <bos> + one step per committed word, never a re-read
    assert s.suggestions(3) == predictor.suggest("what is your", 3)


def test_sentence_end_resets_the_state(predictor):
    s = predictor.session()
    s.commit("i like it. ")
    assert s.words_in_sentence == 0
    assert s.suggestions(3) == predictor.suggest("", 3)
    assert predictor.suggest("blah blah. how are") == predictor.suggest("how are")


def test_reset_starts_a_new_field(predictor):
    s = predictor.session()
    s.commit("what is your ")
    s.reset()
    assert s.suggestions() == predictor.suggest("")


def test_complete_returns_words_with_the_prefix(predictor):
    pairs = predictor.complete("how are", "yo", k=3)
    assert pairs and all(w.startswith("yo") for w, _ in pairs)
    assert_in_top_k("you", pairs, 3)  # a trained fixture: membership, not its exact rank
    assert predictor.complete("", "Ｙo", k=3) == predictor.complete("", "yo", k=3)  # prefix is normalized
    assert predictor.complete("", "qqqzzz") == []


def test_blocklist_and_oov_are_never_suggested(small_tflite, predictor):
    top = predictor.suggest("how are", k=1)[0][0]
    blocked = Predictor.load(small_tflite, blocklist=[top.upper()])
    assert top not in [w for w, _ in blocked.suggest("how are", k=50)]
    assert top not in [w for w, _ in blocked.complete("how are", top[:1], k=50)]
    all_words = [w for w, _ in predictor.suggest("the", k=len(predictor.vocab))]
    assert not SPECIALS & set(all_words)


@pytest.mark.parametrize("context", ["", "   \t\n", "😀 👍🏽", "我爱你 你好", "مرحبا بالعالم", "e\u0301le\u0300ve",
                                     "a\x00b\x07c", "\ud800 lone surrogate \udfff", "x" * 100_000,
                                     "word " * 20_000, "http://example.com/x?y=1"])
def test_unusual_contexts_give_valid_suggestions(predictor, context):
    pairs = predictor.suggest(context, k=3)
    assert len(pairs) == 3 and not SPECIALS & {w for w, _ in pairs}


@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["list"]])
def test_non_string_context_is_a_value_error(predictor, bad):
    with pytest.raises(ValueError, match="must be a str"):
        predictor.suggest(bad)


def test_bad_k_is_a_value_error(predictor):
    with pytest.raises(ValueError, match="k must be"):
        predictor.suggest("hi", k=0)


@pytest.mark.parametrize("damage,match", [
    ("truncated", "truncated|not a TFLite"),
    ("foreign", "not a TFLite model"),
    ("no_vocab", "no embedded vocabulary|no readable embedded"),
    ("missing", "cannot read"),
])
def test_bad_model_files_name_the_file(small_tflite, tmp_path, damage, match):
    data = open(small_tflite, "rb").read()
    path = str(tmp_path / f"{damage}.tflite")
    if damage == "truncated":
        open(path, "wb").write(data[: len(data) // 2])
    elif damage == "foreign":
        open(path, "wb").write(b"PK\x03\x04 this is a zip, not a model" * 10)
    elif damage == "no_vocab":
        import zipfile
        import io

        with zipfile.ZipFile(io.BytesIO(data)) as z:
            start = min(info.header_offset for info in z.infolist())
        open(path, "wb").write(data[:start])  # the flatbuffer alone, without the appended archive
    with pytest.raises(ModelFileError, match=match) as err:
        Predictor.load(path)
    assert path in str(err.value)


def test_many_sessions_from_many_threads_agree(predictor):
    contexts = ["how are", "what is your", "i am", "do you", "", "tell me a"] * 6
    expected = {c: predictor.suggest(c) for c in set(contexts)}

    def work(context):
        s = predictor.session()
        s.commit(context + " ")
        return context, s.suggestions(3), predictor.complete(context, "a")

    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(work, contexts))
    for context, got, completion in results:
        assert got == expected[context]
        assert completion == predictor.complete(context, "a")


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(context=st.text(max_size=60), prefix=st.text(max_size=4))
def test_fuzz_never_crashes(predictor, context, prefix):
    pairs = predictor.suggest(context, k=3)
    assert len(pairs) == 3
    for w, p in predictor.complete(context, prefix, k=3):
        assert 0 <= p <= 1 and w not in SPECIALS


def test_predict_cli(small_tflite, capsys):
    assert main(["predict", small_tflite, "how are", "-k", "3"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and "\t" in lines[0]
    assert main(["predict", small_tflite, "how are", "--complete", "yo", "--json"]) == 0
    assert '"word": "you"' in capsys.readouterr().out


def test_interactive_without_terminal_answers_each_line(small_tflite):
    out = subprocess.run([sys.executable, "-m", "keyboard_lm.cli", "predict", small_tflite, "--interactive"],
                         input="how are yo\nwhat is \n", capture_output=True, text=True, cwd=REPO,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0 and len(lines) == 2
    assert "you" in lines[0]


def test_bench_cli_reports_latency_and_memory(small_tflite, capsys):
    assert main(["bench", small_tflite, "--json", "--repeats", "1"]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    for key in ("suggestion", "completion", "raw_step", "context_1_words", "context_50_words"):
        assert r[key]["p99_ms"] >= r[key]["p50_ms"] > 0
    assert r["peak_rss_mb"] > 0 and r["model_bytes"] == os.path.getsize(small_tflite)
    assert np.isfinite(r["suggestion_p99_over_budget"])


def test_long_unpunctuated_field_follows_the_training_chunks(predictor):
    # 1,000 words without a sentence end: the session restarts its state every
    # seq_len inputs exactly as training cut the sentence into chunks, so each
    # suggestion equals the stateless replay and the trainer's chunked scoring.
    from keyboard_lm.data.examples import sentence_examples
    from keyboard_lm.text import tokenizer

    words = (tokenizer.tokenize("what is your name i am fine thank you how are you doing today") * 80)[:1000]
    model, vocab, seq_len = predictor.model, predictor.vocab, predictor.model.seq_len
    s = predictor.session()
    chunks = sentence_examples(vocab.encode(words), seq_len)
    for i, word in enumerate(words):
        s.commit(word + " ")
        if i + 1 in (seq_len - 2, seq_len - 1, seq_len, seq_len + 1, 3 * seq_len, 999):
            n = i + 1  # words committed; the suggestion predicts target n+1 = input index n
            x = np.array([chunks[n // seq_len][0]])
            expected = model.predict_log_probs(x)[0, n % seq_len]
            np.testing.assert_allclose(s._log_probs, expected, atol=1e-5)
            assert s.suggestions(3) == predictor.suggest(" ".join(words[:n]), 3)
    assert s.inputs_in_chunk <= seq_len and s.words_in_sentence == 1000

"""The pure-Python text spec against the golden vectors, and the vocabulary."""

import json

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.text import SPECIAL_TOKENS, TEXT_SPEC_VERSION, Vocabulary, normalize, sentences, tokenize
from tests.conftest import GOLDEN


def test_golden_file_names_current_spec_version():
    with open(GOLDEN, encoding="utf-8") as f:
        assert json.load(f)["spec"] == TEXT_SPEC_VERSION


def test_golden_vectors_cover_the_required_kinds(golden_cases):
    names = {c["name"] for c in golden_cases}
    for needed in ("empty", "whitespace_only", "casing", "contractions", "punctuation_sentences",
                   "numbers", "urls", "emoji", "unicode_nfkc", "cjk", "rtl_arabic_hebrew"):
        assert needed in names


def test_python_tokenizer_matches_golden_vectors(golden_cases):
    for case in golden_cases:
        assert normalize(case["input"]) == case["normalized"], case["name"]
        assert tokenize(case["input"]) == case["tokens"], case["name"]
        assert sentences(case["input"]) == case["sentences"], case["name"]


def test_terminators_split_sentences_and_are_not_tokens():
    assert sentences("Hi there. How are you?") == [["hi", "there"], ["how", "are", "you"]]
    assert tokenize("Wow!!!") == ["wow"]


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["list"]])
def test_tokenize_rejects_non_strings(bad):
    with pytest.raises(ValueError, match="must be a str"):
        tokenize(bad)


def test_vocabulary_orders_by_count_then_alphabet():
    v = Vocabulary.build({"b": 2, "a": 2, "c": 5, "d": 1}, size=7)
    assert v.tokens == SPECIAL_TOKENS.tokens + ("c", "a", "b")
    assert v.encode(["c", "d"]) == [4, SPECIAL_TOKENS.oov_id]


def test_vocabulary_round_trips_through_file(tmp_path):
    v = Vocabulary.from_sentences([["hello", "world"], ["hello", "😀", "don't"]], size=100)
    path = tmp_path / "vocab.txt"
    v.save(path)
    assert Vocabulary.load(path).tokens == v.tokens
    assert Vocabulary.load(path).fingerprint() == v.fingerprint()


def test_vocabulary_load_rejects_file_without_special_tokens(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("hello\nworld\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="special tokens"):
        Vocabulary.load(path)


def test_vocabulary_load_rejects_duplicates_and_truncation(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(SPECIAL_TOKENS.tokens + ("a", "a")) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="duplicates"):
        Vocabulary.load(path)
    path.write_text("\n".join(SPECIAL_TOKENS.tokens + ("a",)), encoding="utf-8")
    with pytest.raises(ConfigError, match="truncated"):
        Vocabulary.load(path)


def test_vocabulary_size_must_exceed_special_tokens():
    with pytest.raises(ConfigError, match="must exceed 4"):
        Vocabulary.build({"a": 1}, size=4)

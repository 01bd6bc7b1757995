"""Corpus readers on real text, and every malformed-input case."""

import json

import pytest

from keyboard_lm.data.corpora import load_corpus, load_jsonl, load_shakespeare, load_textdir
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import ConfigError, DataError


@pytest.mark.shakespeare
def test_shakespeare_partitions_by_speaking_role(shakespeare):
    # Measured on the file: 7,222 speech headers by 309 distinct roles; 125
    # headers have no text at all, which leaves 299 roles with 7,097 speeches.
    assert len(shakespeare.clients) == 299
    assert shakespeare.num_records == 7097
    assert len(shakespeare.skipped) == 125
    assert all(s.reason == "empty text" for s in shakespeare.skipped)
    assert shakespeare.clients["First Citizen"][0].startswith("Before we proceed any further, hear me speak.")


@pytest.mark.shakespeare
def test_shakespeare_split_is_disjoint_complete_and_deterministic(shakespeare):
    ids = shakespeare.client_ids
    train, heldout = split_clients(ids, SplitConfig(0.1, seed=7))
    assert not set(train) & set(heldout)
    assert set(train) | set(heldout) == set(ids)
    assert len(heldout) == 30
    assert split_clients(list(reversed(ids)), SplitConfig(0.1, seed=7)) == (train, heldout)
    assert split_clients(ids, SplitConfig(0.1, seed=8)) != (train, heldout)


def test_default_corpus_is_real_conversations(default_corpus):
    assert len(default_corpus.clients) > 1500
    assert default_corpus.num_records > 3000
    assert not any(c.startswith("coding/") for c in default_corpus.clients)
    assert default_corpus.clients["greetings/0"][0] == "Hello"


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_split_rejects_bad_fraction(fraction):
    with pytest.raises(ConfigError, match="heldout_fraction"):
        SplitConfig(heldout_fraction=fraction)


def test_split_needs_two_clients():
    with pytest.raises(DataError, match="at least 2 clients"):
        split_clients(["only"])


def _write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_jsonl_reads_users_and_texts(tmp_path):
    lines = [{"user": "ann", "text": "Hello there."}, {"user": "bob", "text": "Hi!"},
             {"user": "ann", "text": "How are you?"}, {"user": 7, "text": "numeric ids are fine"}]
    path = _write(tmp_path, "c.jsonl", "\n".join(json.dumps(x) for x in lines).encode() + b"\n\n")
    corpus = load_jsonl(path)
    assert corpus.clients == {"ann": ["Hello there.", "How are you?"], "bob": ["Hi!"], "7": ["numeric ids are fine"]}


BAD_JSONL = {
    "missing_user": (b'{"text": "hi"}', "missing field"),
    "missing_text": (b'{"user": "a"}', "missing field"),
    "not_json": (b'{"user": "a", "text": ', "not valid JSON"),
    "not_object": (b'["a", "b"]', "not a JSON object"),
    "text_not_string": (b'{"user": "a", "text": 5}', 'bad "text"'),
    "empty_user": (b'{"user": "", "text": "hi"}', 'bad "user"'),
    "empty_text": (b'{"user": "a", "text": "   "}', "empty text"),
    "non_utf8": (b'{"user": "a", "text": "caf\xe9"}', "not valid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSONL))
def test_jsonl_bad_record_names_file_and_line(tmp_path, case):
    bad, reason = BAD_JSONL[case]
    path = _write(tmp_path, "c.jsonl", b'{"user": "ok", "text": "fine"}\n' + bad + b"\n")
    with pytest.raises(DataError) as err:
        load_jsonl(path)
    assert f"{path}:2: {reason}" in str(err.value)
    assert "--skip-bad" in str(err.value)


@pytest.mark.parametrize("case", sorted(BAD_JSONL))
def test_jsonl_skip_bad_counts_skipped_records(tmp_path, case):
    bad, reason = BAD_JSONL[case]
    path = _write(tmp_path, "c.jsonl", b'{"user": "ok", "text": "fine"}\n' + bad + b"\n")
    corpus = load_jsonl(path, skip_bad=True)
    assert corpus.clients == {"ok": ["fine"]}
    assert [(s.where, s.reason) for s in corpus.skipped] == [(f"{path}:2", reason)]


def test_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no clients with text"):
        load_jsonl(_write(tmp_path, "empty.jsonl", b"\n \n"))
    with pytest.raises(DataError, match=r"no clients with text \(1 bad records skipped\)"):
        load_jsonl(_write(tmp_path, "bad.jsonl", b"nope\n"), skip_bad=True)


def test_unreadable_and_missing_paths(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_corpus(str(tmp_path / "nope.jsonl"), "jsonl")
    with pytest.raises(DataError, match="is a directory"):
        load_jsonl(str(tmp_path))
    with pytest.raises(DataError, match="needs --data"):
        load_corpus(None, "jsonl")
    with pytest.raises(DataError, match="unknown --format"):
        load_corpus(str(tmp_path), "csv")


def test_textdir_one_file_per_user(tmp_path):
    (tmp_path / "ann.txt").write_text("first message\n\nsecond message\n", encoding="utf-8")
    (tmp_path / "bob.txt").write_text("hello\n", encoding="utf-8")
    corpus = load_textdir(str(tmp_path))
    assert corpus.clients == {"ann": ["first message", "second message"], "bob": ["hello"]}


def test_textdir_empty_client_is_an_error_or_counted(tmp_path):
    (tmp_path / "ann.txt").write_text("hello\n", encoding="utf-8")
    (tmp_path / "ghost.txt").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DataError, match="ghost.txt: client has no text"):
        load_textdir(str(tmp_path))
    corpus = load_textdir(str(tmp_path), skip_bad=True)
    assert list(corpus.clients) == ["ann"]
    assert [s.reason for s in corpus.skipped] == ["client has no text"]


def test_textdir_non_utf8_line(tmp_path):
    (tmp_path / "ann.txt").write_bytes(b"ok line\nbad \xff\xfe line\n")
    with pytest.raises(DataError, match=r"ann.txt:2: not valid UTF-8"):
        load_textdir(str(tmp_path))


def test_textdir_wants_a_directory(tmp_path):
    with pytest.raises(DataError, match="not a directory"):
        load_textdir(_write(tmp_path, "f.txt", b"x"))


def test_shakespeare_text_before_first_header(tmp_path):
    path = _write(tmp_path, "play.txt", b"stray line\n\nHAMLET:\nTo be.\n")
    with pytest.raises(DataError, match="play.txt:1: text before the first"):
        load_shakespeare(path)
    assert load_shakespeare(path, skip_bad=True).clients == {"HAMLET": ["To be."]}

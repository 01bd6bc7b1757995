"""The phrase-table golden files are what their script and today's Python predictor give.

tests/golden/phrases/cifg_phrases.tflite is the golden cifg model with a phrase table in its archive, and
tests/golden/phrase_fixture.json the strips the Python predictor gives over it (both written by
tests/golden/make_phrase_fixture.py). The Java core's PhraseParityGoldenTest reads the same two files and
must give the same words in the same order, so the Python side is pinned here: a change to the table's
builder or format, the ranker's merge or the session's context that moves a word or a probability fails,
and the fix is to rerun the script and review the diff. The cases must also cover every rule of the merge,
or the Java test would prove less than it says.
"""

import io
import json
import sys
import zipfile

import pytest

from keyboard_lm.inference import Predictor
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.text.phrase_table import context_hash
from keyboard_lm.text.spec import SPECIAL_TOKENS as SP
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "golden"))
import make_phrase_fixture as golden  # noqa: E402

COMMITTED = json.loads(golden.FIXTURE.read_text(encoding="utf-8"))
CASES = COMMITTED["cases"]


def _entries(path) -> dict:
    with zipfile.ZipFile(path) as z:
        return {i.filename: (z.read(i.filename), i.compress_type) for i in z.infolist()}


def test_the_committed_model_is_the_golden_model_with_the_table_the_script_builds():
    base, ours = golden.BASE.read_bytes(), golden.MODEL.read_bytes()
    start = min(i.header_offset for i in zipfile.ZipFile(io.BytesIO(base)).infolist())
    assert ours[:start] == base[:start], "the flatbuffer is the golden model's"
    entries, base_entries = _entries(golden.MODEL), _entries(golden.BASE)
    assert sorted(entries) == ["keyboard_lm.json", "phrases.bin", "vocab.txt"]
    assert entries["vocab.txt"][0] == base_entries["vocab.txt"][0]
    model = ModelFile.load(str(golden.MODEL))
    table = golden.build_table(model.vocab)
    assert entries["phrases.bin"] == (table.to_bytes(), zipfile.ZIP_STORED)
    meta, base_meta = json.loads(entries["keyboard_lm.json"][0]), json.loads(base_entries["keyboard_lm.json"][0])
    assert meta.pop("phrases") == golden.phrases_metadata(table, table.to_bytes())
    assert meta == base_meta
    assert len(model.phrases) == COMMITTED["contexts"] and model.phrase_gate.to_dict() == golden.GATE


def test_the_fixture_holds_what_the_python_predictor_gives_today():
    now = golden.fixture_cases(golden.MODEL)
    assert [c["name"] for c in now] == [c["name"] for c in CASES]
    for a, b in zip(now, CASES):
        assert a["words"] == b["words"] and a["without_table"]["words"] == b["without_table"]["words"], b["name"]
        assert a["probabilities"] == pytest.approx(b["probabilities"], rel=1e-5, abs=1e-8), b["name"]
        assert {k: v for k, v in a.items() if k not in ("probabilities", "without_table")} == \
            {k: v for k, v in b.items() if k not in ("probabilities", "without_table")}, b["name"]
    table = ModelFile.load(str(golden.MODEL)).phrases
    assert golden.lookup_vectors(table, now) == COMMITTED["lookups"]
    assert [context_hash(v["ids"]) for v in COMMITTED["hashes"]] == [v["hash"] for v in COMMITTED["hashes"]]


@pytest.mark.parametrize("cache", [64, 0])
def test_stateless_calls_give_the_strips_a_session_gives(cache):
    predictors = {}
    for case in (c for c in CASES if not c["history"]):
        key = tuple(case["blocklist"])
        p = predictors.setdefault(key, Predictor.load(str(golden.MODEL), blocklist=case["blocklist"],
                                                      prefix_cache_size=cache))
        got = (p.complete(case["context"], case["prefix"], case["k"]) if case["prefix"] is not None
               else p.suggest(case["context"], case["k"]))
        assert [w for w, _ in got] == case["words"], case["name"]
        assert [x for _, x in got] == pytest.approx(case["probabilities"], rel=1e-5, abs=1e-8), case["name"]


def test_the_cases_cover_every_rule_of_the_merge():
    matched = [c for c in CASES if c["weight"] > 0]
    assert {c["stored"]["n"] for c in matched} == {1, 2, 3, 4}, "a match of every context length"
    assert any(c["stored"] is None for c in CASES), "a position with no stored context"
    assert any(c["stored"] is not None and c["weight"] == 0 for c in CASES), "a stored context the gate gives no say"
    assert sum(c["words"] != c["without_table"]["words"] for c in CASES) >= 5, "the table changes strips"
    assert any(c["stored"] and "<eos>" in c["stored"]["words"] and c["weight"] > 0 for c in CASES), \
        "a never-suggestable table word (<eos>) is skipped"
    blocked = [c for c in matched if set(c["blocklist"]) & set(c["stored"]["words"])]
    assert blocked and all(not set(c["blocklist"]) & set(c["words"]) for c in blocked), "a blocklisted table word"
    completions = [c for c in matched if c["prefix"] is not None]
    starts = [any(w.startswith(c["prefix"].lower()) for w in c["stored"]["words"]) for c in completions]
    assert True in starts and False in starts, "completions with and without a table word of the prefix"
    assert any(c["history_share"] > 0 and c["weight"] > 0 for c in CASES), "history and table together"
    assert any(c["history_share"] > 0 and c["weight"] > 0 and c["prefix"] for c in CASES)
    vocab = ModelFile.load(str(golden.MODEL)).vocab
    assert any(c["history"] and any(w not in vocab for w in c["words"]) for c in matched), \
        "a word only the history knows beside the table's"
    seq_len = COMMITTED["seq_len"]
    long = [c for c in CASES if len(c["context"].split()) >= seq_len]
    assert any(c["context_ids"][0] != SP.bos_id and c["weight"] > 0 for c in long), "a context after a state restart"
    assert any(len(c["context"].split()) == seq_len - 1 for c in CASES), "the last position of a chunk"
    assert any(SP.oov_id in c["context_ids"] for c in matched), "a word outside the vocabulary before a match"
    assert any(c["context"].endswith(". ") for c in matched), "a sentence start after a terminator"

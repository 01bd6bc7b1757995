"""The committed predictor fixture is what the current Python predictor produces.

tests/golden/predictor_fixture.json (written by tests/golden/make_fixtures.py)
holds, for every committed model in tests/golden/models/, the top-3 next-word
ids and raw log-probs for a list of contexts and prefix completions. Other
implementations (the Java core of android_demo/) are checked against it, so it
must stay current: a change to the predictor, the text spec or a model file
that moves a top-3 id or a log-prob by more than 1e-5 fails here, and the fix
is to rerun the generator and review the diff.
"""

import json
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "golden"))
import make_fixtures  # noqa: E402

COMMITTED = json.loads(make_fixtures.FIXTURE.read_text())


def test_fixture_covers_every_committed_model():
    assert sorted(COMMITTED["models"]) == sorted(f.name for f in make_fixtures.MODELS.glob("*.tflite"))


@pytest.mark.parametrize("name", sorted(COMMITTED["models"]))
def test_fixture_matches_the_python_predictor(name):
    now = make_fixtures.fixture_for(make_fixtures.MODELS / name)
    then = COMMITTED["models"][name]
    assert now["seq_len"] == then["seq_len"] and now["vocab_size"] == then["vocab_size"]
    for part in ("contexts", "completions"):
        assert len(now[part]) == len(then[part])
        for a, b in zip(now[part], then[part]):
            where = f"{name} {part} {b['context']!r} {b.get('prefix', '')!r}"
            assert a["top_ids"] == b["top_ids"], where
            assert a["top_words"] == b["top_words"], where
            assert a["top_log_probs"] == pytest.approx(b["top_log_probs"], abs=1e-5), where


def test_long_context_restarts_the_state_every_seq_len_inputs():
    # The long context is longer than seq_len inputs; its suggestions must equal
    # those after only the words of its last chunk, each from a zero state.
    from keyboard_lm.inference import Predictor
    from keyboard_lm.text import tokenizer

    p = Predictor.load(str(make_fixtures.MODELS / "cifg_dynamic-range.tflite"))
    long_context = make_fixtures.CONTEXTS[-1]
    words = [t for kind, t in tokenizer.scan(long_context) if kind != "end"]
    assert len(words) + 1 > p.model.seq_len, "the long context must span more than one chunk"
    s = p.session()
    s.commit(long_context)
    assert p.suggest(long_context) == s.suggestions()
    full = COMMITTED["models"]["cifg_dynamic-range.tflite"]["contexts"][-1]
    assert [w for w, _ in s.suggestions()] == full["top_words"]

"""The typo golden file is what its script and today's Python predictor give, and its cases cover every rule.

tests/golden/typo_fixture.json holds the strips the Python predictor gives over the demo keyboard's model for
words typed with typos (written by tests/golden/make_typo_fixture.py). The Java core's TypoParityGoldenTest
reads the same file and must give the same words in the same order, so the Python side is pinned here: a
change to the typo index, the channel's factors or the ranking that moves a word fails, and the fix is to rerun
the script and review the diff.
"""

import hashlib
import json
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "golden"))
import make_typo_fixture as golden  # noqa: E402

COMMITTED = json.loads(golden.FIXTURE.read_text(encoding="utf-8"))


def test_the_fixture_names_the_demo_model_it_was_made_with():
    assert (golden.HERE / COMMITTED["model"]).resolve() == golden.MODEL
    assert COMMITTED["model_sha256"] == hashlib.sha256(golden.MODEL.read_bytes()).hexdigest(), \
        "the demo model changed: rerun tests/golden/make_typo_fixture.py and review the diff"
    assert COMMITTED["typo_model"] == golden.default_model() and COMMITTED["neighbours"] == golden.neighbours()


def test_the_fixture_holds_what_the_python_predictor_gives_today():
    now = golden.fixture_cases(golden.MODEL)
    assert [c["name"] for c in now] == [c["name"] for c in COMMITTED["cases"]]
    for a, b in zip(now, COMMITTED["cases"]):
        assert a["probabilities"] == pytest.approx(b["probabilities"], rel=1e-5, abs=1e-9), b["name"]
        assert {k: v for k, v in a.items() if k != "probabilities"} == \
            {k: v for k, v in b.items() if k != "probabilities"}, b["name"]


def test_the_cases_cover_every_rule():
    cases, factors = COMMITTED["cases"], COMMITTED["typo_model"]
    slips = {f for c in cases for _, f in c["typos"]}
    assert {factors[k] for k in ("near_substitution", "far_substitution", "transposition", "omission",
                                 "near_insertion", "far_insertion")} <= slips
    kept = [c for c in cases if c["words"] and c["words"][-1] == " ".join(c["typed"].split()).lower()
            and len(c["words"]) > 1]
    assert kept and any(c["words"] == [] for c in cases)
    assert any(c["k"] == 1 and c["typos"] for c in cases) and any(c["k"] == 5 for c in cases)
    assert any(c["phrase_weight"] > 0 and c["typos"] for c in cases)
    assert any(c["phrase_weight"] == 0 and c["typos"] for c in cases)
    assert any(c["history_share"] > 0 and c["typos"] for c in cases)
    assert any(c["blocklist"] for c in cases) and any(not c["typos"] for c in cases)
    examples = {c["typed"]: c["words"] for c in cases if c["name"].startswith("swapped letters")}
    assert {"week", "weeks"} & set(examples["weke"]) and "the" in examples["teh"] and "store" in examples["sotre"]

"""Shenoy & Nguyen's OOV expansion (benchmarks/oov/oov_benchmark.py, oov_finetune.py): fine-tuning with the OOV
adapter trained jointly, against the plain fine-tuning it extends, and the per-user intervals of EMR3."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.oov import oov_benchmark  # noqa: E402
from benchmarks.oov import oov_finetune  # noqa: E402

pytestmark = pytest.mark.bench


@pytest.fixture
def tiny_encoder(small_char_encoder):
    return small_char_encoder[0]


def test_without_personal_words_the_joint_model_is_the_fine_tuned_model(small_run, tiny_encoder, default_corpus):
    sentences = [s for s in default_corpus.sentences(default_corpus.client_ids[:40]) if s][:30]
    plain = oov_finetune.FineTuner(small_run, 1e-3, 1)
    joint = oov_finetune.JointTuner(small_run, tiny_encoder, 1e-3, 1, hidden=16)
    joint.prepare([], sigma=0.1)
    assert joint.predictions(sentences) == plain.predictions(sentences)


def test_personal_words_are_read_and_predicted_after_joint_fine_tuning(small_run, tiny_encoder):
    joint = oov_finetune.JointTuner(small_run, tiny_encoder, 1e-2, 4, hidden=16)
    V = joint.V
    train = [["i", "saw", "zorblax", "today"]] * 24
    val = [["i", "saw", "zorblax", "today"]] * 4
    joint.prepare(["zorblax"], sigma=0.0)
    x, y = joint.examples([["i", "saw", "zorblax", "qqqwwee"]])
    assert V in y[0] and V in x[0]  # the personal word has its own id, in and out
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    assert y[0][2] == V and y[0][3] == SPECIAL_TOKENS.oov_id  # another OOV word stays <oov>
    before = joint.predictions(val)
    assert not any("zorblax" in p for p in before)
    report = joint.fit_grid(["zorblax"], train, val, sigmas=(0.0, 1e-2))
    assert report["sigma"] in (0.0, 1e-2) and report["kept_epoch"] >= 1
    after = joint.predictions(val)
    # in the top 3 at its own place (after "i saw") in every sentence: 4 words a sentence, its index 2
    assert all("zorblax" in after[4 * i + 2] for i in range(len(val)))
    # a reset restores the global model: fine-tuning is per user
    joint.prepare([], sigma=0.0)
    plain = oov_finetune.FineTuner(small_run, 1e-2, 1)
    assert joint.predictions(val) == plain.predictions(val)


def test_emr3_intervals_pool_users_and_a_method_against_itself_is_one():
    preds = [["a", "b", "c"]] * 6 + [["x", "y", "z"]] * 4
    targets = ["a"] * 6 + ["q"] * 4
    slices = [(0, 3), (3, 6), (6, 8), (8, 10)]
    hits = oov_benchmark.user_hits(preds, targets, slices)
    assert hits == [(3, 3), (3, 3), (0, 2), (0, 2)]
    lo, hi = oov_benchmark.emr3_interval(hits)
    assert lo <= 0.6 <= hi and 0 <= lo < hi <= 1
    assert oov_benchmark.emr3_interval(hits, hits) == pytest.approx([1.0, 1.0])


def test_joint_words_keeps_what_the_char_encoder_can_spell_and_counts_the_rest():
    from keyboard_lm.text.spec import SPECIAL_TOKENS
    from keyboard_lm.text.vocabulary import Vocabulary

    vocab = Vocabulary([*SPECIAL_TOKENS.tokens, "see", "the"])
    url = "http://www.example.org/a/long/path.html"
    sentences = [["see", url, "zorblax"], ["see", url, "the", "quux"], [url, "zorblax"]]
    words, left_out = oov_benchmark.joint_words(sentences, vocab, max_bytes=24, max_words=10)
    assert (words, left_out) == (["zorblax", "quux"], 1)  # by count, the URL (39 bytes) counted, not kept
    assert oov_benchmark.joint_words(sentences, vocab, max_bytes=24, max_words=1) == (["zorblax"], 1)
    assert oov_benchmark.joint_words(sentences, vocab, max_bytes=64, max_words=10) == ([url, "zorblax", "quux"], 0)


def test_the_report_names_the_corpus_it_ran_on():
    from types import SimpleNamespace

    label = lambda fmt, partition="natural": oov_benchmark.corpus_label(  # noqa: E731
        SimpleNamespace(format=fmt, partition=partition, num_clients=30))
    assert label("mbox") == "SpamAssassin mail by sender"
    assert label("shakespeare") == "Tiny Shakespeare by role"
    assert label("shakespeare", "iid") == "Tiny Shakespeare re-partitioned IID into 30 users"

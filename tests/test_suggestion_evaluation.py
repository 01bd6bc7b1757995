"""The stack's evaluation streams sessions as a keyboard does; the gate is fitted on validation users only."""

from __future__ import annotations

import numpy as np
import pytest

from keyboard_lm.baselines.ngram import KneserNey
from keyboard_lm.evaluation import _top3, evaluate_predict_fn, paired_intervals
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.predictor import Predictor
from keyboard_lm.suggestion_evaluation import evaluate_ngram_stack, evaluate_stack, fit_gate, significant
from keyboard_lm.text.phrase_table import PhraseTable, TableConfig
from keyboard_lm.text.spec import SPECIAL_TOKENS as SP
from tests.test_phrase_table import reference_counts


@pytest.fixture(scope="module")
def users(default_corpus):
    ids = default_corpus.client_ids
    return ids[:150], ids[150:190], ids[190:230]  # table, validation, evaluation


def test_the_model_alone_streamed_scores_as_eval_scores_it(small_tflite, default_corpus, users):
    model = ModelFile.load(small_tflite)
    streamed = evaluate_stack(Predictor(model), default_corpus, users[2])
    batch = evaluate_predict_fn(model.predict_log_probs, default_corpus, users[2], model.vocab, model.seq_len)
    # The same numbers ranked by the same rule (log-prob, ties by id ascending): the same hits, on every machine.
    # Ties are real with int8 kernels; a batch tie rule of its own once cost 6 of 867 hits on one CPU.
    for metric in ("num_events", "recall_at_3", "recall_at_1"):
        assert streamed["pooled"][metric] == batch["pooled"][metric], metric


def test_eval_ranks_tied_scores_by_id_as_the_deployed_graph_does():
    scores = np.full((3, len(SP.tokens) + 6), -5.0, np.float32)
    first = len(SP.tokens)
    scores[0, first:] = [1, 2, 2, 2, 2, 0]      # a four-way tie for the best: the three lowest ids
    scores[1, first:] = [5, 1, 3, 3, 3, 1]      # a tie at the third place
    scores[2, :first] = 9.0                     # specials never count, however high
    scores[2, first:] = [0, 0, 0, 0, 0, 0]
    best = _top3(scores) - first
    assert best.tolist() == [[1, 2, 3], [0, 2, 3], [0, 1, 2]]


def test_the_ngram_stream_scores_as_eval_scores_it_and_history_changes_it(small_tflite, default_corpus, users):
    vocab = ModelFile.load(small_tflite).vocab
    kn = KneserNey(len(vocab), 3).fit(vocab.encode(s) for s in default_corpus.sentences(users[0]))
    streamed = evaluate_ngram_stack(kn, vocab, default_corpus, users[2])
    batch = evaluate_predict_fn(kn.predict_log_probs, default_corpus, users[2], vocab, 20)
    assert streamed["pooled"]["recall_at_3"] == pytest.approx(batch["pooled"]["recall_at_3"], abs=0.002)
    cached = evaluate_ngram_stack(kn, vocab, default_corpus, users[2], history=True)
    assert cached["pooled"]["recall_at_3"] != streamed["pooled"]["recall_at_3"]
    assert set(paired_intervals(cached, streamed)) == {"recall_at_1", "recall_at_3"}


def test_the_gate_fitted_on_validation_users_never_loses_hits_there(small_tflite, default_corpus, users):
    model = ModelFile.load(small_tflite)
    sentences = {c: [model.vocab.encode(s) for s in default_corpus.sentences([c])] for c in users[0]}
    table = PhraseTable.build(reference_counts(sentences, k=2), len(model.vocab), TableConfig(max_bytes=8000),
                              exclude=[SP.pad_id, SP.bos_id, SP.oov_id])
    gate, report = fit_gate(model, table, default_corpus, users[1])
    assert report["validation_users"] == len(users[1]) and report["cells"]
    for cell in report["cells"].values():
        assert cell["hits"] >= cell["hits_without"]
        assert (cell["weight"] == 0.0) == (cell["hits"] == cell["hits_without"])
        if cell["weight"]:
            assert significant(cell["gained"], cell["lost"]) and cell["weight"] == cell["best_weight"]
    # Without the sign test every cell whose best weight gains a hit keeps it; the test only ever zeroes cells.
    loose, loose_report = fit_gate(model, table, default_corpus, users[1], z=0.0)
    for key, cell in loose_report["cells"].items():
        assert (cell["weight"] > 0) == (cell["gained"] > cell["lost"])
        assert report["cells"][key]["weight"] in (0.0, cell["weight"])


def test_the_sign_test_wants_a_gain_beyond_chance():
    assert not significant(1, 0) and not significant(3, 0)   # 3 < 1.96 * sqrt(3)
    assert significant(4, 0) and significant(11, 0)
    assert not significant(5, 3) and not significant(2, 2) and not significant(0, 4)
    assert significant(30, 10)                               # 20 >= 1.96 * sqrt(40) = 12.4

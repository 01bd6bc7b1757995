"""The cross-fitted n-gram teacher of centralized training (training/ngram_teacher.py)."""

from __future__ import annotations

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.data.examples import sentence_examples
from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import load_run
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.training.ngram_teacher import (TeacherConfig, client_folds, cross_fitted_examples,
                                                mixed_targets)

TINY = ["--units", "16", "--embedding-dim", "8", "--vocab-size", "300"]


def _encoded_clients(corpus, vocab, n):
    ids = corpus.client_ids[:n]
    return {cid: [vocab.encode(s) for s in corpus.sentences([cid])] for cid in ids}


def test_mixed_target_loss_at_weight_zero_is_the_plain_loss():
    import tensorflow as tf

    from keyboard_lm.models.metrics import loss_fn, mixed_target_loss

    rng = np.random.RandomState(0)
    y = rng.randint(1, 50, (4, 7))
    y[:, 5:] = SPECIAL_TOKENS.pad_id
    logits = tf.constant(rng.randn(4, 7, 50).astype(np.float32))
    ids = rng.randint(0, 50, (4, 7, 3)).astype(np.int32)
    probs = np.full((4, 7, 3), 1 / 3, np.float32)
    plain = float(loss_fn()(y, logits))
    assert float(mixed_target_loss(tf.constant(mixed_targets(y, ids, probs, 0.0)), logits)) == pytest.approx(
        plain, rel=1e-6)
    # With weight w the loss is (1 - w) * CE(y) + w * CE(teacher), averaged over the same non-pad positions.
    log_q = tf.nn.log_softmax(logits).numpy()
    teacher_ce = -(probs * np.take_along_axis(log_q, ids, axis=-1)).sum(-1)[y != 0].mean()
    mixed = float(mixed_target_loss(tf.constant(mixed_targets(y, ids, probs, 0.4)), logits))
    assert mixed == pytest.approx(0.6 * plain + 0.4 * teacher_ce, rel=1e-5)


def test_mixed_targets_put_no_mass_on_pad_positions():
    y = np.array([[5, 6, 0, 0]])
    ids = np.full((1, 4, 2), 7, np.int32)
    probs = np.full((1, 4, 2), 0.5, np.float32)
    packed = mixed_targets(y, ids, probs, 0.3)  # [1, 4, 3, 2]
    assert packed.shape == (1, 4, 3, 2)
    np.testing.assert_allclose(packed[0, :2, :, 1].sum(-1), [1.0, 1.0], rtol=1e-6)
    assert not packed[0, 2:, :, 1].any()
    assert packed[0, 0, 0, 0] == 5 and packed[0, 0, 0, 1] == pytest.approx(0.7)


def test_client_folds_are_disjoint_cover_and_deterministic():
    ids = [f"c{i}" for i in range(23)]
    folds = client_folds(ids, 5, seed=3)
    assert len(folds) == 5 and sorted(c for f in folds for c in f) == sorted(ids)
    assert {len(f) for f in folds} <= {4, 5}
    assert folds == client_folds(list(reversed(ids)), 5, seed=3)
    assert folds != client_folds(ids, 5, seed=4)


def test_cross_fitted_examples_are_the_plain_chunks(default_corpus):
    from keyboard_lm.text.vocabulary import Vocabulary

    vocab = Vocabulary.from_sentences(default_corpus.sentences(), 300)
    clients = _encoded_clients(default_corpus, vocab, 40)
    ex = cross_fitted_examples(clients, len(vocab), 8, TeacherConfig(weight=0.5, top_k=4))
    plain = sorted((tuple(x), tuple(y)) for s in (s for v in clients.values() for s in v)
                   for x, y in sentence_examples(s, 8))
    assert sorted(zip(map(tuple, ex["x"]), map(tuple, ex["y"]))) == plain
    assert ex["teacher_ids"].shape == ex["x"].shape + (4,)
    real = ex["y"] != SPECIAL_TOKENS.pad_id
    np.testing.assert_allclose(ex["teacher_probs"].sum(-1)[real], 1.0, rtol=1e-5)
    assert not ex["teacher_probs"][~real].any()


def test_teacher_never_sees_the_fold_it_teaches():
    # "zebra" follows "the" in one client only (often).  Cross-fitted, that client's teacher has never
    # seen the word, so it is not among its top words; an n-gram fitted on all clients ranks it first.
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.training.ngram_teacher import teacher_top_k

    v = {w: i for i, w in enumerate(["<pad>", "<bos>", "<eos>", "<oov>", "the", "cat", "dog", "zebra", "ran"])}
    clients = {f"c{i}": [[v["the"], v["cat"], v["ran"]], [v["the"], v["dog"], v["ran"]]] for i in range(6)}
    clients["c0"] = [[v["the"], v["zebra"], v["ran"]]] * 12
    ex = cross_fitted_examples(clients, len(v), 6, TeacherConfig(weight=0.5, folds=3, top_k=2))
    row = next(i for i, x in enumerate(ex["x"]) if list(x[:2]) == [SPECIAL_TOKENS.bos_id, v["the"]]
               and ex["y"][i, 1] == v["zebra"])
    assert v["zebra"] not in ex["teacher_ids"][row, 1]
    everything = KneserNey(len(v), 5).fit(s for c in clients.values() for s in c)
    ids, probs = teacher_top_k(everything, ex["x"][row:row + 1], ex["y"][row:row + 1], 3)
    assert ids[0, 1, np.argmax(probs[0, 1])] == v["zebra"]


@pytest.mark.parametrize("kwargs, expected", [
    ({"weight": 1.0}, "weight must be in [0, 1)"),
    ({"weight": -0.1}, "weight must be in [0, 1)"),
    ({"folds": 1}, "folds must be >= 2"),
    ({"top_k": 0}, "top_k must be >= 1"),
    ({"order": 0}, "order must be >= 1"),
])
def test_bad_teacher_settings_are_refused(kwargs, expected):
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace(")", r"\)")):
        TeacherConfig(**kwargs)


def test_more_folds_than_clients_is_refused():
    with pytest.raises(ConfigError, match="5 folds need at least 5 training clients, got 3"):
        client_folds(["a", "b", "c"], 5)


def test_centralized_run_with_teacher_records_it_and_trains(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "--centralized", "--out", out, *TINY, "--epochs", "1", "--ngram-teacher", "0.3"]) == 0
    run = load_run(out)
    assert run.info["hyperparameters"]["ngram_teacher"] == 0.3
    assert run.info["ngram_teacher"] == {"weight": 0.3, "order": 5, "folds": 5, "top_k": 32, "seed": 0}
    assert np.isfinite(run.info["final_metrics"]["loss"])
    assert "n-gram teacher: fold 5/5" in capsys.readouterr().out


def test_federated_train_refuses_the_teacher(tmp_path, capsys):
    code = main(["train", "--out", str(tmp_path / "r"), *TINY, "--rounds", "1", "--ngram-teacher", "0.3"])
    assert code == 2
    assert "--ngram-teacher: centralized training only" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()

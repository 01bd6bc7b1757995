"""train --centralized checkpoints every epoch; --resume goes on as the run would have without the stop."""

import csv
import json
import os
import shutil

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.models.run_dir import load_run
from tests.conftest import write_word_chain_users

# No dropout or DropConnect (their masks are drawn anew after a resume); the weight average, validation with
# its rate decay and Adam's slots all carry over the stop.
RECIPE = ["--centralized", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--optimizer", "adam",
             "--lr", "0.05", "--ngram-teacher", "0", "--dropout", "0", "--weight-drop", "0", "--weight-average",
             "0.9", "--lr-decay", "0.5", "--patience", "5"]


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """Six epochs without a stop on a small corpus of 80 users (sentences of a seeded word chain)."""
    root = tmp_path_factory.mktemp("central")
    words = "the a my your we they see hold call send read keep make find good new old long".split()
    write_word_chain_users(root / "users.jsonl", 80, 8, 0, words, 9)
    out = str(root / "full")
    assert main(["train", "--out", out, "--epochs", "6", *_recipe(root)]) == 0
    return out


def _recipe(root) -> list:
    return ["--data", os.path.join(root, "users.jsonl"), "--format", "jsonl", *RECIPE]


def test_resumed_run_ends_like_an_uninterrupted_run(uninterrupted, tmp_path):
    full, part = uninterrupted, str(tmp_path / "part")
    # stopped after epoch 2; the rate decays after the resume (validation gains nothing at epoch 5)
    assert main(["train", "--out", part, "--epochs", "2", *_recipe(os.path.dirname(full))]) == 0
    assert os.path.exists(os.path.join(part, "checkpoints", "state.json"))
    # Without --centralized: the run resumes with its own trainer; --epochs is the epoch to reach.
    assert main(["train", "--out", part, "--resume", "--epochs", "6"]) == 0
    a, b = _rows(full), _rows(part)
    assert [r["epoch"] for r in b] == [str(e) for e in range(1, 7)]
    for key in ("train_loss", "loss", "recall_at_3", "val_recall_at_3"):
        assert [float(r[key]) for r in a] == pytest.approx([float(r[key]) for r in b], rel=1e-4, abs=1e-6), key
    assert [(r["learning_rate"], r["best_epoch"]) for r in a] == [(r["learning_rate"], r["best_epoch"]) for r in b]
    ra, rb = load_run(full), load_run(part)
    assert rb.info["epochs_done"] == 6 and rb.info["hyperparameters"]["epochs"] == 6
    assert ra.info["best_epoch"] == rb.info["best_epoch"] == rb.info["best"]["epoch"]
    for name in ra.weights:
        np.testing.assert_allclose(ra.weights[name], rb.weights[name], rtol=1e-4, atol=1e-6)
    assert float(b[-1]["elapsed_seconds"]) >= float(b[0]["elapsed_seconds"])


def test_resume_refuses_what_it_cannot_continue(uninterrupted, tmp_path, capsys):
    # The run trained all its epochs: only a later epoch to reach continues it.
    assert main(["train", "--out", uninterrupted, "--resume"]) == 2
    assert "has trained 6 epochs; give --epochs above 6" in capsys.readouterr().err
    # A setting of the run given again is refused, not ignored.
    assert main(["train", "--out", uninterrupted, "--resume", "--epochs", "7", "--lr", "0.05"]) == 2
    assert "--lr: a resumed run keeps its own settings" in capsys.readouterr().err
    # A run without a checkpoint (made before they existed) says so.
    old = str(tmp_path / "old")
    shutil.copytree(uninterrupted, old)
    for name in os.listdir(os.path.join(old, "checkpoints")):
        if name.startswith("state"):  # state.json and the per-epoch state-N.json
            os.remove(os.path.join(old, "checkpoints", name))
    assert main(["train", "--out", old, "--resume", "--epochs", "2"]) == 2
    assert "no checkpoint to resume from" in capsys.readouterr().err


def test_centralized_examples_are_every_fit_clients_chunks_and_a_second_run_reuses_them(default_corpus, monkeypatch):
    """The examples a centralized epoch shuffles are exactly the fit clients' sentence chunks (the Python
    reference, ``corpus_examples``), and a second run of the process on the same text encodes nothing again."""
    import dataclasses

    from keyboard_lm.data import preprocessing
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.text.vocabulary import Vocabulary
    from keyboard_lm.training.centralized import _training_data
    from keyboard_lm.training.config import default_config

    fit_ids = default_corpus.client_ids[:80]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(fit_ids), 300)
    for batching in ("padded", "length"):  # length: batches cut after their longest example, padded back here
        config = dataclasses.replace(default_config(warm_start=False), ngram_teacher=0.0, batch_size=7,
                                     batching=batching)
        data, n = _training_data(default_corpus, fit_ids, vocab, config, config.teacher(), print)
        batches = [(np.pad(x, [(0, 0), (0, 20 - x.shape[1])]), np.pad(y, [(0, 0), (0, 20 - y.shape[1])]))
                   for x, y in data(1).as_numpy_iterator()]
        got = np.concatenate([np.concatenate([x, y], axis=1) for x, y in batches])
        want = np.array([np.concatenate([x, y]) for x, y in corpus_examples(default_corpus.sentences(fit_ids),
                                                                           vocab, config.seq_len)], np.int32)
        assert n == len(want) == len(got) > 100
        assert sorted(map(tuple, got)) == sorted(map(tuple, want))
        assert not np.array_equal(got, want)  # shuffled
    calls = []
    encode = preprocessing._encode_clients
    monkeypatch.setattr(preprocessing, "_encode_clients", lambda *a: calls.append(1) or encode(*a))
    _, again = _training_data(default_corpus, fit_ids, vocab, config, config.teacher(), print)
    assert again == n and calls == []
    _training_data(default_corpus, fit_ids[:40], vocab, config, config.teacher(), print)
    assert calls == [1]  # other text: encoded


@pytest.mark.parametrize("batching", ["padded", "length", "packed"])
def test_a_run_stopped_inside_an_epoch_resumes_at_the_batch_it_reached(uninterrupted, tmp_path, monkeypatch,
                                                                        batching):
    """With --checkpoint-seconds the run checkpoints inside its epochs; stopped just after the third such
    checkpoint of epoch 1 (a fault injected after the real write), --resume skips the batches done and the
    run ends as the uninterrupted one, its checkpoint files inside the epoch gone after it."""
    from keyboard_lm.training.epoch_checkpoints import EpochCheckpoints

    root = os.path.dirname(uninterrupted)
    args = ["--epochs", "2", "--batching", batching, *_recipe(root)]
    full, part = str(tmp_path / "full"), str(tmp_path / "part")
    assert main(["train", "--out", full, *args]) == 0
    real, calls = EpochCheckpoints.save_partial, []

    def stop_after_third(self, state):
        real(self, state)
        calls.append(state)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the process stopped right after the checkpoint's commit

    monkeypatch.setattr(EpochCheckpoints, "save_partial", stop_after_third)
    assert main(["train", "--out", part, *args, "--checkpoint-seconds", "1e-9"]) != 0  # "interrupted"
    assert [c["epoch"] for c in calls] == [1, 1, 1] and [c["batches"] for c in calls] == [1, 2, 3]
    assert load_run(part).info["epochs_done"] == 0
    monkeypatch.setattr(EpochCheckpoints, "save_partial", real)
    assert main(["train", "--out", part, "--resume"]) == 0
    assert not [n for n in os.listdir(os.path.join(part, "checkpoints")) if n.startswith("partial")]
    a, b = _rows(full), _rows(part)
    assert [r["epoch"] for r in b] == ["1", "2"]
    for key in ("train_loss", "loss", "recall_at_3", "val_recall_at_3"):
        assert [float(r[key]) for r in a] == pytest.approx([float(r[key]) for r in b], rel=1e-3, abs=1e-5), key
    ra, rb = load_run(full), load_run(part)
    for name in ra.weights:
        np.testing.assert_allclose(ra.weights[name], rb.weights[name], rtol=1e-3, atol=1e-5)


def test_a_damaged_checkpoint_inside_an_epoch_starts_the_epoch_again(uninterrupted, tmp_path, monkeypatch, capsys):
    from keyboard_lm.training.epoch_checkpoints import EpochCheckpoints

    root = os.path.dirname(uninterrupted)
    part = str(tmp_path / "part")
    real = EpochCheckpoints.save_partial

    def stop(self, state):
        real(self, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(EpochCheckpoints, "save_partial", stop)
    assert main(["train", "--out", part, "--epochs", "1", *_recipe(root), "--checkpoint-seconds", "1e-9"]) != 0
    monkeypatch.setattr(EpochCheckpoints, "save_partial", real)
    ckpt = os.path.join(part, "checkpoints")
    with open(os.path.join(ckpt, "partial.json"), encoding="utf-8") as f:
        name = json.load(f)["checkpoint"]
    data = [n for n in os.listdir(ckpt) if n.startswith(name + ".data")][0]
    with open(os.path.join(ckpt, data), "r+b") as f:
        f.truncate(10)
    capsys.readouterr()
    assert main(["train", "--out", part, "--resume"]) == 0
    captured = capsys.readouterr()
    err = captured.out + captured.err
    assert "skipping the damaged checkpoint inside epoch 1" in err and "the epoch starts again" in err
    assert [r["epoch"] for r in _rows(part)] == ["1"]

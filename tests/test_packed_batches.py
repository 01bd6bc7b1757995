"""--batching packed: a padded batch's examples end to end in full rows, the state reset at each; the same
step as the padded batch on fewer positions (data.length_batches.packed, training.packed)."""

import csv
import os

import numpy as np
import pytest

from keyboard_lm.data.length_batches import example_lengths, pack_rows, packed


def _batch(n=24, width=10, vocab=50, seed=0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, width + 1, size=n)
    x, y = np.zeros((n, width), np.int32), np.zeros((n, width), np.int32)
    for i, n_i in enumerate(lengths):
        x[i, :n_i], y[i, :n_i] = rng.randint(4, vocab, size=n_i), rng.randint(4, vocab, size=n_i)
    return x, y, lengths


@pytest.mark.parametrize("seed", range(5))
def test_every_example_gets_its_own_span_of_one_row(seed):
    lengths = np.random.RandomState(seed).randint(1, 21, size=300)
    rows, starts = pack_rows(lengths, 20)
    used = np.zeros((rows.max() + 1, 20), int)
    for r, s, n in zip(rows, starts, lengths):
        assert s + n <= 20
        used[r, s:s + n] += 1
    assert used.max() == 1 and used.sum() == lengths.sum()
    assert rows.max() + 1 <= -(-lengths.sum() // 20) + 20  # near the bound of full rows
    assert (pack_rows(lengths, 20)[0] == rows).all()  # deterministic
    with pytest.raises(ValueError, match="does not fit a row of 5"):
        pack_rows(np.array([6]), 5)


def test_packed_rows_hold_each_examples_words_with_a_reset_at_its_start():
    x, y, lengths = _batch()
    index = np.arange(3, 20)
    (inputs, resets), targets = packed(x, y, example_lengths(x), index)
    rows, starts = pack_rows(lengths[index], x.shape[1])
    assert inputs.shape == resets.shape == targets.shape and len(inputs) == rows.max() + 1
    for i, r, s in zip(index, rows, starts):
        n = lengths[i]
        assert (inputs[r, s:s + n] == x[i, :n]).all() and (targets[r, s:s + n] == y[i, :n]).all()
        assert resets[r, s] == 1 and (resets[r, s + 1:s + n] == 0).all()
    assert resets.sum() == len(index) and (inputs != 0).sum() == lengths[index].sum()


@pytest.mark.parametrize("model_type", ["cifg", "si-cifg", "lstm"])
def test_the_packed_view_computes_each_example_as_in_its_own_padded_row(model_type):
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model, packed_model

    tf.keras.utils.set_random_seed(0)
    model = build_model(ModelConfig(model_type, 50, 8, 12))
    view = packed_model(model)
    assert [v.ref() for v in view.trainable_variables] == [v.ref() for v in model.trainable_variables]
    x, y, lengths = _batch()
    (inputs, resets), _ = packed(x, y, example_lengths(x), np.arange(len(x)))
    alone, together = model(x).numpy(), view([inputs, resets]).numpy()
    rows, starts = pack_rows(lengths, x.shape[1])
    for i, (r, s) in enumerate(zip(rows, starts)):
        np.testing.assert_allclose(together[r, s:s + lengths[i]], alone[i, :lengths[i]], rtol=1e-6, atol=1e-6)


def test_packed_batches_refuse_the_gru(tmp_path, default_corpus, capsys):
    from keyboard_lm.cli import main
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model, packed_model

    with pytest.raises(ConfigError, match="packed batches need"):
        packed_model(build_model(ModelConfig("gru", 50, 8, 12)))
    out = tmp_path / "run"
    assert main(["train", "--centralized", "--model", "gru", "--batching", "packed", "--out", str(out)]) == 2
    assert "--batching packed needs the CIFG" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("softmax", [[], ["--sampled-softmax", "20"]], ids=["full", "sampled"])
def test_a_packed_run_trains_what_the_padded_run_trains(tmp_path, softmax, capsys):
    from keyboard_lm.cli import main
    from keyboard_lm.models.run_dir import load_run
    from tests.conftest import write_word_chain_users

    words = "the a my your we they see hold call send read keep make find good new old long".split()
    write_word_chain_users(tmp_path / "users.jsonl", 60, 8, 0, words, 9)
    recipe = ["--data", str(tmp_path / "users.jsonl"), "--format", "jsonl", "--centralized", "--units", "16",
              "--embedding-dim", "8", "--vocab-size", "300", "--lr", "0.05", "--ngram-teacher", "0", "--dropout",
              "0", "--weight-drop", "0", "--batch-size", "16", *softmax]
    for batching in ("padded", "packed"):
        assert main(["train", "--out", str(tmp_path / batching), "--batching", batching, "--epochs", "2",
                     *recipe]) == 0
    a, b = load_run(str(tmp_path / "padded")), load_run(str(tmp_path / "packed"))
    assert b.record.hyperparameters["batching"] == "packed"
    for name in a.weights:
        np.testing.assert_allclose(b.weights[name], a.weights[name], rtol=1e-3, atol=1e-4)
    rows = [list(csv.DictReader(open(os.path.join(tmp_path, n, "metrics.csv"), encoding="utf-8")))
            for n in ("padded", "packed")]
    for key in ("train_loss", "recall_at_3", "loss"):
        assert [float(r[key]) for r in rows[1]] == pytest.approx([float(r[key]) for r in rows[0]], rel=1e-4)
    if softmax:
        return
    # A padded run resumed with packed batches goes on with the same steps, and says so in run.json.
    part = str(tmp_path / "part")
    assert main(["train", "--out", part, "--batching", "padded", "--epochs", "1", *recipe]) == 0
    assert main(["train", "--out", part, "--resume", "--epochs", "2", "--batching", "packed"]) == 0
    c = load_run(part)
    assert c.record.hyperparameters["batching"] == "packed"
    for name in a.weights:
        np.testing.assert_allclose(c.weights[name], a.weights[name], rtol=1e-3, atol=1e-4)
    capsys.readouterr()
    assert main(["train", "--out", part, "--resume", "--epochs", "3", "--batching", "length"]) == 2
    assert "may only swap padded and packed" in capsys.readouterr().err


def test_a_packed_epoch_holds_the_padded_epochs_batches_in_their_order(default_corpus):
    import dataclasses

    from keyboard_lm.text.vocabulary import Vocabulary
    from keyboard_lm.training.centralized import _training_data
    from keyboard_lm.training.config import default_config

    fit_ids = default_corpus.client_ids[:80]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(fit_ids), 300)
    epochs = {}
    for batching in ("padded", "packed"):
        config = dataclasses.replace(default_config(), ngram_teacher=0.0, batch_size=16, batching=batching)
        data, _ = _training_data(default_corpus, fit_ids, vocab, config, config.teacher(), print)
        epochs[batching] = list(data(3).as_numpy_iterator())
    assert len(epochs["padded"]) == len(epochs["packed"]) > 5
    positions = 0
    for (x, y), ((inputs, resets), targets) in zip(epochs["padded"], epochs["packed"]):
        starts = list(zip(*np.nonzero(resets)))
        unpacked = []
        for r, s in starts:  # each example runs from its reset to the next one or the row's pads
            end = next((c for c in range(s + 1, inputs.shape[1]) if resets[r, c] or inputs[r, c] == 0),
                       inputs.shape[1])
            unpacked.append((tuple(inputs[r, s:end]), tuple(targets[r, s:end])))
        padded = [(tuple(a[a != 0]), tuple(b[a != 0])) for a, b in zip(x, y)]
        assert sorted(unpacked) == sorted(padded)
        positions += inputs.size
    assert positions < 0.8 * sum(x.size for x, _ in epochs["padded"])

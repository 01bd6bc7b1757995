"""Length-grouped batches (data.length_batches): every example once, few pads, the same loss as padded batches."""

import json
import os

import numpy as np
import pytest

from keyboard_lm.data.examples import sentence_examples
from keyboard_lm.data.length_batches import example_lengths, length_batches, padded_share, trimmed


def _lengths(n=5000, seed=0):
    """Lengths shaped like a corpus's: many short sentences, a tail of long ones cut into full chunks."""
    rng = np.random.RandomState(seed)
    return np.minimum(rng.geometric(0.09, size=n) + 1, 20)


def test_every_example_is_in_one_batch_and_the_order_is_the_seeds():
    lengths = _lengths()
    batches = length_batches(lengths, 64, seed=3)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    again = length_batches(lengths, 64, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again)) and len(batches) == len(again)
    other = length_batches(lengths, 64, seed=4)
    assert [b.tolist() for b in other] != [b.tolist() for b in batches]


def test_batches_hold_about_a_padded_batchs_real_targets_with_few_pads():
    lengths = _lengths()
    batches = length_batches(lengths, 64, seed=0)
    budget = 64 * lengths.mean()
    tokens = np.array([lengths[b].sum() for b in batches])
    # about as many steps as padded batches of 64 examples, each near the budget (a window's last may be short)
    assert abs(len(batches) - len(lengths) / 64) <= len(lengths) / (64 * 64) + 2
    assert np.median(tokens) == pytest.approx(budget, rel=0.05)
    assert tokens.max() <= budget + 20
    assert padded_share(lengths, 20) > 0.35
    assert padded_share(lengths, 20, batches) < 0.05
    # short examples share big batches, long ones small batches
    sizes = {int(lengths[b].max()): len(b) for b in batches}
    assert sizes[min(sizes)] > sizes[max(sizes)]


def test_lengths_and_trimming_cut_only_pads():
    pairs = [sentence_examples(list(range(5, 5 + n)), 20) for n in (3, 19, 45)]
    x = np.array([p[0] for ex in pairs for p in ex], np.int32)
    y = np.array([p[1] for ex in pairs for p in ex], np.int32)
    lengths = example_lengths(x)
    assert lengths.tolist() == [4, 20, 20, 20, 6]  # 3 words + EOS; 19 + EOS; 45 + EOS in chunks of 20
    assert (np.count_nonzero(y, axis=1) == lengths).all()
    (bx, by), = trimmed(x, y, lengths, [np.array([0, 4])])
    assert bx.shape == by.shape == (2, 6)
    assert np.count_nonzero(by) == np.count_nonzero(y[[0, 4]])


def test_empty_and_bad_arguments():
    assert length_batches(np.zeros(0, np.int64), 8, seed=0) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_batches(np.array([3, 4]), 0, seed=0)


def test_a_trimmed_batch_has_the_padded_batchs_loss_and_gradients():
    """Pads only trail, so cutting them changes no real position's inputs or state: same loss, same gradients."""
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model
    from keyboard_lm.models.metrics import loss_fn

    rng = np.random.RandomState(0)
    pairs = [p for n in (2, 4, 7) for p in sentence_examples(rng.randint(4, 50, size=n).tolist(), 20)]
    x = np.array([p[0] for p in pairs], np.int32)
    y = np.array([p[1] for p in pairs], np.int32)
    tf.keras.utils.set_random_seed(0)
    model = build_model(ModelConfig("cifg", 50, 8, 16))
    loss = loss_fn()

    def loss_and_grads(bx, by):
        with tf.GradientTape() as tape:
            value = loss(by, model(bx))
        return float(value), tape.gradient(value, model.trainable_variables)

    (bx, by), = trimmed(x, y, example_lengths(x), [np.arange(len(x))])
    assert bx.shape[1] == 8
    full, cut = loss_and_grads(x, y), loss_and_grads(bx, by)
    assert cut[0] == pytest.approx(full[0], rel=1e-5)
    for a, b in zip(full[1], cut[1]):
        np.testing.assert_allclose(tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy(),
                                   rtol=1e-4, atol=1e-6)


def _corpus(root):
    rng = np.random.RandomState(0)
    words = "the a my your we they see hold call send read keep make find good new old long".split()
    path = os.path.join(root, "users.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for u in range(40):
            for _ in range(6):
                n = int(rng.randint(2, 30))
                f.write(json.dumps({"user": f"user{u}", "text": " ".join(rng.choice(words, size=n))}) + "\n")
    return ["--data", path, "--format", "jsonl"]


SMALL = ["--centralized", "--units", "16", "--embedding-dim", "8", "--vocab-size", "100", "--ngram-teacher", "0",
         "--dropout", "0", "--weight-drop", "0"]


def test_train_records_its_batching_and_a_run_from_before_it_resumes_padded(tmp_path):
    from keyboard_lm.cli import main
    from keyboard_lm.models.run_dir import load_run

    data = _corpus(str(tmp_path))
    out = str(tmp_path / "run")
    assert main(["train", *data, *SMALL, "--epochs", "1", "--batching", "length", "--out", out]) == 0
    assert load_run(out).info["hyperparameters"]["batching"] == "length"
    # a run written before the field existed trained on padded batches, and goes on with them
    path = os.path.join(out, "run.json")
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    del info["hyperparameters"]["batching"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f)
    assert main(["train", "--out", out, "--resume", "--epochs", "2"]) == 0
    assert load_run(out).info["hyperparameters"]["batching"] == "padded"


def test_padded_is_the_default_and_a_bad_value_is_refused(tmp_path, capsys):
    from keyboard_lm.cli import main
    from keyboard_lm.models.run_dir import load_run

    data = _corpus(str(tmp_path))
    out = str(tmp_path / "padded")
    assert main(["train", *data, *SMALL, "--epochs", "1", "--out", out]) == 0
    assert load_run(out).info["hyperparameters"]["batching"] == "padded"  # the default
    with pytest.raises(SystemExit) as e:
        main(["train", *data, *SMALL, "--batching", "sorted", "--out", str(tmp_path / "x")])
    assert e.value.code == 2
    assert "--batching" in capsys.readouterr().err

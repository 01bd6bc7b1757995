"""Warm start (`train --init-from`): weights carried over, recorded, and refused when they do not fit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import Run, load_run
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.warm_start import EMBEDDING, WarmStart, load_warm_start
from keyboard_lm.text.vocabulary import Vocabulary
from keyboard_lm.training.config import FINE_TUNE, CentralizedConfig
from tests.conftest import SMALL_RUN_RECIPE


def _vocab(words):
    return Vocabulary.build({w: 100 - i for i, w in enumerate(words)}, len(words) + 4)


def _base(words, d=3):
    vocab = _vocab(words)
    rng = np.random.default_rng(0)
    weights = {EMBEDDING: rng.normal(size=(len(vocab), d)).astype(np.float32),
               "rnn/cell/kernel:0": rng.normal(size=(2 * d, 3 * 5)).astype(np.float32)}
    return Run("base-dir", ModelConfig("cifg", len(vocab), d, 5), vocab, weights, {})


def test_target_vocabulary_copies_shared_rows_and_starts_new_words_as_rare_ones():
    base = _base(["the", "a", "cat", "dog", "zebra"])
    ws = WarmStart(base, "base-dir", "0" * 64, "target")
    target = _vocab(["the", "dog", "newt", "quokka"])
    w = ws.initial_weights(target, seed=3)
    table, old = w[EMBEDDING], base.weights[EMBEDDING]
    assert table.shape == (len(target), 3)
    for word in ("the", "dog"):
        np.testing.assert_array_equal(table[target.id_of(word)], old[base.vocab.id_of(word)])
    for i in range(4):  # special tokens are shared by every vocabulary
        np.testing.assert_array_equal(table[i], old[i])
    # The other weights are the base's, unchanged.
    np.testing.assert_array_equal(w["rnn/cell/kernel:0"], base.weights["rnn/cell/kernel:0"])
    new = table[[target.id_of("newt"), target.id_of("quokka")]]
    assert not np.array_equal(new[0], new[1])  # noise tells new words apart
    rec = ws.record(target)
    assert (rec["shared_words"], rec["new_words"], rec["vocab"]) == (6, 2, "target")


def test_base_vocabulary_keeps_every_weight_and_the_base_vocabulary():
    base = _base(["the", "a", "cat"])
    ws = WarmStart(base, "base-dir", "0" * 64, "base")
    assert ws.vocabulary(_vocab(["other", "words"])) is base.vocab
    w = ws.initial_weights(base.vocab)
    for k in base.weights:
        np.testing.assert_array_equal(w[k], base.weights[k])


def test_a_base_wider_than_the_run_gives_its_head_or_every_row_a_target_needs():
    # A base pretrained with a vocabulary wider than the shipped model's (most frequent first).
    wide = ["the", "a", "cat", "dog", "zebra", "newt", "quokka", "yak"]
    base = _base(wide)
    keep = WarmStart(base, "base-dir", "0" * 64, "base")
    head = keep.vocabulary(_vocab(["other", "words"]), size=7)  # the run's --vocab-size: 4 specials + 3 words
    assert head.tokens == base.vocab.tokens[:7]
    w = keep.initial_weights(head)
    np.testing.assert_array_equal(w[EMBEDDING], base.weights[EMBEDDING][:7])  # the head's rows, as trained
    assert keep.vocabulary(_vocab(["x"]), size=100) is base.vocab  # no wider than the base
    # target: words far down the base's list ("quokka", "yak") start trained rather than as rare ones
    target = _vocab(["the", "quokka", "yak", "unseen"])
    w = WarmStart(base, "base-dir", "0" * 64, "target").initial_weights(target, seed=0)
    for word in ("quokka", "yak"):
        np.testing.assert_array_equal(w[EMBEDDING][target.id_of(word)], base.weights[EMBEDDING][base.vocab.id_of(word)])


def test_unknown_vocabulary_mode_and_another_model_are_refused():
    base = _base(["the"])
    with pytest.raises(ConfigError, match="--init-vocab"):
        WarmStart(base, "b", "0" * 64, "mixed")
    with pytest.raises(ConfigError, match=r"run.json: --init-from holds a cifg with D=3, H=5"):
        WarmStart(base, "b", "0" * 64).check_model("cifg", 3, 7)


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _train(argv):
    from keyboard_lm.cli import main

    return main(argv)


def _recipe(**changes):
    """SMALL_RUN_RECIPE (the fixture's own split, vocabulary size and model) with some flags changed."""
    out = list(SMALL_RUN_RECIPE)
    for flag, value in changes.items():
        i = out.index(flag)
        out[i + 1] = value
    return out


def test_centralized_warm_start_begins_where_the_base_ended(small_run, tmp_path):
    """One epoch from the base (same corpus, split and vocabulary) is far better than the base's own first
    epoch from random weights (its metrics.csv), and quantization-aware training starts from it too."""
    import csv

    one_epoch = _recipe(**{"--epochs": "1"})
    # The model flags come from the base; dropout and weight drop left out take the fine-tuning recipe.
    left_out = ("--units", "--embedding-dim", "--dropout", "--weight-drop")
    warm = [a for i, a in enumerate(one_epoch) if a not in left_out and one_epoch[i - 1] not in left_out]
    assert _train(["train", "--centralized", "--out", str(tmp_path / "warm"), "--init-from", small_run,
                   "--quantization-aware", *warm]) == 0
    warm_run, base = load_run(str(tmp_path / "warm")), load_run(small_run)
    init = warm_run.info["init_from"]
    assert init["weights_sha256"] == _sha(os.path.join(small_run, "weights.npz"))
    assert (init["vocab"], init["new_words"], init["shared_words"]) == ("target", 0, len(base.vocab))
    assert warm_run.model_config.quantization == "dynamic-range"
    hp = warm_run.info["hyperparameters"]
    assert (hp["epochs"], hp["dropout"], hp["weight_drop"]) == (1, FINE_TUNE["dropout"], FINE_TUNE["weight_drop"])
    assert (hp["dropout"], hp["weight_drop"]) != (CentralizedConfig().dropout, CentralizedConfig().weight_drop)
    assert base.info["init_from"] is None
    with open(os.path.join(small_run, "metrics.csv"), encoding="utf-8") as f:
        scratch_first_epoch = float(next(csv.DictReader(f))["loss"])
    assert warm_run.info["final_metrics"]["loss"] < 0.9 * scratch_first_epoch
    assert warm_run.info["final_metrics"]["loss"] < 1.05 * base.info["final_metrics"]["loss"]


@pytest.mark.parametrize("dp", [False, True], ids=["fedavg", "dp-ftrl"])
def test_federated_warm_start_sends_the_base_in_round_one(small_run, tmp_path, dp):
    """A federated (and a DP-FTRL) run's first server model is the base's: after one round at a tiny client
    rate the held-out loss is the base's, not the ~log(V) of random weights."""
    out = tmp_path / "fed"
    argv = ["train", "--out", str(out), "--init-from", small_run, *([] if dp else ["--init-vocab", "base"]),
            "--split-seed", "1", "--rounds", "1", "--clients-per-round", "3", "--client-lr", "1e-6",
            "--seq-len", "20", "--max-batches", "2", "--dropout", "0"]
    # FedAvgM, not the from-base default FedAdam: Adam's first step moves every weight by about its rate
    # whatever the update's size, so only an averaging server leaves the base as it is after a tiny round
    argv += (["--dp", "ftrl", "--dp-noise-multiplier", "1e-6", "--dp-clip", "1.0"] if dp
             else ["--validation-fraction", "0", "--weight-average", "0", "--server-optimizer", "nesterov"])
    assert _train(argv) == 0
    run, base = load_run(str(out)), load_run(small_run)
    # under DP the base's public vocabulary is the default: one built on the clients' text has no noise
    assert run.info["init_from"]["vocab"] == "base" and run.vocab.tokens == base.vocab.tokens
    if dp:
        from keyboard_lm.federated.dp_run import PUBLIC_VOCABULARY

        assert run.info["differential_privacy"]["vocabulary"] == PUBLIC_VOCABULARY
    assert run.info["final_metrics"]["loss"] == pytest.approx(base.info["final_metrics"]["loss"], rel=0.02)
    assert run.info["final_metrics"]["loss"] < 0.8 * np.log(len(base.vocab))


def _refused(argv, capsys, tmp_path):
    from keyboard_lm.cli import main

    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1, err
    assert not (tmp_path / "out").exists()  # nothing written
    return err[0]


def test_another_model_size_is_one_line_naming_the_base(small_run, tmp_path, capsys):
    line = _refused(["train", "--centralized", "--out", str(tmp_path / "out"), "--init-from", small_run,
                     "--units", "64"], capsys, tmp_path)
    assert os.path.join(small_run, "run.json") in line and "H=48" in line and "H=64" in line


def test_a_damaged_base_is_one_line_naming_the_file(small_run, tmp_path, capsys):
    bad = tmp_path / "bad"
    shutil.copytree(small_run, bad)
    with open(bad / "weights.npz", "r+b") as f:
        f.truncate(100)
    line = _refused(["train", "--centralized", "--out", str(tmp_path / "out"), "--init-from", str(bad)],
                    capsys, tmp_path)
    assert str(bad / "weights.npz") in line and "corrupt" in line


def test_a_base_whose_weights_differ_from_its_record_is_damaged(small_run, tmp_path):
    copy = tmp_path / "base"
    shutil.copytree(small_run, copy)
    doc = json.loads((copy / "run.json").read_text())
    doc["weights_sha256"] = "0" * 64
    (copy / "run.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"weights.npz: damaged"):
        load_warm_start(str(copy))


def test_a_missing_shipped_base_says_so(monkeypatch, tmp_path):
    import keyboard_lm.models.warm_start as ws

    monkeypatch.setattr(ws, "base_model_dir", lambda: str(tmp_path / "base"))
    with pytest.raises(ConfigError, match="shipped base model is missing"):
        load_warm_start("base")


def test_init_flags_are_checked_before_data_is_read(tmp_path, capsys):
    assert "--init-vocab needs --init-from" in _refused(
        ["train", "--out", str(tmp_path / "out"), "--init-vocab", "base"], capsys, tmp_path)
    assert "no such directory" in _refused(
        ["train", "--out", str(tmp_path / "out"), "--init-from", str(tmp_path / "nowhere")], capsys, tmp_path)


def test_start_weights_rebuild_the_start_or_say_why_not(tmp_path):
    from keyboard_lm.models.run_dir import WEIGHTS_FILE, save_run, sha256_file
    from keyboard_lm.models.warm_start import start_weights

    base = _base(["the", "a", "cat", "dog", "zebra"])
    path = str(tmp_path / "base")
    save_run(path, base.model_config, base.vocab, base.weights, {"trainer": "test"})
    target = _vocab(["the", "dog", "newt"])
    record = {**WarmStart(base, path, sha256_file(os.path.join(path, WEIGHTS_FILE)), "target").record(target),
              "path": path}

    def run(info):
        return Run("run-dir", ModelConfig("cifg", len(target), 3, 5), target, {}, info)

    weights, why = start_weights(run({"init_from": record, "federated": {"seed": 3}}))
    assert why == "" and weights is not None
    expected = load_warm_start(path, "target").initial_weights(target, 3)
    for k in expected:
        np.testing.assert_array_equal(weights[k], expected[k])  # the run's seed draws the new words' rows
    assert not np.array_equal(start_weights(run({"init_from": record, "federated": {"seed": 4}}))[0][EMBEDDING],
                              weights[EMBEDDING])
    assert start_weights(run({})) == (None, "the run started from random weights")
    assert start_weights(run({"init_from": record}))[1] == "run.json records no federated seed"
    gone = {**record, "path": str(tmp_path / "gone")}
    assert "is not found" in start_weights(run({"init_from": gone, "federated": {"seed": 3}}))[1]
    other = {**record, "weights_sha256": "0" * 64}
    assert "sha256 differs" in start_weights(run({"init_from": other, "federated": {"seed": 3}}))[1]

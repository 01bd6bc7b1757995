"""The training recipes (defaults recorded, best epoch kept, dropout, IID re-partition)."""

from __future__ import annotations

import collections
import csv
import dataclasses
import json
import os

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.data.partition import apply_partition, repartition_iid
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import build_loaded_model, load_run
from keyboard_lm.training.config import CentralizedConfig

TINY = ["--units", "16", "--embedding-dim", "8", "--vocab-size", "300"]
#: For centralized runs whose test checks what the trainer records and keeps, not what the default recipe
#: learns: 64 examples a step instead of the recipe's 8 makes an epoch of the embedded corpus four times cheaper.
QUICK = ["--batch-size", "64"]
# Centralized runs that test something else leave out the n-gram teacher (test_ngram_teacher.py covers it).


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_cli_defaults_and_help_are_read_from_the_config_dataclasses(capsys):
    """The recipe lives once, in the library's config dataclasses; `train`'s parser and help read it there."""
    from keyboard_lm.cli import build_parser
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.cli.train import federated_config_from_args
    from keyboard_lm.federated.config import FederatedConfig, LoopConfig, default_federated
    from keyboard_lm.training.config import CentralizedConfig, default_config

    from keyboard_lm.cli.flags import given
    from keyboard_lm.cli.train_flags import TRAIN_FLAGS

    args = build_parser().parse_args(["train", "--out", "x"])
    fed, client, loop, cen = FederatedConfig(), ClientDataConfig(), LoopConfig(), CentralizedConfig()
    # Flags whose default differs between centralized and federated runs, or between a run from random weights
    # and one from a base, and the federated-only flags (a --centralized run refuses them when given), stay
    # unset; the config fills them in.
    assert all(getattr(args, f) is None
               for f in ("epochs", "lr", "dropout", "batch_size", "rounds", "patience", "client_lr", "client_clipnorm",
                         "algorithm", "server_optimizer", "server_lr", "server_momentum", "clients_per_round",
                         "fedatt_p", "fedatt_eps", "clip", "local_epochs", "max_batches", "eval_every",
                         "checkpoint_every"))
    assert ClientDataConfig(**given(args, TRAIN_FLAGS, ClientDataConfig)) == client
    assert LoopConfig(**given(args, TRAIN_FLAGS, LoopConfig)) == loop
    fed_ft = default_federated(warm_start=True)
    assert federated_config_from_args(args, init=None) == fed
    assert federated_config_from_args(args, init=object()) == fed_ft
    given = build_parser().parse_args(["train", "--out", "x", "--client-lr", "0.3", "--client-clipnorm", "0",
                                       "--server-optimizer", "sgd", "--rounds", "7"])
    for init in (None, object()):
        mine = federated_config_from_args(given, init=init)
        assert (mine.client_lr, mine.client_clipnorm, mine.server_optimizer, mine.rounds) == (0.3, None, "sgd", 7)
    # DP keeps the mechanism's own server step; an optimizer given alone brings its own rate
    dp = build_parser().parse_args(["train", "--out", "x", "--dp", "ftrl", "--dp-clip", "1"])
    dp_ft = federated_config_from_args(dp, init=object())
    assert (dp_ft.server_optimizer, dp_ft.server_lr, dp_ft.client_clipnorm) == (fed.server_optimizer, fed.server_lr,
                                                                              fed_ft.client_clipnorm)
    nesterov = build_parser().parse_args(["train", "--out", "x", "--server-optimizer", "nesterov"])
    assert federated_config_from_args(nesterov, init=object()).server_lr == 1.0
    adam = build_parser().parse_args(["train", "--out", "x", "--server-optimizer", "adam", "--server-lr", "0.05"])
    assert federated_config_from_args(adam, init=None).server_lr == 0.05
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    ft = default_config(warm_start=True)  # a run with --init-from fine-tunes
    assert f"most passes over the pooled data ({cen.epochs}; {ft.epochs} from a base)" in text
    assert f"centralized {cen.batch_size}, federated client batch {client.batch_size}" in text
    assert f"centralized {cen.dropout}, {ft.dropout} from a base; federated {fed.dropout}" in text
    # every field the recipe from a base changes says so in --help, with both values
    def show(v):
        return "off" if v is None else f"{v:g}" if isinstance(v, float) else str(v)

    changed = [n for n, v in dataclasses.asdict(fed_ft).items() if v != getattr(fed, n)]
    assert {"client_lr", "client_clipnorm", "server_optimizer", "server_lr"} <= set(changed)
    for name in changed:
        assert f"{show(getattr(fed, name))}; {show(getattr(fed_ft, name))} from a base" in text, name
    assert f"client SGD learning rate ({fed.client_lr:g}; {fed_ft.client_lr:g} from a base)" in text


def test_dropout_adds_no_weights():
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model

    config = ModelConfig("cifg", 50, 8, 16)
    plain, dropped = build_model(config), build_model(config, dropout=0.3)
    assert [w.name for w in plain.weights] == [w.name for w in dropped.weights]
    x = np.array([[1, 2, 3, 4]], np.int32)
    dropped.set_weights(plain.get_weights())
    # Inference is deterministic and identical; training mode drops.
    np.testing.assert_allclose(plain(x).numpy(), dropped(x, training=False).numpy(), rtol=1e-6)
    assert not np.allclose(dropped(x, training=False).numpy(), dropped(x, training=True).numpy())
    with pytest.raises(ConfigError, match="dropout"):
        build_model(config, dropout=1.0)


def test_weight_drop_masks_recurrent_weights_in_training_only():
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model

    config = ModelConfig("cifg", 50, 8, 16)
    tf.keras.utils.set_random_seed(0)
    plain, dropped = build_model(config), build_model(config, weight_drop=0.5)
    assert [w.name for w in plain.weights] == [w.name for w in dropped.weights]
    dropped.set_weights(plain.get_weights())
    x = np.array([[1, 2, 3, 4, 5]], np.int32)
    np.testing.assert_allclose(plain(x).numpy(), dropped(x, training=False).numpy(), rtol=1e-6)
    trained = dropped(x, training=True).numpy()
    # The first step starts from a zero state, so only later steps see the recurrent weights.
    np.testing.assert_allclose(trained[:, 0], plain(x).numpy()[:, 0], rtol=1e-6)
    assert not np.allclose(trained[:, 1:], plain(x).numpy()[:, 1:])
    # Keras' fit applies it: one step from the same start moves the weights differently.
    for m in (plain, dropped):
        m.compile(optimizer=tf.keras.optimizers.SGD(1.0),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(x, x, epochs=1, verbose=0)
    assert not np.allclose(plain.get_weights()[1], dropped.get_weights()[1])
    with pytest.raises(ConfigError, match="weight_drop"):
        build_model(ModelConfig("gru", 50, 8, 16), weight_drop=0.3)
    with pytest.raises(ConfigError, match="weight_drop"):
        build_model(config, weight_drop=1.0)


def test_weight_average_is_the_ramped_moving_average_and_restores_training_weights():
    import tensorflow as tf

    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.language_model import build_model
    from keyboard_lm.training.centralized import WeightAverage

    tf.keras.utils.set_random_seed(1)
    model = build_model(ModelConfig("cifg", 30, 4, 8))
    model.compile(optimizer=tf.keras.optimizers.SGD(0.5),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    average = WeightAverage(model, 0.9)
    seen = []
    record = tf.keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: seen.append([v.numpy() for v in model.trainable_variables]))
    x = np.random.default_rng(0).integers(0, 30, (8, 6)).astype(np.int32)
    expected = [v.numpy() for v in model.trainable_variables]
    model.fit(x, x, batch_size=2, epochs=1, verbose=0, shuffle=False, callbacks=[record])
    assert len(seen) == 4
    for t, weights in enumerate(seen, start=1):
        d = min(0.9, (1 + t) / (10 + t))
        expected = [d * e + (1 - d) * w for e, w in zip(expected, weights)]
    last = [v.numpy() for v in model.trainable_variables]
    with average.averaged():
        for v, e in zip(model.trainable_variables, expected):
            np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-6)
    for v, w in zip(model.trainable_variables, last):
        np.testing.assert_array_equal(v.numpy(), w)


def test_centralized_run_with_weight_average_keeps_the_averaged_weights(tmp_path):
    out = str(tmp_path / "run")
    assert main(["train", "--centralized", "--out", out, *TINY, *QUICK, "--ngram-teacher", "0", "--epochs", "2",
                 "--weight-average", "0.99", "--weight-drop", "0.3"]) == 0
    run = load_run(out)
    assert run.info["hyperparameters"]["weight_average"] == 0.99
    assert run.info["hyperparameters"]["weight_drop"] == 0.3
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.evaluation import evaluate_model

    corpus = load_default()
    _, heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    # The held-out figure recorded for the kept epoch is what the saved (averaged) weights score.
    result = evaluate_model(build_loaded_model(run), corpus, heldout, run.vocab, 20)["pooled"]
    assert result["recall_at_3"] == pytest.approx(run.info["final_metrics"]["recall_at_3"], abs=1e-9)
    assert result["loss"] == pytest.approx(run.info["final_metrics"]["loss"], rel=1e-5)


def test_default_centralized_recipe_is_recorded_and_keeps_the_best_epoch(tmp_path):
    out = str(tmp_path / "run")
    assert main(["train", "--centralized", "--out", out, *TINY, "--epochs", "4", "--patience", "4"]) == 0
    run = load_run(out)
    hp = run.info["hyperparameters"]
    given = ("epochs", "patience")
    defaults = {k: v for k, v in dataclasses.asdict(CentralizedConfig()).items() if k not in given}
    assert {k: hp[k] for k in defaults} == defaults
    rows = _rows(out)
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3, 4]
    best = max(rows, key=lambda r: (float(r["val_recall_at_3"]), -float(r["val_loss"])))
    assert run.info["best_epoch"] == int(best["epoch"]) == int(rows[-1]["best_epoch"])
    assert run.info["epochs_done"] == 4
    assert run.info["data"]["validation_clients"] >= 1
    # The kept weights are the best epoch's: re-scoring the validation clients gives its figure.
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.evaluation import evaluate_model

    corpus = load_default()
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    _, val_ids = validation_clients(train_ids, hp["validation_fraction"], run.info["data"]["split"]["seed"])
    val = evaluate_model(build_loaded_model(run), corpus, val_ids, run.vocab, 20)["pooled"]
    assert val["recall_at_3"] == pytest.approx(float(best["val_recall_at_3"]), abs=1e-9)
    # Held-out figures in run.json are the kept epoch's, not the last.
    assert run.info["final_metrics"]["recall_at_3"] == pytest.approx(float(best["recall_at_3"]))


def test_centralized_stops_early_and_decays_the_learning_rate(tmp_path):
    out = str(tmp_path / "run")
    # lr 0.3 with Adam overshoots on a tiny model: validation stops improving quickly.
    assert main(["train", "--centralized", "--out", out, *TINY, *QUICK, "--ngram-teacher", "0", "--epochs", "12",
                 "--lr", "0.3", "--patience", "1", "--lr-decay", "0.5"]) == 0
    rows = _rows(out)
    assert len(rows) < 12, "no early stop although validation recall stopped improving"
    lrs = [float(r["learning_rate"]) for r in rows]
    assert lrs[0] == 0.3 and all(b in (a, a * 0.5) for a, b in zip(lrs, lrs[1:]))
    # run.json says validation ended it, so the run counts as done; --resume says there is nothing to do
    assert load_run(out).info["stopped_early"] is True
    assert main(["train", "--out", out, "--resume", "--epochs", "20"]) == 2


def test_validation_fraction_zero_keeps_the_last_epoch(tmp_path):
    out = str(tmp_path / "run")
    assert main(["train", "--centralized", "--out", out, *TINY, *QUICK, "--ngram-teacher", "0", "--epochs", "2",
                 "--validation-fraction", "0"]) == 0
    run = load_run(out)
    assert run.info["best_epoch"] == 2 and run.info["data"]["validation_clients"] == 0


@pytest.mark.parametrize("argv, expected", [
    (["--dropout", "1.5"], "dropout must be in [0, 1)"),
    (["--weight-decay", "0.1"], "weight_decay needs --optimizer adamw"),
    (["--validation-fraction", "1"], "validation_fraction must be in [0, 1)"),
    (["--lr", "-1"], "--lr: must be > 0"),
    (["--lr-decay", "2"], "lr_decay must be in (0, 1]"),
    (["--weight-drop", "1"], "weight_drop must be in [0, 1)"),
    (["--weight-average", "1"], "weight_average must be in [0, 1)"),
])
def test_bad_recipe_values_are_refused(tmp_path, capsys, argv, expected):
    try:
        code = main(["train", "--centralized", "--out", str(tmp_path / "r"), *TINY, *argv])
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "r" / "weights.npz")


@pytest.mark.parametrize("flag", [["--epochs", "3"], ["--weight-drop", "0.5"], ["--patience", "1"],
                                  ["--optimizer", "sgd"]])
def test_federated_train_refuses_centralized_flags(tmp_path, capsys, flag):
    code = main(["train", "--out", str(tmp_path / "r"), *TINY, "--rounds", "1", *flag])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{flag[0]}: centralized training only" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "r")


def test_iid_repartition_is_deterministic_complete_and_balanced(default_corpus):
    a = repartition_iid(default_corpus, 40, seed=3)
    b = repartition_iid(default_corpus, 40, seed=3)
    c = repartition_iid(default_corpus, 40, seed=4)
    assert a.clients == b.clients and a.clients != c.clients
    assert len(a.client_ids) == 40
    # Every record is dealt exactly once: nothing lost, nothing duplicated.
    original = collections.Counter(t for cid in default_corpus.client_ids for t in default_corpus.clients[cid])
    dealt = collections.Counter(t for cid in a.client_ids for t in a.clients[cid])
    assert dealt == original
    sizes = [len(v) for v in a.clients.values()]
    assert max(sizes) - min(sizes) <= 1
    assert a.fingerprint() != default_corpus.fingerprint() != c.fingerprint()


def test_iid_heldout_clients_share_no_record_with_training_clients(default_corpus):
    corpus = repartition_iid(default_corpus, 30, seed=0)
    train_ids, heldout_ids = split_clients(corpus.client_ids, SplitConfig(0.1, 0))
    assert set(train_ids).isdisjoint(heldout_ids) and len(heldout_ids) == 3
    # Records dealt by position: count positions, so repeated strings ("yes") do not confuse the check.
    train_n = sum(len(corpus.clients[c]) for c in train_ids)
    held_n = sum(len(corpus.clients[c]) for c in heldout_ids)
    assert train_n + held_n == default_corpus.num_records


def test_partition_flags_are_checked():
    from keyboard_lm.data.corpora import load_default

    corpus = load_default()
    with pytest.raises(ConfigError, match="--partition iid needs --num-clients"):
        apply_partition(corpus, "iid")
    with pytest.raises(ConfigError, match="--num-clients applies to --partition iid only"):
        apply_partition(corpus, "natural", 10)
    with pytest.raises(ConfigError, match="exceeds the"):
        apply_partition(corpus, "iid", corpus.num_records + 1)


def test_iid_run_records_its_partition_and_eval_reloads_it(tmp_path, capsys):
    out = str(tmp_path / "iid")
    assert main(["train", "--centralized", "--out", out, *TINY, *QUICK, "--ngram-teacher", "0", "--epochs", "1",
                 "--partition", "iid", "--num-clients", "40", "--split-seed", "2"]) == 0
    source = load_run(out).info["data"]["source"]
    assert source["partition"] == "iid" and source["num_clients"] == 40 and source["partition_seed"] == 2
    capsys.readouterr()
    assert main(["eval", out, "--json"]) == 0  # reloads the same IID clients: the fingerprint matches
    result = json.loads(capsys.readouterr().out)
    assert all(cid.startswith("iid-") for cid in result["clients"])


def test_default_federated_train_smoke(tmp_path):
    """Two rounds of `keyboard-lm train` with its default recipe (small model) on the embedded corpus."""
    from keyboard_lm.federated.config import FederatedConfig

    out = str(tmp_path / "fed")
    assert main(["train", "--out", out, *TINY, "--rounds", "2", "--max-batches", "2"]) == 0
    run = load_run(out)
    defaults = dataclasses.asdict(FederatedConfig())
    assert run.info["federated"] == {**defaults, "rounds": 2}
    rows = _rows(out)
    assert [int(r["round"]) for r in rows] == [1, 2]
    assert int(rows[-1]["examples_seen"]) == sum(int(r["examples"]) for r in rows) > 0
    assert float(rows[-1]["recall_at_3"]) > 0
    # The default learns the phrase table after training, and export ships it inside the budget.
    assert run.info["phrases"]["learn"] is True and run.info["phrases"]["k_anonymity"] == 5
    assert run.info["phrases"]["gate_clients"] == "validation"  # the run's own validation clients
    assert os.path.isfile(os.path.join(out, "phrases.bin")) and os.path.isfile(os.path.join(out, "phrase_gate.json"))


def test_federated_run_keeps_the_best_validation_round_and_decays_the_rate(tmp_path, capsys):
    """Validation clients pick the kept round (weights.npz) and halve the client rate when a round does not gain."""
    out = str(tmp_path / "fed")
    assert main(["train", "--out", out, "--no-phrases", *TINY, "--rounds", "5", "--eval-every", "1", "--clients-per-round", "3",
                 "--max-batches", "2", "--dropout", "0", "--seed", "1"]) == 0
    rows = _rows(out)
    scores = [(float(r["val_recall_at_3"]), -float(r["val_loss"])) for r in rows]
    improved = [i == 0 or s > max(scores[:i]) for i, s in enumerate(scores)]
    # With this seed some round does not gain, so "kept" and "last" differ in kind, not by chance.
    assert not all(improved)
    best = max(range(len(rows)), key=lambda i: (scores[i], -i))  # the first of equal scores
    rates = [0.5]
    for gained in improved[:-1]:
        rates.append(rates[-1] * (1.0 if gained else 0.5))
    assert [float(r["learning_rate"]) for r in rows] == pytest.approx(rates)
    assert [int(r["best_round"]) for r in rows] == [
        max(range(i + 1), key=lambda j: (scores[j], -j)) + 1 for i in range(len(rows))]
    info = load_run(out).info
    assert info["best"]["round"] == best + 1 and info["data"]["validation_clients"] > 0
    assert info["final_metrics"]["recall_at_3"] == pytest.approx(float(rows[best]["recall_at_3"]))
    # weights.npz is the kept round's model: eval scores exactly that round's held-out numbers.
    capsys.readouterr()
    assert main(["eval", out, "--json"]) == 0
    pooled = json.loads(capsys.readouterr().out)["pooled"]
    assert pooled["loss"] == pytest.approx(float(rows[best]["loss"]), rel=1e-5)


def test_validation_clients_never_train(default_corpus, tmp_path):
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated
    from keyboard_lm.federated.config import LoopConfig
    from keyboard_lm.models.config import ModelConfig

    split = SplitConfig()
    train_ids, _ = split_clients(default_corpus.client_ids, split)
    fit_ids, val_ids = validation_clients(train_ids, 0.5, split.seed)
    out = str(tmp_path / "fed")
    train_federated(default_corpus, out, ModelConfig("cifg", 300, 8, 16),
                    # 100 draws from ~1,660 training clients, half of them validation: a sampler that drew from
                    # all of them would pick a validation client with probability 1 - 2^-100.
                    FederatedConfig(rounds=2, clients_per_round=50, validation_fraction=0.5, dropout=0.0),
                    split, RunOptions(vocab_size=300, track_clients=tuple(val_ids + fit_ids), log=lambda *_: None),
                    data_config=ClientDataConfig(max_batches=1), loop=LoopConfig(eval_every=2))
    taken = load_run(out).info["participation"]
    assert all(taken[c] == [] for c in val_ids)
    assert sum(len(taken[c]) for c in fit_ids) == 100


def test_dp_runs_have_no_validation_clients(tmp_path, capsys):
    out = str(tmp_path / "dp")
    args = ["train", "--out", out, *TINY, "--dp", "fedavg", "--dp-clip", "1", "--dp-noise-multiplier", "0.1"]
    assert main([*args, "--validation-fraction", "0.1"]) == 2
    assert "--dp's accounting does not cover" in capsys.readouterr().err
    assert main([*args, "--rounds", "1", "--clients-per-round", "3", "--max-batches", "1"]) == 0
    info = load_run(out).info
    assert info["federated"]["validation_fraction"] == 0 and info["federated"]["lr_decay"] == 1.0
    assert info["data"]["validation_clients"] == 0 and info["best"] is None

"""The aggregator's named parts, failing clients, whole-client sampling and the lazy TFF worker."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keyboard_lm.cli import main
from keyboard_lm.data.preprocessing import batch_examples
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.aggregation import build_aggregator
from keyboard_lm.federated.config import AggregationConfig
from keyboard_lm.federated.runtime import start_runtime
from keyboard_lm.models.run_dir import load_run
from tests.conftest import REPO

tff = start_runtime()

TINY_FED = ["--no-phrases", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--clients-per-round", "3",
            "--max-batches", "2"]
VALUE = tff.to_type([(np.float32, [4])])


def _aggregate(config, updates):
    factory = build_aggregator(config)
    if config.weighted:
        process = factory.create(VALUE, tff.TensorType(np.float32))
        return process.next(process.initialize(), updates, [1.0] * len(updates)).result
    process = factory.create(VALUE)
    return process.next(process.initialize(), updates).result


@pytest.mark.parametrize("mean", ["weighted", "unweighted", "fedatt"])
def test_fixed_clip_bounds_every_algorithms_update(mean):
    updates = [[np.full(4, 5.0, np.float32)], [np.full(4, -0.1, np.float32)]]  # norms 10 and 0.2
    clipped = _aggregate(AggregationConfig(mean=mean, clip=1.0), updates)
    unclipped = _aggregate(AggregationConfig(mean=mean, clip="none"), updates)
    assert np.linalg.norm(clipped[0]) <= 1.0 + 1e-5
    assert np.linalg.norm(unclipped[0]) > 2.0


def test_adaptive_clipping_is_tffs_robust_stack_for_fedatt_too():
    # Adaptive zeroing drops an update far above its estimate (initial 10, x2 + 1).
    updates = [[np.full(4, 1e4, np.float32)], [np.full(4, 0.1, np.float32)]]
    out = _aggregate(AggregationConfig(mean="fedatt", clip="adaptive"), updates)
    assert np.abs(out[0]).max() < 1.0


@pytest.mark.parametrize("kwargs,match", [
    ({"clip": 0}, "positive"), ({"clip": "often"}, "adaptive"), ({"mean": "median"}, "unknown mean"),
    ({"mean": "fedatt", "compression": True}, "not combined with FedAtt"),
    ({"mean": "fedatt", "fedatt_norm": "nuclear"}, "unknown FedAtt norm 'nuclear'"),
])
def test_aggregation_config_rejects_bad_parts(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        AggregationConfig(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    ({"server_noise": 0.001}, "needs an SGD server"),  # the default server is Nesterov
    ({"server_noise": -1.0}, "standard deviation >= 0"),
    ({"client_momentum": 1.0}, r"client_momentum must be in \[0, 1\)"),
    ({"algorithm": "fedsgd", "client_momentum": 0.5}, "FedSGD"),
    ({"server_adam_epsilon": 0.0}, "server_adam_epsilon must be > 0"),
])
def test_federated_config_refuses_ji_options_it_cannot_honour(kwargs, match):
    from keyboard_lm.federated.config import FederatedConfig

    with pytest.raises(ConfigError, match=match):
        FederatedConfig(**kwargs)


def test_fedadams_epsilon_reaches_tffs_adam():
    import tensorflow as tf

    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.process import server_optimizer_for

    spec = [tf.TensorSpec([2], tf.float32)]
    for eps in (1e-7, 1e-8):
        opt = server_optimizer_for(FederatedConfig(server_optimizer="adam", server_lr=0.001, server_adam_epsilon=eps))
        assert float(opt.get_hparams(opt.initialize(spec))["epsilon"]) == pytest.approx(eps)


def test_ji_protocol_options_build_a_process_that_trains(tmp_path):
    """FedAtt with client momentum, the spectral norm and eq. 6 noise, end to end through `train`."""
    import json

    from keyboard_lm.cli import main

    out = tmp_path / "ji"
    assert main(["train", "--algorithm", "fedatt", "--client-momentum", "0.5",
                 "--client-lr", "0.01", "--fedatt-norm", "spectral", "--fedatt-eps", "1.2", "--server-noise",
                 "0.001", "--clip", "none", "--local-epochs", "2", "--rounds", "2", "--eval-every", "2",
                 "--clients-per-round", "3", "--units", "16", "--embedding-dim", "8", "--vocab-size", "200", "--max-batches", "3",
                 "--out", str(out)]) == 0
    config = json.loads((out / "run.json").read_text())["federated"]
    assert (config["client_momentum"], config["fedatt_norm"], config["server_noise"]) == (0.5, "spectral", 0.001)


@pytest.mark.parametrize("clip,algorithm", [("none", "fedavg"), ("2.5", "fedatt"), ("adaptive", "fedsgd")])
def test_clip_is_recorded_and_applies_to_every_algorithm(tmp_path, clip, algorithm):
    out = str(tmp_path / "run")
    assert main(["train", "--out", out, "--rounds", "1", "--algorithm", algorithm, "--clip", clip, *TINY_FED]) == 0
    info = load_run(out).info
    assert info["federated"]["clip"] == (clip if clip in ("none", "adaptive") else float(clip))
    assert info["reproducible"] is (info["federated"]["dropout"] == 0)


def test_compressed_runs_say_they_are_not_bit_reproducible(tmp_path):
    out = str(tmp_path / "run")
    assert main(["train", "--out", out, "--rounds", "1", "--compression", *TINY_FED, "--embedding-dim", "80"]) == 0
    assert load_run(out).info["reproducible"] is False


def test_a_client_whose_dataset_fails_mid_round_is_dropped_and_the_run_goes_on(default_corpus):
    from keyboard_lm.data.preprocessing import encode_clients
    from keyboard_lm.federated.process import build_process
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.rounds import round_datasets
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.text import Vocabulary

    ids = [c for c in default_corpus.client_ids if len(default_corpus.clients[c]) >= 3][:4]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(ids), 100)
    encoded = encode_clients({c: default_corpus.clients[c] for c in ids}, vocab, 10)

    def dataset_fn(cid):
        x, y = encoded[cid]
        ds = tf.data.Dataset.from_tensor_slices({"x": x, "y": y})
        if cid == ids[1]:  # a client whose storage breaks after its first example
            ds = ds.enumerate().map(lambda i, e: (tf.debugging.assert_less(i, tf.constant(1, tf.int64),
                                                                           message="disk read failed"), e)[1])
        return ds

    examples = tff.simulation.datasets.ClientData.from_clients_and_tf_fn(ids, dataset_fn)
    data_config = ClientDataConfig(max_seq_len=10, max_batches=2)
    spec = (tf.TensorSpec([None, 10], tf.int32),) * 2
    process = build_process(ModelConfig("cifg", len(vocab), 8, 16), FederatedConfig(clients_per_round=4), spec)
    state = process.initialize()
    for round_num in (1, 2):
        messages = []
        datasets, failed = round_datasets(examples, ids, data_config, 0, round_num, messages.append)
        assert failed == 1 and len(datasets) == 3
        assert ids[1] in messages[0] and "disk read failed" in messages[0]
        output = process.next(state, datasets)
        assert np.isfinite(float(output.metrics["client_work"]["train"]["loss"]))
        state = output.state


def test_the_batch_cap_samples_from_the_whole_client():
    # 3,000 examples, 5 batches of 10 per round: over rounds the cap must reach the tail.
    n = 3000
    x = np.arange(n, dtype=np.int32)[:, None]
    ds = tf.data.Dataset.from_tensor_slices((x, x))
    seen = []
    for seed in range(8):
        config = ClientDataConfig(max_seq_len=1, batch_size=10, max_batches=5, seed=seed)
        seen += [int(v) for xb, _ in batch_examples(ds, config) for v in xb.numpy().ravel()]
    assert len(seen) == 8 * 50
    assert max(seen) > 2000 and sum(v >= 1500 for v in seen) > 100


def test_the_worker_starts_with_the_first_computation_and_sigterm_stops_it():
    """Importing the federated layer starts no TFF worker and installs no handler; once TFF's runtime is
    started, the first computation starts a worker; SIGTERM to the process stops that worker too instead of
    orphaning it (one subprocess checks all of it)."""
    code = ("import signal, time\n"
            "from keyboard_lm.federated import dp, process, trainer\n"
            "from keyboard_lm.federated.runtime import start_runtime, workers_running, _child_workers\n"
            "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, 'a handler installed on import'\n"
            "print(workers_running(), flush=True)\n"
            "tff = start_runtime(); tff.federated_computation(lambda: 1)()\n"
            "print(workers_running(), flush=True)\n"
            "print(*_child_workers(), flush=True)\n"
            "time.sleep(120)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, env=env)
    try:
        assert [proc.stdout.readline().strip() for _ in range(2)] == ["0", "1"]
        workers = [int(p) for p in proc.stdout.readline().split()]
        assert len(workers) == 1
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143
        assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]  # a quiet end
    finally:
        proc.kill()
    assert not os.path.exists(f"/proc/{workers[0]}")


@pytest.mark.parametrize("algorithm", ["fedavg", "fedatt"])
def test_trains_process_matches_tffs_own_builder_round_for_round(algorithm):
    """The iterator loop and zero-initialized client models change speed only.

    ``build_process`` composes TFF's parts itself; from the same state, on
    the same batches, its rounds must equal those of TFF's builder with its
    defaults (dataset-reduce loop, client models drawn at random).
    """
    from keyboard_lm.federated.process import build_process, model_fn_for
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.models.config import ModelConfig

    model_config = ModelConfig("cifg", 50, 8, 16)
    spec = (tf.TensorSpec([None, 6], tf.int32),) * 2
    config = FederatedConfig(algorithm=algorithm, server_optimizer="nesterov", clip="none", dropout=0.0)
    ours = build_process(model_config, config, spec, metrics=False)
    model_fn = model_fn_for(model_config, spec, metrics=False)
    client_opt, server_opt = tff.learning.optimizers.build_sgdm(0.5), tff.learning.optimizers.build_sgdm(1.0)
    if algorithm == "fedavg":
        from keyboard_lm.federated.process import server_optimizer_for

        tffs = tff.learning.algorithms.build_weighted_fed_avg(
            model_fn, client_opt, server_optimizer_for(config), model_aggregator=build_aggregator(config.aggregation))
    else:
        tffs = tff.learning.algorithms.build_unweighted_fed_avg(
            model_fn, client_opt, server_opt, model_aggregator=build_aggregator(config.aggregation))
    assert ours.initialize.type_signature == tffs.initialize.type_signature
    rng = np.random.RandomState(0)
    clients = [tf.data.Dataset.from_tensor_slices((rng.randint(0, 50, (n, 6)).astype(np.int32),
                                                   rng.randint(0, 50, (n, 6)).astype(np.int32))).batch(2)
               for n in (3, 5, 8)]
    state_ours = state_tffs = tffs.initialize()
    for _ in range(2):
        out_ours, out_tffs = ours.next(state_ours, clients), tffs.next(state_tffs, clients)
        state_ours, state_tffs = out_ours.state, out_tffs.state
        for a, b in zip(ours.get_model_weights(state_ours).trainable, tffs.get_model_weights(state_tffs).trainable):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    moved = [np.abs(a - b).max() for a, b in zip(tffs.get_model_weights(tffs.initialize()).trainable,
                                                 ours.get_model_weights(state_ours).trainable)]
    assert max(moved) > 1e-3  # the rounds trained


def test_zero_initialized_client_models_do_not_touch_initial_weights():
    from keyboard_lm.federated.process import build_process
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.models.config import ModelConfig

    spec = (tf.TensorSpec([None, 6], tf.int32),) * 2
    weights = build_process(ModelConfig("cifg", 50, 8, 16), FederatedConfig(), spec).initialize().global_model_weights
    assert all(np.abs(w).max() > 0 for w in weights.trainable[:2])  # embedding and cell kernel drawn at random


def test_a_process_built_again_from_the_same_parts_is_reused_and_draws_the_same_weights():
    """Reuse keys on everything traced into the process, the seed too (Keras draws the initial weights while
    tracing, from the global seeds the trainer sets from it), and not on what only the driver reads."""
    import dataclasses

    from keyboard_lm.federated.process import build_process
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.models.config import ModelConfig

    def build(config, reuse=True):
        tf.keras.utils.set_random_seed(config.seed)  # as train_federated does before building
        return build_process(model, config, spec, reuse=reuse)

    def initial(process):
        return process.initialize().global_model_weights.trainable

    spec = (tf.TensorSpec([None, 6], tf.int32),) * 2
    model, config = ModelConfig("cifg", 50, 8, 16), FederatedConfig(seed=5, dropout=0.0)
    process = build(config)
    driver_only = dataclasses.replace(config, rounds=3, clients_per_round=2, validation_fraction=0.0,
                                      lr_decay=1.0, weight_average=0.0)
    assert build(driver_only) is process
    fresh = build(config, reuse=False)
    assert fresh is not process
    for a, b in zip(initial(process), initial(fresh)):
        np.testing.assert_array_equal(a, b)
    other = build(dataclasses.replace(config, seed=6))
    assert other is not process and not np.array_equal(initial(other)[0], initial(process)[0])

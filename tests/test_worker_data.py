"""Client data read by the TFF workers themselves (data locality)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.errors import ConfigError, KeyboardLMError
from keyboard_lm.federated.distributed import worker_data as wd
from keyboard_lm.federated.client_data import client_batches


def _encoded(n_clients=3, seq_len=4):
    rng = np.random.RandomState(0)
    out = {}
    for i in range(n_clients):
        n = 3 + 2 * i
        x = rng.randint(0, 50, size=(n, seq_len)).astype(np.int32)
        out[f"role {i}/ü"] = (x, np.roll(x, -1, axis=1))
    out["silent"] = (np.zeros((0, seq_len), np.int32), np.zeros((0, seq_len), np.int32))
    return out


def test_shards_are_written_once_reused_and_never_mixed(tmp_path):
    d = str(tmp_path / "shards")
    m = wd.write_shards(d, _encoded(), "v1", 4, "fp", log=lambda *_: None)
    assert sorted(m["clients"]) == ["role 0/ü", "role 1/ü", "role 2/ü"]  # no shard for a client without text
    assert m["clients"]["role 2/ü"]["examples"] == 7
    files = sorted(os.listdir(os.path.join(d, wd.CLIENTS_DIR)))
    assert files == sorted(e["file"] for e in m["clients"].values())
    before = {f: os.path.getmtime(os.path.join(d, wd.CLIENTS_DIR, f)) for f in files}
    logs = []
    assert wd.write_shards(d, _encoded(), "v1", 4, "fp", log=logs.append) == m
    assert "reusing 3 client shards" in logs[0]
    assert before == {f: os.path.getmtime(os.path.join(d, wd.CLIENTS_DIR, f)) for f in files}
    with pytest.raises(ConfigError, match="another corpus, vocabulary or sequence length"):
        wd.write_shards(d, _encoded(), "v2", 4, "fp")
    os.remove(os.path.join(d, wd.CLIENTS_DIR, files[0]))
    with pytest.raises(ConfigError, match="1 shard files are missing"):
        wd.write_shards(d, _encoded(), "v1", 4, "fp")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty and has no manifest.json"):
        wd.write_shards(str(other), _encoded(), "v1", 4, "fp")
    (other / "manifest.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ConfigError, match="not a worker-data manifest"):
        wd.read_manifest(str(other))


def test_round_arguments_name_the_shard_as_the_workers_see_it(tmp_path):
    m = wd.write_shards(str(tmp_path), _encoded(), "v1", 4, "fp", log=lambda *_: None)
    args = wd.round_arguments(m, "/mnt/kb/", ["role 1/ü", "role 0/ü"], [7, 8])
    assert args == [(f"/mnt/kb/clients/{wd.shard_name('role 1/ü')}", 7), (f"/mnt/kb/clients/{wd.shard_name('role 0/ü')}", 8)]
    with pytest.raises(KeyboardLMError, match="client 'nobody' has no shard"):
        wd.round_arguments(m, "/mnt/kb", ["nobody"], [1])


def test_the_worker_side_dataset_gives_the_driver_side_batches(tmp_path):
    """The TFF computation that reads a shard yields exactly ``client_batches`` of the same arrays and seed."""
    from keyboard_lm.federated.runtime import import_tff

    tff = import_tff()
    config = ClientDataConfig(max_seq_len=4, batch_size=2, epochs=2, max_batches=5)
    encoded = _encoded()
    m = wd.write_shards(str(tmp_path), encoded, "v1", 4, "fp", log=lambda *_: None)
    comp = wd.dataset_computation(config)

    @tff.tensorflow.computation(comp.type_signature.result)
    def flatten(ds):  # every batch's inputs, concatenated, and the number of batches
        return ds.reduce((tf.zeros([0], tf.int32), 0),
                         lambda acc, b: (tf.concat([acc[0], tf.reshape(b[0], [-1])], 0), acc[1] + 1))

    @tff.federated_computation(tff.FederatedType(comp.type_signature.parameter, tff.CLIENTS))
    def read_on_clients(args):
        return tff.federated_map(flatten, tff.federated_map(comp, args))

    ids = ["role 2/ü", "role 1/ü"]
    results = read_on_clients(wd.round_arguments(m, str(tmp_path), ids, [11, 12]))
    for cid, seed, (flat, batches) in zip(ids, [11, 12], results):
        expected = [b[0].numpy() for b in client_batches(*encoded[cid], config, seed)]
        assert batches == len(expected) == 5
        np.testing.assert_array_equal(flat, np.concatenate([e.reshape(-1) for e in expected]))
    # A different seed gives another order: the seed reaches the worker.
    other = [b[0].numpy() for b in client_batches(*encoded["role 2/ü"], config, 99)]
    assert not np.array_equal(results[0][0], np.concatenate([e.reshape(-1) for e in other]))


def test_client_batches_shuffle_each_epoch_and_keep_every_example():
    x = np.arange(28, dtype=np.int32).reshape(7, 4)
    config = ClientDataConfig(max_seq_len=4, batch_size=7, epochs=2, max_batches=10)
    epochs = [b[0].numpy()[:, 0] for b in client_batches(x, x + 1, config, 5)]
    assert len(epochs) == 2 and all(sorted(e) == list(range(0, 28, 4)) for e in epochs)
    assert not np.array_equal(epochs[0], epochs[1])
    plain = ClientDataConfig(max_seq_len=4, batch_size=7, epochs=1, shuffle_buffer=0)
    np.testing.assert_array_equal(next(iter(client_batches(x, x + 1, plain, 5)))[0].numpy(), x)

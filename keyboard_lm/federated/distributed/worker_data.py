"""Client data that TFF workers read themselves (data locality, docs/distributed.md).

Without it, the driver builds every sampled client's dataset and TFF
serializes it into the round's arguments, so each round ships the clients'
text to the workers again.  With ``train --worker-data DIR``:

1. the driver encodes the training clients once, with the run's vocabulary,
   and writes one shard per client into ``DIR/clients/`` plus
   ``DIR/manifest.json`` (``write_shards``); a directory that already holds
   exactly these shards is reused, one that holds others is refused;
2. each round sends only ``(path, shuffle seed)`` per sampled client; on the
   worker, ``dataset_computation`` reads the shard and builds the client's
   batches with ``client_batches`` -- the same function, seeds and batches
   as the driver-side path -- composed in front of the learning process by
   ``tff.simulation.compose_dataset_computation_with_learning_process``.

``root`` is where the workers find ``DIR`` (default: ``DIR`` itself, i.e. a
shared filesystem, or a copy at the same path on every worker).  A shard is
a serialized int32 tensor [2, examples, max_seq_len] (inputs, targets), read
with core TF ops only (``tf.io.read_file``, ``tf.io.parse_tensor``), which
TFF's C++ worker has.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os

import numpy as np
import tensorflow as tf

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.errors import ConfigError, KeyboardLMError
from keyboard_lm.federated.client_data import client_batches
from keyboard_lm.federated.runtime import import_tff
from keyboard_lm.models.run_dir import atomic_write, read_json

tff = import_tff()

FORMAT = "keyboard_lm.worker_data/1"
MANIFEST = "manifest.json"
CLIENTS_DIR = "clients"


def shard_name(client_id: str) -> str:
    """File name of a client's shard: ids are arbitrary text, file names are not."""
    return hashlib.sha256(client_id.encode("utf-8")).hexdigest()[:32] + ".tensor"


def _shard_bytes(x: np.ndarray, y: np.ndarray) -> bytes:
    return tf.io.serialize_tensor(tf.constant(np.stack([x, y]).astype(np.int32))).numpy()


def write_shards(out_dir: str, encoded: dict, vocab_sha256: str, max_seq_len: int,
                 corpus_fingerprint: str, log=None) -> dict:
    """Write one shard per client of ``encoded`` ({id: (x, y)}) and the manifest; returns the manifest.

    Idempotent: a directory whose manifest equals the new one is reused as it
    is (a resumed run, or several runs on the same clients and vocabulary);
    a directory holding anything else is refused, so one run's shards are
    never mixed with another's. ``log``: deprecated, a callable that takes the lines instead of the logger.
    """
    log = log or logging.getLogger(__name__).info
    clients = {}
    blobs = {}
    for cid in sorted(encoded):
        x, y = encoded[cid]
        if not len(x):
            continue
        blob = _shard_bytes(x, y)
        name = shard_name(cid)
        clients[cid] = {"file": name, "examples": int(len(x)), "sha256": hashlib.sha256(blob).hexdigest()}
        blobs[name] = blob
    manifest = {"format": FORMAT, "vocab_sha256": vocab_sha256, "max_seq_len": int(max_seq_len),
                "corpus_fingerprint": corpus_fingerprint, "clients": clients}
    path = os.path.join(out_dir, MANIFEST)
    if os.path.exists(path):
        old = read_manifest(out_dir)
        if old != manifest:
            raise ConfigError(f"--worker-data {out_dir}: holds client data of another corpus, vocabulary or "
                              "sequence length; give a new or empty directory")
        missing = [c for c, e in clients.items() if not os.path.exists(os.path.join(out_dir, CLIENTS_DIR, e["file"]))]
        if missing:
            raise ConfigError(f"--worker-data {out_dir}: {len(missing)} shard files are missing "
                              f"(e.g. client {missing[0]!r}); give a new or empty directory")
        log(f"worker data: reusing {len(clients)} client shards in {out_dir}")
        return manifest
    # Only `clients/` and no manifest: a write that was interrupted; it is redone.
    if os.path.isdir(out_dir) and set(os.listdir(out_dir)) - {CLIENTS_DIR}:
        raise ConfigError(f"--worker-data {out_dir}: not empty and has no {MANIFEST}; give a new or empty directory")
    os.makedirs(os.path.join(out_dir, CLIENTS_DIR), exist_ok=True)
    for name, blob in blobs.items():
        atomic_write(os.path.join(out_dir, CLIENTS_DIR, name), blob, mode=0o644)
    # The manifest last: a directory with a manifest has all its shards.
    atomic_write(path, json.dumps(manifest, indent=1, ensure_ascii=False).encode("utf-8"), mode=0o644)
    log(f"worker data: wrote {len(clients)} client shards "
        f"({sum(len(b) for b in blobs.values()) / 1e6:.1f} MB) to {out_dir}")
    return manifest


def read_manifest(data_dir: str) -> dict:
    path = os.path.join(data_dir, MANIFEST)
    manifest = read_json(path, f"{path}: no worker-data manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a worker-data manifest of format {FORMAT}")
    return manifest


def dataset_computation(data_config: ClientDataConfig):
    """TFF computation (shard path, seed) -> the client's batches for one round, run on the worker."""
    seq_len = data_config.max_seq_len

    @tff.tensorflow.computation(tf.string, tf.int64)
    def client_dataset(path, seed):
        shard = tf.reshape(tf.io.parse_tensor(tf.io.read_file(path), tf.int32), [2, -1, seq_len])
        return client_batches(shard[0], shard[1], data_config, seed)

    return client_dataset


def compose(process, data_config: ClientDataConfig):
    """``process`` whose ``next`` takes (path, seed) per client and reads the data on the worker."""
    return tff.simulation.compose_dataset_computation_with_learning_process(
        dataset_computation(data_config), process)


def round_arguments(manifest: dict, root: str, client_ids, seeds) -> list[tuple[str, int]]:
    """Per sampled client, the (shard path as the workers see it, shuffle seed) pair."""
    out = []
    for cid, seed in zip(client_ids, seeds):
        entry = manifest["clients"].get(cid)
        if entry is None:
            raise KeyboardLMError(f"client {cid!r} has no shard in the worker data (manifest of {root})")
        out.append((f"{root.rstrip('/')}/{CLIENTS_DIR}/{entry['file']}", int(seed)))
    return out


def read_error(error: Exception, root: str, round_num: int) -> KeyboardLMError | None:
    """The clear error for a round whose worker could not read a shard under ``root``; None for other errors."""
    import re

    # gRPC's error text: the worker's own message is in its `details = "..."` line.
    text = str(error)
    if not any(op in text for op in ("{{node ReadFile}}", "{{node ParseTensor}}", "{{node Reshape}}")):
        return None
    found = re.search(r'details = "(?:Failed to run computation: )?(.*?)(?:\n|"$|"\s*$)', text, re.M)
    first = found.group(1) if found else (text.strip().splitlines() or [type(error).__name__])[0]
    return KeyboardLMError(f"round {round_num}: a TFF worker could not read client data under {root} ({first}); "
                           f"each worker needs the --worker-data directory at that path (--worker-data-root)")

"""The parts of a federated round: who trains, what data they send to TFF, and how a round's model is scored.

The training loop (``federated.trainer``) composes them: a
:class:`ClientSampler` picks the round's clients (uniform without
replacement, or the DP run's cohort), :class:`RoundData` turns them into
TFF's arguments (batched datasets read on the driver, or the shard paths and
seeds that workers read themselves) and runs the round, and an
:class:`Evaluator` scores the round's model on held-out and validation
clients, calling a run diverged when its loss leaves the range a model can
have.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.errors import DataError, TrainingDivergedError
from keyboard_lm.evaluation import evaluate_model
from keyboard_lm.federated.client_data import client_batches
from keyboard_lm.models.run_dir import CHECKPOINT_DIR

logger = logging.getLogger(__name__)


def sample_clients(client_ids: list[str], k: int, seed: int, round_num: int) -> list[str]:
    """K clients drawn uniformly without replacement; depends only on (seed, round)."""
    rng = np.random.RandomState([seed, round_num])
    picks = rng.choice(len(client_ids), size=min(k, len(client_ids)), replace=False)
    return [client_ids[i] for i in sorted(picks)]


def dataset_seed(seed: int, round_num: int, index: int) -> int:
    """The shuffle seed of the ``index``-th sampled client's batches in ``round_num``."""
    return int(np.random.RandomState([seed, round_num, index]).randint(2**31 - 1))


def client_arrays(examples, client_id: str) -> tuple[np.ndarray, np.ndarray]:
    """One client's examples as (x, y) arrays [n, S]: from a mapping of arrays (the run's encoded clients,
    held in memory), or read in full from a TFF ``ClientData``.

    Reading the client's examples eagerly makes a failing client (a dataset
    that raises part-way) fail in this process, where it can be dropped from
    the round, instead of inside TFF's worker, where it would abort the round.
    """
    if isinstance(examples, Mapping):
        x, y = examples[client_id]
        if not len(x):
            raise ValueError("the client has no examples")
        return x, y
    parts = list(examples.create_tf_dataset_for_client(client_id).batch(1024).as_numpy_iterator())
    if not parts:
        raise ValueError("the client has no examples")
    return np.concatenate([p["x"] for p in parts]), np.concatenate([p["y"] for p in parts])


def client_round_dataset(examples, client_id: str, data_config: ClientDataConfig) -> tf.data.Dataset:
    """One client's batches for one round (``client_arrays``, then ``client_batches``: the shuffle covers
    all of the client's examples)."""
    x, y = client_arrays(examples, client_id)
    return client_batches(x, y, data_config, data_config.seed)


def round_datasets(examples, client_ids, data_config: ClientDataConfig, seed: int, round_num: int, log=None):
    """Batched datasets of the sampled clients; a client whose data fails is dropped and counted.

    ``examples``: a mapping client -> (x, y) arrays, or a TFF ``ClientData`` (``client_arrays``). A dropped
    client is logged (``log``: deprecated, a callable that takes the line instead).

    Returns (datasets, number of failed clients).
    """
    log = log or logger.info
    datasets, failed = [], 0
    for i, cid in enumerate(client_ids):
        try:
            cfg = dataclasses.replace(data_config, seed=dataset_seed(seed, round_num, i))
            datasets.append(client_round_dataset(examples, cid, cfg))
        except (tf.errors.OpError, ValueError, KeyError) as e:
            failed += 1
            log(f"round {round_num}: client {cid!r} dropped from this round ({type(e).__name__}: {e})")
    return datasets, failed


class ClientSampler:
    """Who trains in a round: ``k`` clients uniformly without replacement, seeded by (seed, round),
    or, under DP, the cohort the accountant assumes (``federated.dp_run.DPRun.cohort``).

    A cohort depends on the seed and the round alone, so the round a run resumes from is the sampler's
    whole position: nothing else of it is saved."""

    def __init__(self, clients: list[str], k: int, seed: int, dp_run=None):
        self.clients, self.k, self.seed, self.dp_run = clients, k, seed, dp_run

    def __call__(self, round_num: int) -> list[str]:
        if self.dp_run is not None:
            return self.dp_run.cohort(round_num)
        return sample_clients(self.clients, self.k, self.seed, round_num)


class RoundData:
    """The sampled clients' data for one round, and the round run on it.

    By default the driver reads each client's batches (``round_datasets``; a
    client whose data fails is dropped and counted). With ``worker_data`` the
    clients' shards are written there once, TFF's process reads them on the
    workers (``federated.distributed.worker_data``), and a round sends only shard paths
    (under ``worker_data_root``, default ``worker_data``) and seeds; a shard
    that cannot be read fails the round with one clear error.
    """

    def __init__(self, encoded: dict, data_config: ClientDataConfig, seed: int, *, worker_data: str | None = None,
                 worker_data_root: str | None = None, vocab_sha256: str = "", corpus_fingerprint: str = "",
                 log=None):
        self.data_config, self.seed = data_config, seed
        self.log = log or logger.info  # ``log``: deprecated, the module's logger takes the lines
        self.manifest = self.root = self.examples = None
        if worker_data is not None:
            from keyboard_lm.federated.distributed import worker_data as wd

            self.manifest = wd.write_shards(worker_data, encoded, vocab_sha256, data_config.max_seq_len,
                                            corpus_fingerprint, log)
            self.root = worker_data_root or os.path.abspath(worker_data)
        else:
            # The encoded arrays themselves: a round slices them (a ClientData would read each client's
            # examples back through tf.data every round: 27% of a small corpus's wall time).
            self.examples = {cid: xy for cid, xy in encoded.items() if len(xy[0])}
            if not self.examples:
                raise DataError("no client has any example")

    def wrap(self, process):
        """``process``, reading its clients' shards on the workers when the data is there."""
        if self.manifest is None:
            return process
        from keyboard_lm.federated.distributed import worker_data as wd

        return wd.compose(process, self.data_config)

    def arguments(self, sampled: list[str], round_num: int) -> tuple[list, int]:
        """(TFF's client arguments, clients dropped because their data failed)."""
        if self.manifest is not None:
            from keyboard_lm.federated.distributed import worker_data as wd

            seeds = [dataset_seed(self.seed, round_num, i) for i in range(len(sampled))]
            return wd.round_arguments(self.manifest, self.root, sampled, seeds), 0
        return round_datasets(self.examples, sampled, self.data_config, self.seed, round_num, self.log)

    def run(self, process, state, arguments, round_num: int):
        """One round of ``process``; a shard the workers cannot read becomes one clear error."""
        try:
            return process.next(state, arguments)
        except Exception as e:  # noqa: BLE001 - whatever TFF's runtime raises for a shard it cannot read
            if self.manifest is None:
                raise
            from keyboard_lm.federated.distributed import worker_data as wd

            clear = wd.read_error(e, self.root, round_num)
            if clear is None:
                raise
            # The other workers' part-rounds fail the same way; asyncio would print each one's traceback.
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
            raise clear from e


class Evaluator:
    """Scores a round's model on held-out clients (reported) and validation clients (deciding).

    A held-out or training loss past ``limit`` (a multiple of the loss of a
    uniform guess, ``LoopConfig.divergence_factor``) or not finite is
    divergence: ``TrainingDivergedError`` names the round and the last good
    checkpoint, which stays on disk.
    """

    def __init__(self, corpus, heldout_ids, val_ids, vocab, seq_len: int, limit: float, run_dir: str):
        self.corpus, self.heldout_ids, self.val_ids, self.vocab = corpus, heldout_ids, val_ids, vocab
        self.seq_len, self.limit = seq_len, limit
        self.checkpoint_dir = os.path.join(run_dir, CHECKPOINT_DIR)

    def check_training(self, train_loss: float, round_num: int, last_good: int) -> None:
        if not math.isfinite(train_loss) or train_loss > self.limit:
            raise TrainingDivergedError(
                f"training diverged at round {round_num} (train loss {train_loss}, limit {self.limit:.1f}); "
                f"the last good checkpoint (round {last_good}) is kept in {self.checkpoint_dir}")

    def heldout(self, keras_model, round_num: int, last_good: int) -> dict:
        result = evaluate_model(keras_model, self.corpus, self.heldout_ids, self.vocab, self.seq_len)
        loss = result["pooled"]["loss"]
        if not math.isfinite(loss) or loss > self.limit:
            raise TrainingDivergedError(
                f"training diverged at round {round_num} (held-out loss {loss:.1f}, limit {self.limit:.1f}); "
                f"the last good checkpoint (round {last_good}) is kept in {self.checkpoint_dir}")
        return result

    def validation(self, keras_model) -> dict | None:
        if not self.val_ids:
            return None
        return evaluate_model(keras_model, self.corpus, self.val_ids, self.vocab, self.seq_len)["pooled"]


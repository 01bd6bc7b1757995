"""The federated algorithm as the training loop sees it: ``init()`` -> server state, ``apply(state, clients)``
-> (state, the round's metrics).

:class:`FederatedAlgorithm` wraps TFF's iterative process (FedAvg and its server optimizers, FedAtt, or
DP-FedAvg/DP-FTRL, ``process.build_process`` / ``dp_run.DPRun.process``) together with the run's client
data (``rounds.RoundData``), the shape of fedjax's ``FederatedAlgorithm`` and TFF's ``LearningProcess``.
Everything else a round needs (who trains, scoring, saving) is another collaborator's.
"""

from __future__ import annotations

import dataclasses
import logging

import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.aggregation import upload_bytes
from keyboard_lm.federated.rounds import RoundData
from keyboard_lm.models.language_model import assign_weights, build_model

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class RoundMetrics:
    """What one round did: its mean training loss (NaN when no client trained), examples, clients that
    trained and that were dropped, updates zeroed as non-finite, and the DP clip it used (None without DP)."""

    train_loss: float
    examples: int
    clients: int
    failed: int
    zeroed: int
    dp_clip: float | None = None

    @property
    def trained(self) -> bool:
        return self.clients > 0


def _dp_clip(aggregator_metrics, fallback):
    """The DP clip the round used: the adaptive estimate TFF reports, else the fixed clip."""
    query = (aggregator_metrics.get("inner") or {}).get("dp_query_metrics") or {}
    return float(query["clip"]) if "clip" in query else fallback


class FederatedAlgorithm:
    """TFF's process for ``config`` on the run's clients (``data``); ``dp_run`` replaces it with the DP one.

    ``init_weights``: the server's first model (a warm start's weights; None: TFF's initializers).
    Also holds a Keras model of the same shape, into which :meth:`model` puts a state's weights for
    evaluation and for weights.npz.
    """

    def __init__(self, model_config, config, data: RoundData, *, dp_run=None, init_weights=None):
        from keyboard_lm.federated.process import build_process
        from keyboard_lm.federated.runtime import start_runtime

        self.tff = start_runtime()
        self.config, self.data, self.dp_run, self.init_weights = config, data, dp_run, init_weights
        input_spec = (tf.TensorSpec([None, data.data_config.max_seq_len], tf.int32),) * 2
        tf.keras.utils.set_random_seed(config.seed)
        # Training computes the loss and example counts only: recall is measured
        # on held-out clients, and per-batch top-k over V words would cost more
        # than the cell itself (TFF should be no slower than plain TensorFlow).
        process = (dp_run.process(model_config, input_spec, config) if dp_run is not None
                   else build_process(model_config, config, input_spec, metrics=False, reuse=True))
        self.process = data.wrap(process)
        self._initial = self.process.initialize()  # before the Keras model, as the seeded draws always ran
        self.keras_model = build_model(model_config)
        shapes = [tuple(w.shape) for w in self.keras_model.trainable_weights]
        self.upload_bytes, self.upload_bytes_float32 = upload_bytes(shapes, config.compression)

    def init(self):
        """The server state before round 1: TFF's, with the warm start's weights when there is one (also the
        structure a checkpoint is read into)."""
        state = self._initial
        if self.init_weights is not None:
            # The server's first model is the base's; clients receive it in round 1.
            assign_weights(self.keras_model, self.init_weights)
            state = self.process.set_model_weights(
                state, self.tff.learning.models.ModelWeights.from_model(self.keras_model))
        return state

    def apply(self, state, clients: list[str], round_num: int, timing) -> tuple[object, RoundMetrics]:
        """One round on ``clients``: (the new server state, the round's metrics). ``timing``
        (``time_breakdown.TimeBreakdown``) is told where the time goes."""
        with timing.phase("client_data"):
            arguments, failed = self.data.arguments(clients, round_num)
        if not arguments:
            if clients and failed == len(clients):
                raise ConfigError(f"round {round_num}: every sampled client failed")
            # Poisson sampling drew nobody: no TFF round (it cannot aggregate zero
            # clients), but the round counts for the accountant all the same.
            logger.info(f"round {round_num}: Poisson sampling drew no client; the model is unchanged")
            return state, RoundMetrics(float("nan"), 0, 0, failed, 0)
        with timing.phase("tff_round"):
            output = self.data.run(self.process, state, arguments, round_num)
        train = output.metrics["client_work"]["train"]
        clip = (_dp_clip(output.metrics["aggregator"], self.dp_run.config.clip) if self.dp_run is not None
                else None)
        return output.state, RoundMetrics(float(train["loss"]), int(train["num_examples"]), len(arguments), failed,
                                          int(output.metrics["aggregator"]["non_finite_zeroed"]), clip)

    def model_weights(self, state):
        """``state``'s global model (``tff.learning.models.ModelWeights``).

        A composed learning process's state holds it as ``global_model_weights``, already on the driver:
        reading it there costs nothing, where the process's ``get_model_weights`` computation costs a TFF
        invocation (0.19 s a round for the paper-size CIFG on 2 cores, 15% of a round on the embedded
        corpus). A state without the field goes through the computation."""
        weights = getattr(state, "global_model_weights", None)
        return weights if weights is not None else self.process.get_model_weights(state)

    def trainable(self, state) -> list:
        """The server model's trainable weights in ``state`` (what the server average folds in)."""
        return self.model_weights(state).trainable

    def model(self, state, average=None) -> tf.keras.Model:
        """The Keras model with ``state``'s weights, or with the server average's when the run keeps one."""
        self.model_weights(state).assign_weights_to(self.keras_model)
        if average is not None:
            for var, value in zip(self.keras_model.trainable_weights, average.weights):
                var.assign(value)
        return self.keras_model

    def client_learning_rate(self, state) -> float:
        """The rate clients train at: it lives in TFF's state, so a resumed run continues with its own."""
        from keyboard_lm.federated.process import client_learning_rate

        return client_learning_rate(self.process, state)

    def decay(self, state, factor: float) -> tuple[object, float]:
        """``state`` with the client learning rate times ``factor``; (new state, new rate)."""
        from keyboard_lm.federated.process import decayed_hparams

        return decayed_hparams(self.process, state, factor)

    def checkpoint_manager(self, directory: str, keep: int):
        """TFF's program state manager on ``directory``, keeping the newest ``keep`` states."""
        return self.tff.program.FileProgramStateManager(directory, keep_total=keep, keep_first=False)

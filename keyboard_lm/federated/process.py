"""TFF learning processes: FedAvg (with SGD, Nesterov momentum or Adam on the
server), FedSGD and FedAtt, with optional 8-bit compressed uploads.

Everything is built from TFF's own parts: ``tff.learning.algorithms``,
``tff.learning.optimizers`` and ``tff.aggregators``; this module only chooses
and wires them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.fed_att import FedAttFactory
from keyboard_lm.federated.nesterov import NesterovSGD
from keyboard_lm.federated.robustness import NonFiniteZeroingFactory, UnweightedNonFiniteZeroingFactory
from keyboard_lm.federated.runtime import import_tff
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import build_model
from keyboard_lm.models.metrics import loss_fn, metric_list

tff = import_tff()

ALGORITHMS = ("fedavg", "fedsgd", "fedatt")
SERVER_OPTIMIZERS = ("sgd", "nesterov", "adam")
# EncodedSumFactory.quantize_above_threshold(quantization_bits=8, threshold=20000),
# as used by tff.learning.compression_aggregator: tensors with more elements are
# quantized to 8 bits, smaller ones are sent as float32.
QUANTIZE_THRESHOLD = 20_000
QUANTIZE_BITS = 8


@dataclasses.dataclass(frozen=True)
class FederatedConfig:
    """Hyper-parameters of federated training; defaults follow Hard et al. / Ro et al.

    Attributes:
      algorithm: ``fedavg`` (weighted by n_k, Hard et al. eq. 3), ``fedsgd``
        or ``fedatt`` (Ji et al.).
      server_optimizer: ``sgd``, ``nesterov`` (FedAvgM; momentum 0.9, lr 1.0 as
        in Hard et al.) or ``adam`` (FedAdam, Ro et al.).  FedAtt always uses
        SGD with learning rate ``fedatt_eps``.
      server_lr, server_momentum: server step size and momentum.
      client_lr: client SGD learning rate.
      clients_per_round: K clients sampled uniformly per round (10).
      rounds: number of rounds.
      fedatt_p, fedatt_eps: FedAtt's norm order and step size.
      compression: stochastic 8-bit uniform quantization of uploads.
      seed: seed of the model initialization, client sampling and shuffling.
    """

    algorithm: str = "fedavg"
    server_optimizer: str = "sgd"
    server_lr: float = 1.0
    server_momentum: float = 0.9
    client_lr: float = 0.5
    clients_per_round: int = 10
    rounds: int = 10
    fedatt_p: float = 2.0
    fedatt_eps: float = 1.0
    compression: bool = False
    seed: int = 0

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"unknown algorithm {self.algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
        if self.server_optimizer not in SERVER_OPTIMIZERS:
            raise ConfigError(f"unknown server optimizer {self.server_optimizer!r}; "
                              f"choose one of {', '.join(SERVER_OPTIMIZERS)}")
        for name in ("server_lr", "client_lr", "fedatt_p", "fedatt_eps"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0 <= self.server_momentum < 1:
            raise ConfigError(f"server_momentum must be in [0, 1), got {self.server_momentum}")
        for name in ("clients_per_round", "rounds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.compression and self.algorithm == "fedatt":
            raise ConfigError("compressed uploads are not combined with FedAtt (its attention needs exact norms)")


def _server_optimizer(config: FederatedConfig):
    if config.algorithm == "fedatt":
        return tff.learning.optimizers.build_sgdm(learning_rate=config.fedatt_eps)
    if config.server_optimizer == "sgd":
        return tff.learning.optimizers.build_sgdm(learning_rate=config.server_lr)
    if config.server_optimizer == "nesterov":
        return NesterovSGD(config.server_lr, config.server_momentum)
    return tff.learning.optimizers.build_adam(learning_rate=config.server_lr)


def model_fn_for(model_config: ModelConfig, input_spec):
    """A no-argument constructor of the TFF model (a fresh Keras model each call)."""

    def model_fn():
        return tff.learning.models.from_keras_model(
            build_model(model_config), loss=loss_fn(), input_spec=input_spec, metrics=metric_list())

    return model_fn


def build_process(model_config: ModelConfig, config: FederatedConfig, input_spec):
    """The ``tff.learning.templates.LearningProcess`` for ``config``."""
    model_fn = model_fn_for(model_config, input_spec)
    client_opt = tff.learning.optimizers.build_sgdm(learning_rate=config.client_lr)
    if config.algorithm == "fedatt":
        return tff.learning.algorithms.build_unweighted_fed_avg(
            model_fn, client_opt, _server_optimizer(config),
            model_aggregator=UnweightedNonFiniteZeroingFactory(FedAttFactory(config.fedatt_p)))
    # TFF's defaults for FedAvg: adaptive zeroing of outsized updates and
    # adaptive L2 clipping (Andrew et al. 2021), with or without 8-bit
    # compression; our guard in front also catches NaN updates.
    if config.compression:
        inner = tff.learning.compression_aggregator(zeroing=True, clipping=True, weighted=True)
    else:
        inner = tff.learning.robust_aggregator(zeroing=True, clipping=True, weighted=True)
    if config.algorithm == "fedsgd":
        return tff.learning.algorithms.build_fed_sgd(
            model_fn, server_optimizer_fn=_server_optimizer(config),
            model_aggregator=NonFiniteZeroingFactory(inner))
    return tff.learning.algorithms.build_weighted_fed_avg(
        model_fn, client_opt, _server_optimizer(config), model_aggregator=NonFiniteZeroingFactory(inner))


def upload_bytes(weight_shapes, compression: bool) -> tuple[int, int]:
    """(bytes one client uploads per round, the float32 bytes of the same update).

    With compression, tensors above ``QUANTIZE_THRESHOLD`` elements go as
    8-bit codes plus their min and max (two float32); others as float32.
    """
    raw = sum(int(np.prod(s)) * 4 for s in weight_shapes)
    if not compression:
        return raw, raw
    sent = 0
    for s in weight_shapes:
        n = int(np.prod(s))
        sent += (n * QUANTIZE_BITS + 7) // 8 + 8 if n > QUANTIZE_THRESHOLD else n * 4
    return sent, raw

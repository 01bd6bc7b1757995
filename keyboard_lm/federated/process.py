"""TFF learning processes: FedAvg (with SGD, Nesterov momentum or Adam on the
server), FedSGD and FedAtt, with optional 8-bit compressed uploads.

One ``build_*`` function per algorithm, each taking the model constructor and
keyword-only optional parts with the paper's defaults; the aggregator comes
from ``keyboard_lm.federated.aggregation`` (non-finite zeroing, clipping,
mean), the same stack for every algorithm.  Everything is built from TFF's own
parts: ``tff.learning.templates`` (composed as
``tff.learning.algorithms.build_weighted_fed_avg`` composes them),
``tff.learning.optimizers`` and ``tff.aggregators``; this module only chooses
and wires them.  Client work runs TFF's iterator loop on a model whose
weights start at zero (``DEFAULT_LOOP``, ``model_fn_for``): the same steps as
TFF's defaults, with less fixed work per client in its C++ runtime.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses

import numpy as np
import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.aggregation import build_aggregator
from keyboard_lm.federated.client_optimizer import ClippedSGD
from keyboard_lm.federated.config import AggregationConfig, FederatedConfig
from keyboard_lm.federated.nesterov import NesterovSGD
from keyboard_lm.federated.server_noise import NoisySGD
from keyboard_lm.federated.runtime import import_tff, start_runtime
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import build_model
from keyboard_lm.models.metrics import loss_fn, metric_list

tff = import_tff()

# The client training loop every process uses: TFF's iterator ("simulation")
# loop.  Its dataset-reduce loop re-instantiates the training step's function
# graphs for every client call in TFF's C++ runtime, about 25% of the worker's
# CPU at 10 clients per round; the iterator loop's are built once
# (benchmarks/tff_overhead.py, docs/federated.md "TFF overhead").  Both run the same
# steps on the same batches.
DEFAULT_LOOP = "iterator"


def _rate_part(hparams) -> str:
    """Where the decayed rate lives: the client optimizer's, or the server's for FedSGD (which has none)."""
    return "client_work" if "learning_rate" in hparams["client_work"] else "finalizer"


def client_learning_rate(process, state) -> float:
    """The rate ``decayed_hparams`` scales, as it is in ``state``."""
    hparams = process.get_hparams(state)
    return float(hparams[_rate_part(hparams)]["learning_rate"])


def decayed_hparams(process, state, factor: float):
    """``state`` with the client learning rate (the server's, for FedSGD) times ``factor``.

    Returns (new state, the new rate).
    """
    import numpy as np

    hparams = process.get_hparams(state)
    part = _rate_part(hparams)
    rate = np.float32(hparams[part]["learning_rate"] * factor)
    hparams[part]["learning_rate"] = rate
    return process.set_hparams(state, hparams), float(rate)


def server_optimizer_for(config: FederatedConfig):
    """The ``tff.learning.optimizers`` optimizer of ``config``'s server."""
    if config.algorithm == "fedatt" or config.server_optimizer == "sgd":
        lr = config.fedatt_eps if config.algorithm == "fedatt" else config.server_lr
        if config.server_noise:
            return NoisySGD(lr, config.server_noise, seed=config.seed)
        return tff.learning.optimizers.build_sgdm(learning_rate=lr)
    if config.server_optimizer == "nesterov":
        return NesterovSGD(config.server_lr, config.server_momentum)
    return tff.learning.optimizers.build_adam(learning_rate=config.server_lr, epsilon=config.server_adam_epsilon)


def client_optimizer_for(client_lr: float, clipnorm: float | None = None, momentum: float = 0.0):
    """Client SGD (with ``momentum`` if > 0): TFF's ``build_sgdm``, or ``ClippedSGD`` when ``clipnorm`` is
    given."""
    if clipnorm is None:
        return tff.learning.optimizers.build_sgdm(learning_rate=client_lr, momentum=momentum or None)
    return ClippedSGD(client_lr, clipnorm, momentum)


def model_fn_for(model_config: ModelConfig, input_spec, metrics: bool = True, dropout: float = 0.0,
                 zero_init: bool = False):
    """A no-argument constructor of the TFF model (a fresh Keras model each call).

    ``metrics`` False leaves the loss and example counts only (training);
    ``dropout`` applies in client training only (TFF calls the model with
    ``training=True`` there) and adds no weights.  ``zero_init`` starts every
    weight at zero instead of drawing it: for client work, whose variables
    are overwritten by the broadcast model before the first step, so the
    random draw (1.4M numbers per client and round) is wasted work.  Never
    use it to build initial weights.
    """

    def model_fn():
        with tf.variable_creator_scope(_zeros_creator) if zero_init else contextlib.nullcontext():
            keras_model = build_model(model_config, dropout=dropout)
        return tff.learning.models.from_keras_model(
            keras_model, loss=loss_fn(), input_spec=input_spec,
            metrics=metric_list() if metrics else None)

    return model_fn


def _zeros_creator(next_creator, **kwargs):
    """A ``tf.variable_creator_scope`` creator whose variables start at zeros of their shape."""
    shape = kwargs.get("shape")
    if callable(kwargs.get("initial_value")) and shape is not None and tf.TensorShape(shape).is_fully_defined():
        dtype = kwargs.get("dtype") or tf.float32
        kwargs["initial_value"] = lambda: tf.zeros(shape, dtype)
    return next_creator(**kwargs)


def _loop(loop: str):
    """``reduce`` (TFF's default dataset reduce) or ``iterator`` (its Python-iterator simulation loop)."""
    loops = {"reduce": tff.learning.LoopImplementation.DATASET_REDUCE,
             "iterator": tff.learning.LoopImplementation.DATASET_ITERATOR}
    if loop not in loops:
        raise ConfigError(f"unknown client loop {loop!r}; choose reduce or iterator")
    return loops[loop]


def compose_fed_avg(model_fn, client_optimizer, server_optimizer, aggregator, *, weighting: str = "examples",
                    loop: str = DEFAULT_LOOP, client_model_fn=None):
    """The parts ``tff.learning.algorithms.build_weighted_fed_avg`` composes, wired explicitly.

    Initial weights from ``model_fn``, broadcast, model-delta client work,
    ``aggregator``, and ``server_optimizer`` applied to the aggregate, through
    ``tff.learning.templates.compose_learning_process``: the same process and
    state as TFF's builder, except that client work is built from
    ``client_model_fn``.

    Args:
      model_fn: no-argument constructor of a ``tff.learning.models.VariableModel``.
      client_optimizer, server_optimizer: ``tff.learning.optimizers`` optimizers.
      aggregator: a weighted aggregation factory, or an unweighted one with
        ``weighting="uniform"`` (as ``build_unweighted_fed_avg``).
      weighting: ``examples`` (n_k) or ``uniform``.
      loop: the client training loop, ``iterator`` (``DEFAULT_LOOP``,
        ``LoopImplementation.DATASET_ITERATOR``, TFF's simulation loop) or
        ``reduce`` (TFF's own default).
      client_model_fn: the constructor client work uses (``model_fn``).  Client
        work overwrites its model's weights with the broadcast ones before the
        first step, so a constructor that skips the random initializers
        (``model_fn_for(..., zero_init=True)``) trains exactly the same.
    """
    weightings = {"examples": tff.learning.ClientWeighting.NUM_EXAMPLES,
                  "uniform": tff.learning.ClientWeighting.UNIFORM}
    if weighting not in weightings:
        raise ConfigError(f"unknown client weighting {weighting!r}; choose examples or uniform")
    if weighting == "uniform":
        aggregator = tff.aggregators.as_weighted_aggregator(aggregator)
    initial_weights = tff.tensorflow.computation(lambda: tff.learning.models.ModelWeights.from_model(model_fn()))
    weights_type = initial_weights.type_signature.result
    client_work = tff.learning.templates.build_model_delta_client_work(
        client_model_fn or model_fn, client_optimizer, weightings[weighting], loop_implementation=_loop(loop))
    return tff.learning.templates.compose_learning_process(
        initial_weights, tff.learning.templates.build_broadcast_process(weights_type), client_work,
        aggregator.create(weights_type.trainable, tff.TensorType(np.float32)),
        tff.learning.templates.build_apply_optimizer_finalizer(server_optimizer, weights_type))


def build_fed_avg(model_fn, *, client_lr: float = 0.5, server_optimizer=None, aggregator=None,
                  loop: str = DEFAULT_LOOP, client_model_fn=None, client_clipnorm: float | None = None,
                  client_momentum: float = 0.0):
    """FedAvg (McMahan et al. 2017) with updates weighted by n_k (Hard et al. 2018, eq. 3).

    Args:
      model_fn: no-argument constructor of a ``tff.learning.models.VariableModel``.
      client_lr: client SGD learning rate (0.5).
      server_optimizer: a ``tff.learning.optimizers`` optimizer (SGD lr 1.0, plain FedAvg).
      client_clipnorm: clip each client step's gradient to this global norm (None: off).
      client_momentum: client SGD momentum (0: plain SGD).
      aggregator: a weighted aggregation factory (``build_aggregator()``: the default stack).
      loop, client_model_fn: see ``compose_fed_avg``.
    Returns:
      A ``tff.learning.templates.LearningProcess``.
    """
    return compose_fed_avg(
        model_fn, client_optimizer_for(client_lr, client_clipnorm, client_momentum),
        server_optimizer or tff.learning.optimizers.build_sgdm(learning_rate=1.0),
        aggregator or build_aggregator(AggregationConfig(mean="weighted")), loop=loop,
        client_model_fn=client_model_fn)


def build_fed_sgd(model_fn, *, server_optimizer=None, aggregator=None):
    """FedSGD: one gradient per client and round, averaged (McMahan et al. 2017)."""
    return tff.learning.algorithms.build_fed_sgd(
        model_fn, server_optimizer_fn=server_optimizer or tff.learning.optimizers.build_sgdm(learning_rate=1.0),
        model_aggregator=aggregator or build_aggregator(AggregationConfig(mean="weighted")))


def build_fed_att(model_fn, *, client_lr: float = 0.5, eps: float = 1.0, p: float = 2.0, clip="adaptive",
                  loop: str = DEFAULT_LOOP, client_model_fn=None, client_clipnorm: float | None = None,
                  client_momentum: float = 0.0, norm: str = "flat", server_optimizer=None):
    """FedAtt (Ji et al. 2019): the server steps by eps towards attention-weighted client models.

    Args:
      eps: server step size (1.0; Ji et al.'s code defaults to 1.2); p: norm order of the
        attention over the flattened layer (2; their code's ord=2 is the spectral norm of a matrix).
      clip: update clipping before the attention, as for every algorithm (Ji et al.: none).
      norm: ``flat`` (the p-norm of the flattened layer) or ``spectral`` (Ji et al.'s code).
      server_optimizer: replaces SGD at eps (``NoisySGD`` at eps for Ji et al.'s eq. 6 noise).
      loop, client_model_fn: see ``compose_fed_avg``; client_clipnorm, client_momentum: see
        ``build_fed_avg``.
    """
    return compose_fed_avg(
        model_fn, client_optimizer_for(client_lr, client_clipnorm, client_momentum),
        server_optimizer or tff.learning.optimizers.build_sgdm(learning_rate=eps),
        build_aggregator(AggregationConfig(mean="fedatt", clip=clip, fedatt_p=p, fedatt_norm=norm)),
        weighting="uniform",
        loop=loop, client_model_fn=client_model_fn)


# Fields of FederatedConfig that only the driver reads (how many rounds and clients, validation, the rate's
# decay, the average); every other field, the seed included (the initial weights are drawn inside
# ``initialize``), is part of the built computations.
_DRIVER_FIELDS = frozenset({"clients_per_round", "rounds", "validation_fraction", "lr_decay", "weight_average"})
_BUILT: collections.OrderedDict = collections.OrderedDict()
_BUILT_KEEP = 4


def build_process(model_config: ModelConfig, config: FederatedConfig, input_spec, metrics: bool = True,
                  loop: str = DEFAULT_LOOP, zero_init_clients: bool = True, reuse: bool = False):
    """The ``tff.learning.templates.LearningProcess`` for ``config``.

    ``loop``: see ``compose_fed_avg``; ``zero_init_clients`` builds client work
    from a model whose weights start at zero (they are overwritten by the
    broadcast model), sparing TFF's runtime the random initializers for every
    client of every round (FedSGD, built by TFF, keeps its own).

    Tracing a process costs seconds of CPU.  With ``reuse`` the last few
    processes built in this Python process are kept, and one asked for again
    with the same model, input spec and traced fields of ``config`` is
    returned instead of traced again: a resumed run, a sweep over rounds or
    cohort sizes, a second run in a notebook.  A process is a set of
    immutable computations, so nothing carries over from one run to the
    next except the initial weights, which Keras draws while tracing from
    the global seeds: pass ``reuse`` only where they were just set from
    ``config.seed`` (``tf.keras.utils.set_random_seed``, as
    ``train_federated`` does), so that the seed in the key decides them.
    """
    start_runtime()
    built_from = {k: v for k, v in dataclasses.asdict(config).items() if k not in _DRIVER_FIELDS}
    key = (repr(model_config), repr(built_from), repr(input_spec), metrics, loop, zero_init_clients)
    if reuse and key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    process = _build_process(model_config, config, input_spec, metrics, loop, zero_init_clients)
    if reuse:
        _BUILT[key] = process
        while len(_BUILT) > _BUILT_KEEP:
            _BUILT.popitem(last=False)
    return process


def _build_process(model_config, config, input_spec, metrics, loop, zero_init_clients):
    model_fn = model_fn_for(model_config, input_spec, metrics, config.dropout)
    client_model_fn = (model_fn_for(model_config, input_spec, metrics, config.dropout, zero_init=True)
                       if zero_init_clients else None)
    if config.algorithm == "fedatt":
        return build_fed_att(model_fn, client_lr=config.client_lr, eps=config.fedatt_eps, p=config.fedatt_p,
                             clip=config.clip, loop=loop, client_model_fn=client_model_fn,
                             client_clipnorm=config.client_clipnorm, client_momentum=config.client_momentum,
                             norm=config.fedatt_norm, server_optimizer=server_optimizer_for(config))
    aggregator = build_aggregator(config.aggregation)
    if config.algorithm == "fedsgd":
        return build_fed_sgd(model_fn, server_optimizer=server_optimizer_for(config), aggregator=aggregator)
    return build_fed_avg(model_fn, client_lr=config.client_lr, server_optimizer=server_optimizer_for(config),
                         aggregator=aggregator, loop=loop, client_model_fn=client_model_fn,
                         client_clipnorm=config.client_clipnorm, client_momentum=config.client_momentum)

"""DP-FedAvg and DP-FTRL learning processes, wired from TFF's own parts.

The aggregator of a DP run is, outermost first:

1. ``non_finite``: an update with a NaN/Inf entry is zeroed
   (``robustness.UnweightedNonFiniteZeroingFactory``; TFF's norm-based
   zeroing lets NaN through, and a NaN update would poison the noisy sum).
   Zeroing maps a client's update to a vector of norm 0 <= clip, so the
   sensitivity, and the accounting, are unchanged.  Its count is a
   diagnostic outside the DP guarantee.
2. ``tff.aggregators.DifferentiallyPrivateFactory``: clip each update to L2
   norm C, sum, add Gaussian noise of std z * C, divide by the (expected)
   cohort K.  That clip is the only clip: the non-DP robust clipping of
   ``aggregation.py`` is off, and so is TFF's adaptive norm zeroing
   (``tff.learning.dp_aggregator`` adds it), whose threshold is estimated
   from client norms without noise.

DP-FedAvg (McMahan et al. 2018) is unweighted FedAvg
(``process.compose_fed_avg``, as ``build_unweighted_fed_avg``) around
``gaussian_fixed`` or, with a target quantile, ``gaussian_adaptive`` (the
clip follows a privately estimated quantile of update norms, Andrew, Thakkar
et al. 2021).  DP-FTRL (Kairouz et al. 2021) is the same loop around the
query of ``tree_aggregation``, which emits each round the difference of two
noisy prefix sums from a binary tree; SGD with momentum on those residuals is
the paper's DP-FTRLM with a constant learning rate.  With a restart period
the query is wrapped in tensorflow_privacy's ``RestartQuery``, as TFF's
``tree_adaptive`` wraps its own (``tree_query``): every P rounds the tree
starts again, empty, with fresh noise (DP-FTRL-TreeRestart). BLT-DP-FTRL
(``--dp blt``; McMahan, Xu and Zhang 2024) is the same loop around
``blt_query.make_blt_query``: each round's share of buffered-linear-Toeplitz
correlated noise, a few model-size buffers in the aggregator's state.

DP aggregation is unweighted: with a mean weighted by example counts one
client could outweigh the clip.  ``check_dp_settings`` refuses what DP
cannot honour before anything trains.  A run's sampling, accounting and
report are ``dp_run.DPRun``'s.
"""

from __future__ import annotations

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.process import client_optimizer_for, compose_fed_avg, model_fn_for
from keyboard_lm.federated.robustness import UnweightedNonFiniteZeroingFactory
from keyboard_lm.federated.runtime import import_tff, start_runtime
from keyboard_lm.privacy.blt import BLT
from keyboard_lm.privacy.config import FTRL_MECHANISMS, DPConfig

tff = import_tff()

# TFF's adaptive clipping noises the count of clipped clients with std
# 0.05 * K and needs z < 2 * 0.05 * K to leave any noise budget for the updates
# (tff.aggregators.differential_privacy.adaptive_clip_noise_params).
_CLIPPED_COUNT_STDDEV_FRACTION = 0.05


def check_dp_settings(dp: DPConfig, *, algorithm: str = "fedavg", weighted: bool = False,
                      compression: bool = False, clip: str | float | None = None,
                      population: int | None = None, client_momentum: float = 0.0,
                      server_noise: float = 0.0) -> None:
    """Raise ConfigError for a combination DP cannot honour (DPConfig checks each setting alone).

    Args:
      dp: the DP settings.
      algorithm: the non-DP ``--algorithm``; only ``fedavg`` combines with DP.
      weighted: whether a mean weighted by example counts was asked for.
      compression: whether 8-bit compressed uploads were asked for.
      clip: the non-DP ``--clip``; a number is refused (the DP clip is the
        clip), ``adaptive``/``none``/None are ignored.
      population: the number of clients the run can actually sample.
      client_momentum, server_noise: the non-DP options of Ji et al.'s protocol, refused.
    """
    if algorithm == "fedatt":
        raise ConfigError("--algorithm fedatt cannot run with --dp: its attention weights each client by its "
                          "distance to the server model, so no clip bounds one client's influence")
    if algorithm != "fedavg":
        raise ConfigError(f"--algorithm {algorithm} cannot run with --dp: DP-FedAvg and DP-FTRL are built on "
                          "unweighted FedAvg (use --algorithm fedavg)")
    if server_noise:
        raise ConfigError("--server-noise cannot run with --dp: the DP mechanism adds its own calibrated noise "
                          "(--server-noise is Ji et al.'s uncalibrated one)")
    if client_momentum:
        raise ConfigError("--client-momentum is not built into the DP processes (their clients step with plain "
                          "SGD); drop it under --dp")
    if weighted:
        raise ConfigError("a weighted mean cannot run with --dp: DP aggregation is unweighted, since a client "
                          "weighted by its example count could outweigh the clip")
    if compression:
        raise ConfigError("--compression cannot run with --dp: quantizing the clipped updates changes their "
                          "norm, and the DP noise is calibrated to the clip")
    if clip is not None and not (isinstance(clip, str) and clip in ("adaptive", "none")):
        raise ConfigError(f"--clip {clip} cannot run with --dp: the DP clip is the clip (use --dp-clip)")
    if population is not None:
        if dp.clients_per_round > population:
            raise ConfigError(f"--clients-per-round {dp.clients_per_round} is above the {population} clients "
                              "the run can sample")
        if dp.population != population:
            raise ConfigError(f"DP accounting assumes a population of {dp.population} but the run samples from "
                              f"{population} clients; the sampling rate, and so eps, would be wrong")
    if dp.clip_quantile is not None and dp.noise_multiplier > 0:
        limit = 2 * _CLIPPED_COUNT_STDDEV_FRACTION * dp.clients_per_round
        if dp.noise_multiplier >= limit:
            raise ConfigError(f"--dp-clip-quantile with --dp-noise-multiplier {dp.noise_multiplier} needs more "
                              f"than {dp.noise_multiplier / (2 * _CLIPPED_COUNT_STDDEV_FRACTION):g} clients per "
                              f"round (the clipped count is noised too); use --dp-clip or a larger cohort")


def trainable_specs(model_fn):
    """``tf.TensorSpec`` structure of the model's trainable weights (the tree's record specs)."""
    weights_type = tff.learning.models.weights_type_from_model(model_fn)
    return tff.types.type_to_tf_tensor_specs(weights_type.trainable)


def tree_query(dp: DPConfig, record_specs, *, noise_seed: int | None = None):
    """DP-FTRL's query: the tree's residuals of noisy prefix sums over K, restarted every ``dp.restart_period``.

    Without a restart this is the query TFF's
    ``DifferentiallyPrivateFactory.tree_aggregation(z, K, clip, record_specs)``
    builds: ``TreeResidualSumQuery.build_l2_gaussian_query`` (node noise std
    z * clip, Honaker's efficient tree) in a ``NormalizedQuery`` dividing by
    K.  With a period P the sum query goes inside ``RestartQuery`` with
    ``PeriodicRoundRestartIndicator(P)``, the wrapping TFF's ``tree_adaptive``
    uses: after the P-th, 2P-th, ... round the tree is reset
    (``TreeResidualSumQuery.reset_state``: empty tree, the previous prefix
    noise forgotten, the noise generator's stream continued), so trees hold
    rounds [1, P], [P + 1, 2P], ...  The counter lives in the aggregator's
    state, which the run's checkpoints hold, so a resumed run restarts where
    an uninterrupted one would.

    Args:
      dp: DP settings with mechanism ``ftrl``.
      record_specs: the trainable weights' TensorSpecs (``trainable_specs``).
      noise_seed: seed of the tree's noise (None: from the clock).
    Returns:
      A ``tensorflow_privacy`` ``NormalizedQuery`` for ``DifferentiallyPrivateFactory``.
    """
    # tensorflow_privacy 0.9.0, the version TFF 0.87 pins (and has loaded by now).
    from tensorflow_privacy.privacy.dp_query.normalized_query import NormalizedQuery
    from tensorflow_privacy.privacy.dp_query.restart_query import PeriodicRoundRestartIndicator, RestartQuery
    from tensorflow_privacy.privacy.dp_query.tree_aggregation_query import TreeResidualSumQuery

    query = TreeResidualSumQuery.build_l2_gaussian_query(float(dp.clip), float(dp.noise_multiplier), record_specs,
                                                         noise_seed=noise_seed)
    if dp.restart_period is not None:
        query = RestartQuery(query, PeriodicRoundRestartIndicator(period=dp.restart_period))
    return NormalizedQuery(query, denominator=float(dp.clients_per_round))


def build_dp_aggregator(dp: DPConfig, record_specs=None, *, noise_seed: int | None = None, blt: BLT | None = None):
    """The DP model aggregator of ``dp``: non-finite zeroing ( DP mean ).

    Args:
      dp: ``fedavg`` gives ``gaussian_fixed(z, K, clip)`` or, with
        ``clip_quantile``, ``gaussian_adaptive(z, K,
        target_unclipped_quantile=clip_quantile)`` (TFF's defaults: initial
        clip 0.1, learning rate 0.2); ``ftrl`` gives
        ``DifferentiallyPrivateFactory(tree_query(dp, record_specs))``, the
        query of ``tree_aggregation(z, K, clip, record_specs)`` with the tree
        restarted every ``dp.restart_period`` rounds (if set).
      record_specs: the trainable weights' TensorSpecs (``trainable_specs``),
        needed by ``ftrl``.
      noise_seed: seed of the tree's noise (``ftrl``; None: drawn from the
        clock by TFF) or of the BLT's (``blt``; None: drawn from the OS).
        ``gaussian_*`` noise is always unseeded.
      blt: the BLT matrix of ``blt`` (``privacy.blt``).
    Returns:
      A ``tff.aggregators.UnweightedAggregationFactory``.
    """
    z, k = float(dp.noise_multiplier), float(dp.clients_per_round)
    factory = tff.aggregators.DifferentiallyPrivateFactory
    if dp.mechanism == "fedavg":
        if dp.clip_quantile is not None:
            check_dp_settings(dp)
            inner = factory.gaussian_adaptive(z, k, target_unclipped_quantile=float(dp.clip_quantile))
        else:
            inner = factory.gaussian_fixed(z, k, float(dp.clip))
    else:
        if record_specs is None:
            raise ConfigError("DP-FTRL needs the model's trainable weight specs (record_specs)")
        if dp.mechanism == "blt":
            import secrets

            from tensorflow_privacy.privacy.dp_query.normalized_query import NormalizedQuery

            from keyboard_lm.federated.blt_query import make_blt_query

            if blt is None:
                raise ConfigError("BLT-DP-FTRL needs its BLT matrix (privacy.blt.blt_for_schedule)")
            seed = secrets.randbits(62) if noise_seed is None else noise_seed
            inner = factory(NormalizedQuery(make_blt_query(blt, float(dp.clip), float(dp.noise_multiplier),
                                                           record_specs, noise_seed=seed),
                                            denominator=float(dp.clients_per_round)))
        else:
            inner = factory(tree_query(dp, record_specs, noise_seed=noise_seed))
    return UnweightedNonFiniteZeroingFactory(inner)


def build_dp_fed_avg(model_fn, dp: DPConfig, *, client_lr: float = 0.5, server_optimizer=None,
                     client_model_fn=None, client_clipnorm: float | None = None):
    """DP-FedAvg (McMahan et al. 2018): unweighted FedAvg around a DP mean.

    Clients must be sampled as the accountant assumes (Poisson with
    q = K/N, or fixed-size; ``keyboard_lm.privacy.sampling``): the noise is
    calibrated to the expected cohort K.

    Args:
      model_fn: no-argument constructor of a ``tff.learning.models.VariableModel``.
      dp: DP settings with mechanism ``fedavg``.
      client_lr: client SGD learning rate (0.5).
      server_optimizer: a ``tff.learning.optimizers`` optimizer (SGD lr 1.0,
        McMahan et al.'s plain model averaging).
      client_model_fn: client work's constructor (``process.compose_fed_avg``).
      client_clipnorm: clip each client step's gradient (``process.client_optimizer_for``).
    Returns:
      A ``tff.learning.templates.LearningProcess``.
    """
    if dp.mechanism != "fedavg":
        raise ConfigError(f"build_dp_fed_avg needs --dp fedavg, got {dp.mechanism!r}")
    return compose_fed_avg(
        model_fn, client_optimizer_for(client_lr, client_clipnorm),
        server_optimizer or tff.learning.optimizers.build_sgdm(learning_rate=1.0),
        build_dp_aggregator(dp), weighting="uniform", client_model_fn=client_model_fn)


def build_dp_ftrl(model_fn, dp: DPConfig, *, client_lr: float = 0.5, server_lr: float = 1.0,
                  server_momentum: float = 0.9, record_specs=None, noise_seed: int | None = None,
                  client_model_fn=None, client_clipnorm: float | None = None, blt: BLT | None = None):
    """DP-FTRLM (Kairouz et al. 2021): tree-aggregated noise, server SGD with momentum.

    The tree emits the residual of the noisy prefix sums each round; heavy-ball
    momentum (no Nesterov) on it at a constant learning rate is the paper's
    DP-FTRLM; ``dp.tree_restart`` starts a new tree every epoch or every P
    rounds (``tree_query``; the momentum carries over).  Clients follow a
    participation schedule, not random sampling (``sampling.ftrl_schedule``).

    Args:
      model_fn, dp: as ``build_dp_fed_avg``, mechanism ``ftrl``.
      client_lr: client SGD learning rate (0.5).
      server_lr: server learning rate (1.0).
      server_momentum: heavy-ball momentum (0.9, as in Kairouz et al.); 0 for none.
      record_specs: trainable weight specs (default ``trainable_specs(model_fn)``).
      noise_seed: seed of the tree's noise (None: from the clock).
      client_model_fn, client_clipnorm: as ``build_dp_fed_avg``.
      blt: with ``--dp blt``, the BLT matrix whose noise replaces the tree's.
    """
    if dp.mechanism not in FTRL_MECHANISMS:
        raise ConfigError(f"build_dp_ftrl needs --dp ftrl or blt, got {dp.mechanism!r}")
    if not 0 <= server_momentum < 1:
        raise ConfigError(f"server momentum must be in [0, 1), got {server_momentum}")
    specs = record_specs if record_specs is not None else trainable_specs(model_fn)
    server = tff.learning.optimizers.build_sgdm(learning_rate=server_lr, momentum=server_momentum or None)
    return compose_fed_avg(
        model_fn, client_optimizer_for(client_lr, client_clipnorm), server,
        build_dp_aggregator(dp, specs, noise_seed=noise_seed, blt=blt), weighting="uniform",
        client_model_fn=client_model_fn)


def build_dp_process(model_config, dp: DPConfig, input_spec, *, client_lr: float = 0.5, server_optimizer=None,
                     server_lr: float = 1.0, server_momentum: float = 0.9, metrics: bool = True,
                     dropout: float = 0.0, noise_seed: int | None = None, client_clipnorm: float | None = None,
                     blt: BLT | None = None):
    """The DP learning process of ``dp.mechanism`` for a keyboard model (``process.build_process``'s DP twin).

    ``server_optimizer`` applies to DP-FedAvg; DP-FTRL takes ``server_lr``
    and ``server_momentum``.
    """
    start_runtime()
    model_fn = model_fn_for(model_config, input_spec, metrics, dropout)
    client_model_fn = model_fn_for(model_config, input_spec, metrics, dropout, zero_init=True)
    if dp.mechanism == "fedavg":
        return build_dp_fed_avg(model_fn, dp, client_lr=client_lr, server_optimizer=server_optimizer,
                                client_model_fn=client_model_fn, client_clipnorm=client_clipnorm)
    return build_dp_ftrl(model_fn, dp, client_lr=client_lr, server_lr=server_lr,
                         server_momentum=server_momentum, noise_seed=noise_seed, client_model_fn=client_model_fn,
                         client_clipnorm=client_clipnorm, blt=blt)

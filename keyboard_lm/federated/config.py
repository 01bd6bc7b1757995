"""Hyper-parameters of federated training, importable without TensorFlow or TFF.

The defaults here are the recipe: ``keyboard-lm train`` reads them for its
flags and help, and a Python caller of
``keyboard_lm.federated.trainer.train_federated`` gets the same.
``process.py``, ``aggregation.py`` and ``trainer.py`` build from them.
"""

from __future__ import annotations

import dataclasses
import logging

from keyboard_lm.config_checks import check_fields, check_range
from keyboard_lm.data.limits import MAGNITUDE_MAX, MAX_ROUNDS, check_magnitude, check_seed
from keyboard_lm.errors import ConfigError

ALGORITHMS = ("fedavg", "fedsgd", "fedatt")
SERVER_OPTIMIZERS = ("sgd", "nesterov", "adam")
MEANS = ("weighted", "unweighted", "fedatt")
FEDATT_NORMS = ("flat", "spectral")


def parse_clip(value: str | float) -> str | float:
    """``adaptive`` | ``none`` | a positive L2 norm (at most ``MAGNITUDE_MAX``); raises ConfigError otherwise."""
    if isinstance(value, str) and value in ("adaptive", "none"):
        return value
    try:
        norm = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"clip must be 'adaptive', 'none' or a positive L2 norm, got {value!r}") from None
    if not 0 < norm <= MAGNITUDE_MAX:  # NaN fails too
        raise ConfigError(f"clip norm must be a positive number <= {MAGNITUDE_MAX:g}, got {value!r}")
    return norm


@dataclasses.dataclass(frozen=True)
class AggregationConfig:
    """Which parts the aggregator has.

    Attributes:
      mean: ``weighted`` (by examples, FedAvg), ``unweighted`` or ``fedatt``.
      clip: ``adaptive`` (TFF's default robust aggregation, the default),
        ``none``, or a fixed L2 norm (float).
      compression: 8-bit stochastic quantization of uploads (not with FedAtt,
        whose attention needs exact norms).
      fedatt_p: FedAtt's norm order.
      fedatt_norm: ``flat`` (the p-norm of the flattened layer) or
        ``spectral`` (Ji et al.'s code: a matrix's largest singular value).
    """

    mean: str = "weighted"
    clip: str | float = "adaptive"
    compression: bool = False
    fedatt_p: float = 2.0
    fedatt_norm: str = "flat"

    def __post_init__(self):
        if self.fedatt_norm not in FEDATT_NORMS:
            raise ConfigError(f"unknown FedAtt norm {self.fedatt_norm!r}; choose one of {', '.join(FEDATT_NORMS)}")
        if self.mean not in MEANS:
            raise ConfigError(f"unknown mean {self.mean!r}; choose one of {', '.join(MEANS)}")
        object.__setattr__(self, "clip", parse_clip(self.clip))
        if self.compression and self.mean == "fedatt":
            raise ConfigError("compressed uploads are not combined with FedAtt (its attention needs exact norms)")

    @property
    def weighted(self) -> bool:
        return self.mean == "weighted"


@dataclasses.dataclass(frozen=True)
class FederatedConfig:
    """Hyper-parameters of federated training.

    The defaults are the best federated recipe measured on Tiny Shakespeare by
    role (docs/training.md): Hard et al. 2018's FedAvgM (server
    Nesterov momentum 0.9, lr 1.0) with client SGD lr 0.5, 10 clients per
    round, plus dropout 0.2 against overfitting the few large roles, 10% of
    the training clients set aside as validation (they pick the round the run
    keeps and halve the client learning rate after an evaluation without
    gain), and the global model averaged across rounds (decay 0.99: within
    a few hundred rounds the ramp (1 + r) / (10 + r) stays below it, so the
    average spans about the last r / 9 rounds).

    Attributes:
      algorithm: ``fedavg`` (weighted by n_k, Hard et al. eq. 3), ``fedsgd``
        or ``fedatt`` (Ji et al.).
      server_optimizer: ``sgd``, ``nesterov`` (FedAvgM; momentum 0.9, lr 1.0 as
        in Hard et al.) or ``adam`` (FedAdam, Ro et al.).  FedAtt always uses
        SGD with learning rate ``fedatt_eps``.
      server_lr, server_momentum: server step size and momentum.
      server_adam_epsilon: FedAdam's epsilon (TFF's default, 1e-7; Ro et al.: 1e-8).
      client_lr: client SGD learning rate.
      client_momentum: client SGD momentum (0: none; Ji et al.'s clients: 0.5).
      client_clipnorm: clip each local step's gradient to this global L2
        norm (``federated/client_optimizer.py``); None: plain SGD.
      clients_per_round: K clients sampled uniformly per round (10).
      rounds: number of rounds (350: about 40 minutes of the default recipe
        on Tiny Shakespeare on a 2-core machine; validation kept round 325;
        at most ``MAX_ROUNDS``); from a base outside DP, 275 (``WARM_START_SERVER``).
      fedatt_p, fedatt_eps, fedatt_norm: FedAtt's norm order, step size and norm
        (``flat`` or ``spectral``, see ``AggregationConfig``).
      server_noise: standard deviation of Gaussian noise added to every
        weight of the global model after each round (Ji et al.'s eq. 6);
        needs an SGD server (FedAtt, or ``server_optimizer="sgd"``) and is not
        differential privacy (0: none).
      compression: stochastic 8-bit uniform quantization of uploads.  Its
        random rounding runs unseeded inside TFF's runtime, so a compressed
        run is not bit-reproducible (and a resumed one not bit-identical to an
        uninterrupted one); everything else about it is.
      clip: update clipping, the same for every algorithm: ``adaptive``
        (TFF's default adaptive zeroing + clipping), ``none`` or a fixed L2
        norm; see ``aggregation.py``.
      dropout: dropout on embedding and cell outputs in client training
        (Zaremba et al. 2014), as in centralized training.
      validation_fraction: share of the *training* clients set aside (never
        trained on) to choose the round the run keeps: at every evaluation
        their recall@3 decides whether the round is the best so far, as in
        centralized training.  0 trains on all of them and keeps the last
        round.  Held-out clients are never used for a decision.
      lr_decay: factor applied to the client learning rate (the server's,
        for FedSGD, which has none) after an evaluation that does not improve
        validation recall@3; 1.0 keeps it constant.  The rate lives in TFF's
        state (``LearningProcess.set_hparams``), so checkpoints and
        ``--resume`` carry it.
      weight_average: decay of an exponential moving average of the global
        model across rounds, kept by the driver (``server_average``); when > 0
        the average is what evaluation and validation see and what the run
        saves, while the server trains on its own weights (0: off).
      seed: seed of the model initialization, client sampling and shuffling
        (the held-out split has its own seed, ``SplitConfig.seed``).
    """

    algorithm: str = "fedavg"
    server_optimizer: str = "nesterov"
    server_lr: float = 1.0
    server_momentum: float = 0.9
    server_adam_epsilon: float = 1e-7
    client_lr: float = 0.5
    client_clipnorm: float | None = None
    client_momentum: float = 0.0
    clients_per_round: int = 10
    rounds: int = 350
    fedatt_p: float = 2.0
    fedatt_eps: float = 1.0
    fedatt_norm: str = "flat"
    server_noise: float = 0.0
    compression: bool = False
    clip: str | float = "adaptive"
    dropout: float = 0.2
    validation_fraction: float = 0.1
    lr_decay: float = 0.5
    weight_average: float = 0.99
    seed: int = 0

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"unknown algorithm {self.algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
        if self.server_optimizer not in SERVER_OPTIMIZERS:
            raise ConfigError(f"unknown server optimizer {self.server_optimizer!r}; "
                              f"choose one of {', '.join(SERVER_OPTIMIZERS)}")
        # Finite and below MAGNITUDE_MAX: an inf rate trains nothing and exits 0; 1e300 fails in TFF's float32.
        for name in ("server_lr", "client_lr", "fedatt_p", "fedatt_eps", "server_adam_epsilon"):
            check_magnitude(name, getattr(self, name))
        if self.client_clipnorm is not None:
            check_magnitude("client_clipnorm", self.client_clipnorm)
        check_fields(self, ("server_momentum", "client_momentum"), 0, 1, high_open=True)
        if self.client_momentum and self.algorithm == "fedsgd":
            raise ConfigError("client_momentum has no client steps to act on under FedSGD (one gradient per client)")
        check_range("server_noise", self.server_noise, 0, MAGNITUDE_MAX, kind="a standard deviation", bounds=True)
        if self.server_noise and self.algorithm != "fedatt" and self.server_optimizer != "sgd":
            raise ConfigError(f"server_noise needs an SGD server (FedAtt, or server_optimizer 'sgd'), "
                              f"got server_optimizer {self.server_optimizer!r}")
        check_range("clients_per_round", self.clients_per_round, 1)
        check_range("rounds", self.rounds, 1, MAX_ROUNDS, bounds=True)
        check_seed("seed", self.seed)
        check_fields(self, ("dropout", "validation_fraction", "weight_average"), 0, 1, high_open=True)
        check_range("lr_decay", self.lr_decay, 0, 1, low_open=True)
        object.__setattr__(self, "clip", parse_clip(self.clip))
        self.aggregation  # validates the combination (e.g. compression with FedAtt)

    @property
    def aggregation(self) -> AggregationConfig:
        """The aggregator parts this algorithm uses."""
        mean = {"fedavg": "weighted", "fedsgd": "weighted", "fedatt": "fedatt"}[self.algorithm]
        return AggregationConfig(mean=mean, clip=self.clip, compression=self.compression, fedatt_p=self.fedatt_p,
                                 fedatt_norm=self.fedatt_norm)


#: What a federated run that starts from a base (``--init-from``) changes in the recipe above, chosen by
#: ``benchmarks/warm_start_sweep.py`` on validation clients across the SpamAssassin senders, Tiny Shakespeare
#: by role, an IID re-partition of it and the embedded corpus (docs/training.md, "The federated recipe from
#: the base"). The shipped base's weights are about twice the norm of the random-weight runs the recipe above
#: was tuned on: client SGD at 0.5 diverged on the mail (round 39), and one client's local loss blew up under
#: FedAdam too, so clients step at 0.2 with each step's gradient clipped to norm 2.
WARM_START = {"client_lr": 0.2, "client_clipnorm": 2.0}
#: ... and, outside differential privacy (whose server step is the mechanism's own: DP-FedAvg's averaging,
#: DP-FTRL's momentum on the noisy sums; and whose rounds set its epsilon), the server optimizer: FedAdam
#: (Reddi et al. 2021) at 0.01, whose per-coordinate steps reach the rare words' rows that FedAvgM's shared
#: step barely moves; and 275 rounds: from the SI-CIFG base they are ahead of the CIFG base's 350 on the mail
#: and Tiny Shakespeare in every seed and even on the embedded corpus, and keep the default run in its 30
#: minutes (docs/training.md, "The base model").
WARM_START_SERVER = {"server_optimizer": "adam", "server_lr": 0.01, "rounds": 275}


#: The server learning rate each server optimizer gets when only ``--server-optimizer`` is given: the
#: averaging optimizers step by the whole (averaged) update, Adam by a fraction of its normalized one.
SERVER_LR = {"sgd": 1.0, "nesterov": 1.0, "adam": 0.01}


def without_validation_for_dp(config: "FederatedConfig", *, refuse: bool, log=None) -> "FederatedConfig":
    """``config`` with validation and learning-rate decay off, as a DP run needs them (the one home of the rule).

    Choosing a round or a rate by the validation clients' text would release
    something about them that the DP accounting does not cover. ``refuse``:
    a ConfigError when ``config`` asks for either (the command line, where the
    user set it); otherwise one line to ``log`` (default: this module's logger, INFO) and both turned off.
    """
    if not (config.validation_fraction or config.lr_decay != 1.0):
        return config
    if refuse:
        raise ConfigError("--validation-fraction and --lr-decay choose by the validation clients' text, which "
                          "--dp's accounting does not cover; a DP run keeps its last round at a constant rate")
    (log or logging.getLogger(__name__).info)(
        "differential privacy: no validation clients and a constant learning rate; the run keeps its last round")
    return dataclasses.replace(config, validation_fraction=0.0, lr_decay=1.0)


def default_federated(warm_start: bool = False, dp: bool = False) -> FederatedConfig:
    """``FederatedConfig()`` from random weights; from a base, with ``WARM_START`` (and, without DP,
    ``WARM_START_SERVER``) applied."""
    if not warm_start:
        return FederatedConfig()
    return FederatedConfig(**WARM_START, **({} if dp else WARM_START_SERVER))


@dataclasses.dataclass(frozen=True)
class LoopConfig:
    """How often the loop evaluates and saves, and when it calls a run diverged.

    Attributes:
      eval_every: evaluate held-out clients every N rounds (and at the end).
      checkpoint_every: save TFF program state at least every N rounds; also after every evaluation, every
        round kept as the best, and the last round.
      checkpoint_seconds: and whenever this many seconds have passed since the last save (0: by rounds
        only). A save costs about a small-corpus round (an fsynced program state, run.json), so saving
        every round cost 18% of a run's wall time (benchmarks/records/federated_time.md); a crash now
        loses at most about a minute, which --resume trains again.
      divergence_factor: a training loss above factor * ln(V) (the loss of a
        uniform guess) counts as divergence.
      keep_checkpoints: program states kept on disk.
    """

    eval_every: int = 25
    checkpoint_every: int = 25
    checkpoint_seconds: float = 60.0
    divergence_factor: float = 3.0
    keep_checkpoints: int = 3

    def __post_init__(self):
        check_fields(self, ("eval_every", "checkpoint_every", "keep_checkpoints"), 1)
        check_range("checkpoint_seconds", self.checkpoint_seconds, 0, 1e9, high_open=True)
        check_magnitude("divergence_factor", self.divergence_factor)

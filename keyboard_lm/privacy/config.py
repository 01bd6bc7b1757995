"""DPConfig: the differential-privacy settings of a run, validated on creation."""

import dataclasses
from typing import Optional, Union

from keyboard_lm.config_checks import check_range
from keyboard_lm.data.limits import MAGNITUDE_MAX, MAX_EPSILON
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy.sampling import restart_period

MECHANISMS = ("fedavg", "ftrl", "blt")
#: The DP-FTRL mechanisms: clients on the cyclic participation schedule, zCDP accounting, a correlated-noise
#: stream (the tree of Kairouz et al. 2021; the buffered linear Toeplitz matrix of McMahan, Xu and Zhang 2024).
FTRL_MECHANISMS = ("ftrl", "blt")

#: DP-FTRL tree restarts by name; a whole number >= 1 is a period in rounds.  The first is the default.
TREE_RESTARTS = ("none", "epoch")


def tree_restart_setting(value, flag: str = "--dp-tree-restart") -> Union[str, int]:
    """``none``, ``epoch`` or a restart period in rounds (int >= 1), from a flag's text or a Python value.

    ``none``: one tree for the whole run (DP-FTRL-NoTreeRestart in
    tensorflow_privacy's tree accountant, Kairouz et al. 2021, App. D).
    ``epoch``: a new tree every N // K rounds, the longest stretch of the
    cyclic schedule in which no client appears twice, so each tree holds at
    most one participation per client (DP-FTRL-TreeRestart).  A number P: a
    new tree every P rounds (the ``restart_period`` of tensorflow_privacy's
    DP-FTRL optimizers).

    Raises:
      ConfigError naming ``flag`` for anything else.
    """
    if isinstance(value, str) and value.strip().lower() in TREE_RESTARTS:
        return value.strip().lower()
    try:
        period = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        period = None
    if period is None or period < 1:
        raise ConfigError(f"{flag} must be {', '.join(TREE_RESTARTS)} or a number of rounds >= 1, got {value!r}")
    return period


@dataclasses.dataclass(frozen=True)
class DPConfig:
    """User-level DP settings.

    ``delta`` defaults to 1 / population**1.1 (Gboard's convention of a delta
    below 1/N). Exactly one of ``clip`` (fixed clipping) and ``clip_quantile``
    (adaptive clipping, DP-FedAvg only) is set.  ``tree_restart`` is DP-FTRL's
    (``tree_restart_setting``; None gives ``none`` for ftrl) and must stay None
    for DP-FedAvg, which has no tree.
    """

    mechanism: str
    noise_multiplier: float
    population: int
    clients_per_round: int
    clip: Optional[float] = None
    clip_quantile: Optional[float] = None
    delta: Optional[float] = None
    target_epsilon: Optional[float] = None
    tree_restart: Union[str, int, None] = None

    def __post_init__(self):
        if self.mechanism not in MECHANISMS:
            raise ConfigError(f"--dp: unknown mechanism {self.mechanism!r}; choose one of {', '.join(MECHANISMS)}")
        if self.mechanism == "ftrl":
            object.__setattr__(self, "tree_restart", tree_restart_setting(
                TREE_RESTARTS[0] if self.tree_restart is None else self.tree_restart))
        elif self.tree_restart is not None:
            raise ConfigError(f"--dp-tree-restart {self.tree_restart} applies to --dp ftrl only "
                              "(DP-FedAvg adds independent noise each round and BLT-DP-FTRL one correlated "
                              "stream; neither has a tree)")
        # NaN fails too; beyond MAGNITUDE_MAX the noise is inf in float32
        check_range("--dp-noise-multiplier", self.noise_multiplier, 0, MAGNITUDE_MAX, kind="a finite number",
                    bounds=True)
        check_range("DP population", self.population, 1)
        if not 1 <= self.clients_per_round <= self.population:
            raise ConfigError(
                f"clients per round ({self.clients_per_round}) must be between 1 and the population ({self.population})")
        if (self.clip is None) == (self.clip_quantile is None):
            raise ConfigError("give exactly one of --dp-clip and --dp-clip-quantile")
        if self.clip is not None:
            check_range("--dp-clip", self.clip, 0, MAGNITUDE_MAX, low_open=True, kind="a finite number", bounds=True)
        if self.clip_quantile is not None:
            if self.mechanism != "fedavg":
                raise ConfigError("--dp-clip-quantile (adaptive clipping) is only available with --dp fedavg")
            check_range("--dp-clip-quantile", self.clip_quantile, 0, 1, low_open=True, high_open=True)
        if self.delta is None:
            object.__setattr__(self, "delta", 1.0 / self.population ** 1.1)
        check_range("--dp-delta", self.delta, 0, 1, low_open=True, high_open=True)
        if self.target_epsilon is not None:
            check_range("--dp-target-epsilon", self.target_epsilon, 0, low_open=True)

    @property
    def restart_period(self) -> Optional[int]:
        """Rounds per DP-FTRL tree: N // K for ``epoch``, the number given, or None (one tree; and DP-FedAvg)."""
        return restart_period(self.tree_restart, self.population, self.clients_per_round)


#: Client sampling per mechanism; the first is the default.
SAMPLINGS = {"fedavg": ("poisson", "fixed"), "ftrl": ("schedule",), "blt": ("schedule",)}


@dataclasses.dataclass(frozen=True)
class DPOptions:
    """The DP settings a user gives, before the population is known.

    ``train --dp`` knows the population (training clients with text) and the
    cohort only once the corpus is encoded; ``for_population`` makes the
    ``DPConfig`` then.  Each setting is checked here already, so a bad flag
    fails before any data is read.

    Attributes:
      mechanism: ``fedavg`` (DP-FedAvg), ``ftrl`` (DP-FTRL, tree noise) or ``blt`` (DP-FTRL with
        buffered-linear-Toeplitz noise, ``privacy.blt``).
      noise_multiplier: z; None with ``target_epsilon`` set: calibrated by
        the planner to reach ``target_epsilon`` after the run's rounds.
      clip, clip_quantile: fixed L2 clip, or the target quantile of adaptive
        clipping (``fedavg`` only); exactly one.
      delta: None for 1 / population**1.1.
      sampling: ``poisson`` (default) or ``fixed`` for ``fedavg``;
        ``schedule`` (cyclic, min separation) for ``ftrl``.
      target_epsilon: the eps to calibrate z for (with ``noise_multiplier`` None).
      tree_restart: ``ftrl`` only: ``none`` (default), ``epoch`` or a period
        in rounds (``tree_restart_setting``).
      blt: ``blt`` only: the BLT's ``{"theta": [...], "omega": [...]}`` a run started with (a resumed run
        keeps its matrix); None: optimized for the run's rounds and schedule.
    """

    mechanism: str
    noise_multiplier: Optional[float] = None
    clip: Optional[float] = None
    clip_quantile: Optional[float] = None
    delta: Optional[float] = None
    sampling: Optional[str] = None
    target_epsilon: Optional[float] = None
    tree_restart: Union[str, int, None] = None
    blt: Optional[dict] = None

    def __post_init__(self):
        if self.mechanism not in MECHANISMS:
            raise ConfigError(f"--dp: unknown mechanism {self.mechanism!r}; choose one of {', '.join(MECHANISMS)}")
        if self.blt is not None and self.mechanism != "blt":
            raise ConfigError(f"BLT parameters apply to --dp blt only, not --dp {self.mechanism}")
        if (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise ConfigError("--dp needs exactly one of --dp-noise-multiplier and --dp-epsilon")
        if self.sampling is None:
            object.__setattr__(self, "sampling", SAMPLINGS[self.mechanism][0])
        if self.sampling not in SAMPLINGS[self.mechanism]:
            raise ConfigError(f"--dp-sampling {self.sampling} does not apply to --dp {self.mechanism}; "
                              f"choose {' or '.join(SAMPLINGS[self.mechanism])}")
        if self.target_epsilon is not None:
            check_range("--dp-epsilon", self.target_epsilon, 0, MAX_EPSILON, low_open=True, kind="a finite number",
                        bounds=True)
        if self.target_epsilon is not None and self.sampling == "fixed":
            raise ConfigError("--dp-epsilon calibrates z for Poisson sampling; with --dp-sampling fixed "
                              "give --dp-noise-multiplier")
        # Every single setting through DPConfig's own checks (any population will do here),
        # and the restart setting as DPConfig normalizes it ("3" -> 3, None -> "none" for ftrl).
        config = self.for_population(2**31 - 1, 1, noise_multiplier=self.noise_multiplier or 0.0)
        object.__setattr__(self, "tree_restart", config.tree_restart)

    @classmethod
    def from_record(cls, record: dict) -> "DPOptions":
        """The options a run used, from its run.json ``differential_privacy`` record (``--resume``).

        The noise multiplier is the one the run used (given or calibrated);
        runs recorded before tree restarts existed had none.
        """
        return cls(record["mechanism"], noise_multiplier=record["noise_multiplier"],
                   clip=None if record["clip_quantile"] is not None else record["clip"],
                   clip_quantile=record["clip_quantile"], delta=record["delta"], sampling=record["sampling"],
                   tree_restart=record.get("tree_restart", "none") if record["mechanism"] == "ftrl" else None,
                   blt=record.get("blt") if record["mechanism"] == "blt" else None)

    def for_population(self, population: int, clients_per_round: int,
                       noise_multiplier: Optional[float] = None) -> DPConfig:
        """The ``DPConfig`` for ``population`` clients, ``clients_per_round`` a round."""
        z = self.noise_multiplier if noise_multiplier is None else noise_multiplier
        if z is None:
            raise ConfigError("the noise multiplier is not calibrated yet (--dp-epsilon)")
        return DPConfig(self.mechanism, z, population, clients_per_round, clip=self.clip,
                        clip_quantile=self.clip_quantile, delta=self.delta, target_epsilon=self.target_epsilon,
                        tree_restart=self.tree_restart)

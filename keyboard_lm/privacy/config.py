"""DPConfig: the differential-privacy settings of a run, validated on creation."""

import dataclasses
import math
from typing import Optional

from keyboard_lm.errors import ConfigError

MECHANISMS = ("fedavg", "ftrl")


@dataclasses.dataclass(frozen=True)
class DPConfig:
    """User-level DP settings.

    ``delta`` defaults to 1 / population**1.1 (Gboard's convention of a delta
    below 1/N). Exactly one of ``clip`` (fixed clipping) and ``clip_quantile``
    (adaptive clipping, DP-FedAvg only) is set.
    """

    mechanism: str
    noise_multiplier: float
    population: int
    clients_per_round: int
    clip: Optional[float] = None
    clip_quantile: Optional[float] = None
    delta: Optional[float] = None
    target_epsilon: Optional[float] = None

    def __post_init__(self):
        if self.mechanism not in MECHANISMS:
            raise ConfigError(f"--dp: unknown mechanism {self.mechanism!r}; choose one of {', '.join(MECHANISMS)}")
        if not (self.noise_multiplier >= 0) or math.isinf(self.noise_multiplier):
            raise ConfigError(f"--dp-noise-multiplier must be a finite number >= 0, got {self.noise_multiplier}")
        if self.population < 1:
            raise ConfigError(f"DP population must be >= 1, got {self.population}")
        if not 1 <= self.clients_per_round <= self.population:
            raise ConfigError(
                f"clients per round ({self.clients_per_round}) must be between 1 and the population ({self.population})")
        if (self.clip is None) == (self.clip_quantile is None):
            raise ConfigError("give exactly one of --dp-clip and --dp-clip-quantile")
        if self.clip is not None and not (self.clip > 0) or (self.clip is not None and math.isinf(self.clip)):
            raise ConfigError(f"--dp-clip must be a finite number > 0, got {self.clip}")
        if self.clip_quantile is not None:
            if self.mechanism != "fedavg":
                raise ConfigError("--dp-clip-quantile (adaptive clipping) is only available with --dp fedavg")
            if not 0 < self.clip_quantile < 1:
                raise ConfigError(f"--dp-clip-quantile must be in (0, 1), got {self.clip_quantile}")
        if self.delta is None:
            object.__setattr__(self, "delta", 1.0 / self.population ** 1.1)
        if not 0 < self.delta < 1:
            raise ConfigError(f"--dp-delta must be in (0, 1), got {self.delta}")
        if self.target_epsilon is not None and not (self.target_epsilon > 0):
            raise ConfigError(f"--dp-target-epsilon must be > 0, got {self.target_epsilon}")

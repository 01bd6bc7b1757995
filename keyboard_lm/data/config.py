"""How a client's text becomes batches, importable without TensorFlow.

``keyboard-lm train`` reads these defaults for its flags and help.
"""

from __future__ import annotations

import dataclasses

from keyboard_lm.data.limits import check_seed
from keyboard_lm.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class ClientDataConfig:
    """How a client's text becomes batches (TFF's ``ClientSpec`` plus sequence length).

    Attributes:
      max_seq_len: tokens per example; Ro et al. use 20 (and 10).
      batch_size: examples per batch (10).
      epochs: local epochs, i.e. how often the data repeats (1).
      max_batches: cap on batches per client and round (120, Ro et al.).
      shuffle_buffer: at least this many examples are shuffled together (the
        whole client when its size is known); 0 or 1 disables shuffling.
      seed: shuffle seed; None draws a fresh one each time.
    """

    max_seq_len: int = 20
    batch_size: int = 10
    epochs: int = 1
    max_batches: int = 120
    shuffle_buffer: int = 200
    seed: int | None = None

    def __post_init__(self):
        for name in ("max_seq_len", "batch_size", "epochs", "max_batches"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.shuffle_buffer < 0:
            raise ConfigError(f"shuffle_buffer must be >= 0, got {self.shuffle_buffer}")
        if self.seed is not None:
            check_seed("seed", self.seed)

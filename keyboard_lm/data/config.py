"""How a client's text becomes batches, importable without TensorFlow.

``keyboard-lm train`` reads these defaults for its flags and help.
"""

from __future__ import annotations

import dataclasses

from keyboard_lm.config_checks import check_fields, check_range
from keyboard_lm.data.limits import check_seed


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
        check_fields(self, ("max_seq_len", "batch_size", "epochs", "max_batches"), 1)
        check_range("shuffle_buffer", self.shuffle_buffer, 0)
        if self.seed is not None:
            check_seed("seed", self.seed)

"""An exponential moving average of the global model across rounds, kept by the driver.

FedAvg's global model moves with each round's ten sampled users; the average
over recent rounds smooths that sampling noise out, as the averaged iterate
does in centralized training (Polyak & Juditsky 1992; ``WeightAverage`` in
``training.centralized``).  The server keeps training its own model; the
average is what evaluation sees, what validation chooses among and what the
run saves.  It is computed from the released global models only, so it sends
nothing new to or from clients.

The decay ramps up as min(decay, (1 + r) / (10 + r)) after round r
(``training.loop.average_decay``, shared with the centralized average), so
the first rounds' average is not dominated by the initialization.  No
TensorFlow here.
"""

from __future__ import annotations

import io
import os
import re

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import atomic_write
from keyboard_lm.training.loop import average_decay

_FILE = re.compile(r"^average_(\d+)\.npz$")


class ServerAverage:
    """Moving average of a list of weight arrays, one update per round."""

    def __init__(self, decay: float, weights, rounds: int = 0):
        if not 0.0 < decay < 1.0:
            raise ConfigError(f"weight average decay must be in (0, 1), got {decay}")
        self.decay = decay
        self.rounds = rounds
        self.weights = [np.array(w, dtype=np.float32) for w in weights]

    def update(self, weights) -> None:
        """Fold in the global model after one more round."""
        weights = list(weights)
        if len(weights) != len(self.weights):
            raise ValueError(f"the model has {len(weights)} weight arrays, the average {len(self.weights)}")
        self.rounds += 1
        d = average_decay(self.decay, self.rounds)
        for avg, w in zip(self.weights, weights):
            avg *= d
            avg += (1.0 - d) * np.asarray(w, dtype=np.float32)

    @staticmethod
    def path(directory: str, round_num: int) -> str:
        return os.path.join(directory, f"average_{round_num}.npz")

    def save(self, directory: str, round_num: int) -> None:
        """Write the average after ``round_num`` beside that round's program state (``atomic_write``)."""
        os.makedirs(directory, exist_ok=True)
        buf = io.BytesIO()
        # The decay is not stored: run.json holds it (``FederatedConfig.weight_average``).
        np.savez(buf, rounds=np.int64(self.rounds), **{f"w{i}": w for i, w in enumerate(self.weights)})
        atomic_write(self.path(directory, round_num), buf.getvalue(), mode=0o644)

    @classmethod
    def load(cls, directory: str, round_num: int, decay: float) -> "ServerAverage":
        """The average saved after ``round_num``; a clear error when the checkpoint lacks it."""
        path = cls.path(directory, round_num)
        if not os.path.exists(path):
            raise ConfigError(f"{path} is missing: the run averages its weights (weight_average {decay}), and "
                              f"round {round_num}'s average is needed to resume from its checkpoint")
        with np.load(path) as f:
            count = sum(1 for k in f.files if k.startswith("w"))
            return cls(decay, [f[f"w{i}"] for i in range(count)], rounds=int(f["rounds"]))

    @staticmethod
    def prune(directory: str, keep_rounds) -> None:
        """Delete saved averages of rounds whose program state is no longer kept."""
        keep = set(keep_rounds)
        for name in os.listdir(directory):
            m = _FILE.match(name)
            if m and int(m.group(1)) not in keep:
                os.remove(os.path.join(directory, name))

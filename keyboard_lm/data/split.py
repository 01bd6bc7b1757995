"""Deterministic train / held-out split by client (held-out clients never train)."""

from __future__ import annotations

import dataclasses

import numpy as np

from keyboard_lm.config_checks import check_range
from keyboard_lm.data.limits import SEED_MAX, check_seed
from keyboard_lm.errors import DataError


@dataclasses.dataclass(frozen=True)
class SplitConfig:
    """How clients are split.

    Attributes:
      heldout_fraction: share of clients held out for evaluation (0, 1).
      seed: seed of the permutation; the same seed and client ids give the
        same split on every machine.
    """

    heldout_fraction: float = 0.1
    seed: int = 0

    def __post_init__(self):
        check_range("heldout_fraction", self.heldout_fraction, 0, 1, low_open=True, high_open=True)
        check_seed("seed", self.seed)


def split_clients(client_ids, config: SplitConfig = SplitConfig()) -> tuple[list[str], list[str]]:
    """Return (train_ids, heldout_ids), both sorted, disjoint, covering all ids.

    The ids are sorted first so the split does not depend on reading order.
    At least one client lands on each side.
    """
    ids = sorted(set(client_ids))
    if len(ids) < 2:
        raise DataError(f"need at least 2 clients to split into train and held-out, got {len(ids)}")
    n_heldout = min(len(ids) - 1, max(1, int(round(len(ids) * config.heldout_fraction))))
    order = np.random.RandomState(config.seed).permutation(len(ids))
    heldout = sorted(ids[i] for i in order[:n_heldout])
    train = sorted(ids[i] for i in order[n_heldout:])
    return train, heldout


def validation_clients(train_ids, fraction: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """Split the training clients into (fit_ids, validation_ids) for early stopping.

    Held-out clients are never touched: model selection uses a share of the
    training clients only.  Deterministic under ``seed`` (a permutation
    independent of the held-out one, so the two never line up).
    """
    check_range("validation fraction", fraction, 0, 1, low_open=True, high_open=True)
    # Wrapped into numpy's seed range: any valid seed, up to SEED_MAX, has a validation split.
    return split_clients(train_ids, SplitConfig(fraction, (seed + 7919) % (SEED_MAX + 1)))

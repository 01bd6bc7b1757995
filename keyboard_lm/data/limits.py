"""Numeric limits that every settings object shares (no TensorFlow; in the lowest layer that holds configs,
so the data, training, federated and privacy configs and the command line all read them from here).

A setting outside these ranges does not train a worse model, it breaks the
run somewhere far from the flag: a seed of 2**32 or more fails inside numpy's
seeding, a rate or a norm beyond float32's range becomes ``inf`` in a
TensorFlow or TFF literal (a traceback, or a run that "trains" nothing). The
config dataclasses check their fields against these limits when they are made,
and the command line gives the same limits to its flags, so a bad value is one
line naming the flag before any data is read or any model is built.
"""

from __future__ import annotations

import math
import numbers

from keyboard_lm.errors import ConfigError

#: The largest seed: numpy's ``RandomState`` (and ``tf.keras.utils.set_random_seed``) takes seeds below 2**32.
SEED_MAX = 2**32 - 1
#: The ceiling of a rate, a step size, a norm or a noise scale: far above any useful value (a server step of
#: 1e4 already diverges in a round), far below float32's 3.4e38, so no such setting reaches TensorFlow as inf.
MAGNITUDE_MAX = 1e6
#: The most rounds a federated run (and the privacy planner) takes: months of rounds at seconds each, and the
#: largest count the DP accountants calibrate in seconds (DP-FTRL's schedule is linear in the rounds).
MAX_ROUNDS = 100_000
#: The largest target epsilon of differential privacy: e^100 bounds nothing an attacker learns, and far above
#: it the RDP accountant's arithmetic fails (negative divergences at eps 1e308).
MAX_EPSILON = 100.0


def check_seed(name: str, value) -> None:
    """Raise ConfigError unless ``value`` is a whole number in [0, SEED_MAX]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value <= SEED_MAX:
        raise ConfigError(f"{name} must be a whole number in [0, 2**32 - 1], got {value!r}")


def check_magnitude(name: str, value, *, zero_ok: bool = False) -> None:
    """Raise ConfigError unless ``value`` is a finite number in (0, MAGNITUDE_MAX] ([0, ...] with ``zero_ok``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (value >= 0 if zero_ok else value > 0) or value > MAGNITUDE_MAX:
        raise ConfigError(f"{name} must be {'>=' if zero_ok else '>'} 0 and <= {MAGNITUDE_MAX:g}, got {value!r}")

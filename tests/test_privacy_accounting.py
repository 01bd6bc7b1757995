import math

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import accounting
from keyboard_lm.privacy.config import DPConfig


def test_single_participation_tree_matches_kairouz_formula_and_ro_gap():
    # z = 7 over 3000 rounds, one participation: ceil(log2 3001) / 98 = 12 / 98.
    rho = accounting.tree_rho_single_participation(7.0, 3000)
    assert rho == pytest.approx(12 / 98)
    assert rho < 1.05 / 5  # Ro et al.'s 1.05 needs several participations


def test_published_rho_converts_to_published_epsilon():
    # es-ES Gboard launch: rho 0.81 -> eps 8.90 at delta 1e-10.
    assert accounting.rho_to_epsilon(0.81, 1e-10) == pytest.approx(8.90, abs=0.05)


def test_fedavg_epsilon_grows_with_rounds_and_falls_with_noise():
    e1 = accounting.fedavg_epsilon(1.0, 0.01, 100, 1e-6)
    e2 = accounting.fedavg_epsilon(1.0, 0.01, 400, 1e-6)
    e3 = accounting.fedavg_epsilon(2.0, 0.01, 400, 1e-6)
    assert 0 < e1 < e2 and e3 < e2
    fixed = accounting.fedavg_epsilon(1.0, 0.01, 100, 1e-6, sampling="fixed", population=1000)
    assert fixed > 0


@pytest.mark.parametrize("kwargs,word", [
    (dict(noise_multiplier=-1.0), "noise-multiplier"),
    (dict(clip=0.0), "clip"),
    (dict(delta=1.0), "delta"),
    (dict(clients_per_round=2000), "population"),
    (dict(target_epsilon=0.0), "epsilon"),
])
def test_dpconfig_refuses_bad_settings(kwargs, word):
    base = dict(mechanism="fedavg", noise_multiplier=1.0, population=1000, clients_per_round=10, clip=1.0)
    base.update(kwargs)
    with pytest.raises(ConfigError, match=word):
        DPConfig(**base)


def test_dpconfig_default_delta():
    cfg = DPConfig(mechanism="ftrl", noise_multiplier=7.0, population=1000, clients_per_round=10, clip=5.0)
    assert cfg.delta == pytest.approx(1000 ** -1.1)


@pytest.mark.parametrize("z,q,rounds", [(30.0, 0.5, 100), (15.0, 0.1, 1000), (100.0, 1.0, 10)])
def test_fedavg_epsilon_is_sound_at_large_noise(z, q, rounds):
    # A fine fractional grid of orders made dp_accounting report negative divergences here.
    eps = accounting.fedavg_epsilon(z, q, rounds, 1e-5)
    assert 0 < eps < accounting.fedavg_epsilon(z / 2, q, rounds, 1e-5)

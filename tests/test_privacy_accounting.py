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


def test_published_gboard_vector_from_the_schedules_tree_sensitivity():
    # es-ES launch: z = 7, T = 2000, at most 6 participations >= 313 rounds apart: rho 0.81, eps 8.90
    # at delta 1e-10 (a bound over all such patterns). The cyclic schedule with 6 participations
    # 333 apart is one of those patterns; its exact rho must sit at (and not above) the bound.
    from keyboard_lm.privacy.sampling import ftrl_participation, tree_sensitivity

    assert ftrl_participation(334, 1, 2000) == (6, 333)
    rho = tree_sensitivity(334, 1, 2000) / (2 * 7.0 ** 2)
    assert 0.79 < rho <= 0.81
    assert accounting.rho_to_epsilon(rho, 1e-10) == pytest.approx(8.90, abs=0.1)


def test_ro_et_al_rho_needs_about_six_participations_five_hundred_rounds_apart():
    # Ro et al.: z = 7 over 3000 rounds reported as rho = 1.05. One participation gives 0.12;
    # the cyclic schedule with 6 participations 499 apart gives 1.02, 7 participations 498 apart 1.06.
    from keyboard_lm.privacy.sampling import ftrl_participation, tree_sensitivity

    k = 6500
    six, seven = 3_250_000, 3_249_999  # populations: 500 K and just under
    assert ftrl_participation(six, k, 3000) == (6, 499) and ftrl_participation(seven, k, 3000) == (7, 498)
    rho6 = tree_sensitivity(six, k, 3000) / 98
    rho7 = tree_sensitivity(seven, k, 3000) / 98
    assert rho6 < 1.05 < rho7 and rho7 - rho6 < 0.05

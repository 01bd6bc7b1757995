"""benchmarks/privacy/dp_noise_in_model.py: the noise a DP run leaves in its model, against the mechanism's matrix
through the server step."""

import json

import numpy as np
import pytest

from benchmarks.privacy.dp_noise_in_model import noise_left
from keyboard_lm.privacy.blt import BLT

pytestmark = pytest.mark.bench


def test_the_noise_left_in_the_model_is_the_mechanisms_through_the_server_step(tmp_path):
    blt = BLT((0.7, 0.3), (0.3, 0.2))
    rounds, z, clip, k, lr, m = 6, 1.2, 0.5, 10, 1.0, 0.9
    (tmp_path / "run.json").write_text(json.dumps({
        "parameters": 100, "federated": {"server_lr": lr, "server_momentum": m},
        "differential_privacy": {"mechanism": "blt", "noise_multiplier": z, "population": 100,
                                 "clients_per_round": k, "clip": clip, "delta": 1e-5, "rounds": rounds,
                                 "epsilon": 3.0, "blt": blt.to_dict()}}))
    got = noise_left(str(tmp_path), coordinates=50000)["std_per_coordinate"]
    # model = -lr * sum_s a_s w_s with a_s = (1 - m^(T - s + 1)) / (1 - m), w = C^-1 z', z' ~ N(0, (z clip / K)^2)
    a = np.array([(1 - m ** (rounds - s)) / (1 - m) for s in range(rounds)])
    cinv = np.linalg.inv(blt.matrix(rounds))
    want = lr * (z * clip / k) * np.linalg.norm(cinv.T @ a)
    assert got == pytest.approx(want, rel=0.02)

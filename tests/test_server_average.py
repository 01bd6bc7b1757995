"""The driver's moving average of the global model (federated.server_average) and its checkpoints."""

import os

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.server_average import ServerAverage
from keyboard_lm.models.run_dir import load_run
from tests.test_federated_training import SMALL, _rows


def test_average_follows_the_ramped_decay_from_the_initial_weights():
    rng = np.random.default_rng(0)
    init = [rng.normal(size=(3, 2)), rng.normal(size=4)]
    rounds = [[rng.normal(size=(3, 2)), rng.normal(size=4)] for _ in range(30)]
    avg = ServerAverage(0.9, init)
    expected = [w.copy() for w in init]
    for r, weights in enumerate(rounds, start=1):
        avg.update(weights)
        d = min(0.9, (1 + r) / (10 + r))
        expected = [d * e + (1 - d) * w for e, w in zip(expected, weights)]
    assert avg.rounds == 30
    for a, e in zip(avg.weights, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)



def test_early_rounds_weigh_the_new_model_and_late_ones_the_history():
    """The ramp: after round 1 the average is 2/11 the initial model and 9/11 the new one; from round 80 on
    (ramp 81/90 = 0.9) the decay itself, 0.9, holds."""
    avg = ServerAverage(0.9, [np.zeros(2)])
    avg.update([np.ones(2)])
    np.testing.assert_allclose(avg.weights[0], 9 / 11, rtol=1e-6)
    late = ServerAverage(0.9, [np.zeros(2)], rounds=99)
    late.update([np.ones(2)])  # round 100: min(0.9, 101 / 110) = 0.9
    np.testing.assert_allclose(late.weights[0], 0.1, rtol=1e-6)
    mid = ServerAverage(0.9, [np.zeros(2)], rounds=29)
    mid.update([np.ones(2)])  # round 30: the ramp, 31 / 40, is still below the decay
    np.testing.assert_allclose(mid.weights[0], 9 / 40, rtol=1e-6)


def test_average_saves_loads_and_prunes(tmp_path):
    avg = ServerAverage(0.5, [np.ones((2, 2)), np.zeros(3)])
    avg.update([np.zeros((2, 2)), np.ones(3)])
    for r in (1, 2, 3):
        avg.save(str(tmp_path), r)
    back = ServerAverage.load(str(tmp_path), 3, 0.5)
    assert back.rounds == 1 and all(np.array_equal(a, b) for a, b in zip(avg.weights, back.weights))
    ServerAverage.prune(str(tmp_path), [2, 3])
    assert sorted(os.listdir(tmp_path)) == ["average_2.npz", "average_3.npz"]
    with pytest.raises(ConfigError, match="average_1.npz is missing"):
        ServerAverage.load(str(tmp_path), 1, 0.5)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_average_decay_out_of_range_is_refused(bad):
    with pytest.raises(ConfigError, match="decay must be in"):
        ServerAverage(bad, [np.zeros(2)])


def test_averaged_federated_run_saves_the_average_and_resumes_it(tmp_path):
    """weights.npz is the average, not the server's model; --resume picks the average up from the checkpoint."""
    args = [*SMALL, "--server-optimizer", "adam", "--server-lr", "0.01", "--dropout", "0", "--eval-every", "1",
            "--validation-fraction", "0", "--weight-average", "0.9"]
    full, part = str(tmp_path / "full"), str(tmp_path / "part")
    assert main(["train", "--out", full, "--rounds", "4", *args]) == 0
    run = load_run(full)
    assert run.info["federated"]["weight_average"] == 0.9
    checkpoints = os.path.join(full, "checkpoints")
    # Averages are kept for exactly the program states kept (3 by default).
    assert sorted(n for n in os.listdir(checkpoints) if n.startswith("average_")) == [
        "average_2.npz", "average_3.npz", "average_4.npz"]
    saved = ServerAverage.load(checkpoints, 4, 0.9)
    assert saved.rounds == 4
    trainable = [w for name, w in run.weights.items()]
    assert any(np.allclose(w, saved.weights[0]) for w in trainable if w.shape == saved.weights[0].shape)
    assert main(["train", "--out", part, "--rounds", "2", *args]) == 0
    assert main(["train", "--out", part, "--resume", "--rounds", "4"]) == 0
    a, b = _rows(full), _rows(part)
    for key in ("loss", "recall_at_3"):
        assert float(a[-1][key]) == pytest.approx(float(b[-1][key]), rel=1e-4, abs=1e-6), key
    wa, wb = load_run(full).weights, load_run(part).weights
    for name in wa:
        np.testing.assert_allclose(wa[name], wb[name], rtol=1e-4, atol=1e-6)


def test_averaged_and_plain_runs_differ_after_the_same_rounds(tmp_path):
    """The same seed and rounds: only the averaging (on by default) differs, so the saved models differ."""
    args = [*SMALL, "--dropout", "0", "--validation-fraction", "0", "--rounds", "3"]
    plain, averaged = str(tmp_path / "plain"), str(tmp_path / "avg")
    assert main(["train", "--out", plain, *args, "--weight-average", "0"]) == 0
    assert main(["train", "--out", averaged, *args]) == 0
    assert load_run(averaged).info["federated"]["weight_average"] == 0.99
    assert sorted(n for n in os.listdir(os.path.join(plain, "checkpoints")) if n.startswith("average_")) == []
    wp, wa = load_run(plain).weights, load_run(averaged).weights
    assert any(not np.allclose(wp[n], wa[n]) for n in wp)

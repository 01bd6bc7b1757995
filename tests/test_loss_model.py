"""The planner's loss model: reading runs, fitting, held-out error, the compute-aware plan and its CLI.

The fitter is checked on run directories written from a known law (so what it must recover is known);
the real fit on the project's own runs is benchmarks/privacy/loss_model_runs.py's (docs/privacy.md).
"""
import csv
import json

import numpy as np
import pytest

from keyboard_lm.cli.main import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import compute_plan as cp
from keyboard_lm.privacy import loss_model as lm

LAW = {"E": 3.0, "A": 0.4, "alpha": 0.5, "B": 6.0, "beta": 0.7, "G": 0.1, "gamma": 0.8, "eta": 0.4}


def law(params, rounds, ratio):
    return (LAW["E"] + LAW["A"] * (params / 1e6) ** -LAW["alpha"] + LAW["B"] * rounds ** -LAW["beta"]
            + LAW["G"] * (1000 * ratio) ** LAW["gamma"] * rounds ** LAW["eta"])


def write_run(root, name, params, units, vocab, k, z, clip=0.1, rounds=30, noise=0.01, seed=0, dp_clip=None,
              init_from=None):
    d = root / name
    d.mkdir()
    rng = np.random.default_rng(seed)
    dp = {"mechanism": "ftrl", "noise_multiplier": z, "clip": clip if dp_clip is None else dp_clip,
          "clients_per_round": k}
    (d / "run.json").write_text(json.dumps({"parameters": params, "model": {"units": units, "vocab_size": vocab},
                                            "differential_privacy": dp, "init_from": init_from}))
    with open(d / "metrics.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "train_loss", "clients", "elapsed_seconds"])
        for t in range(1, rounds + 1):
            w.writerow([t, law(params, t, z * clip / k) + noise * rng.standard_normal(), k, t * k * params * 1e-8])
    return str(d)


@pytest.fixture()
def runs(tmp_path):
    out = {}
    for size, (params, units, vocab) in {"s": (300_000, 96, 2000), "m": (700_000, 256, 5000),
                                         "l": (1_400_000, 670, 10000)}.items():
        for i, (k, z) in enumerate([(50, 0.0), (100, 1.2), (200, 4.8), (50, 2.4)]):
            name = f"{size}_k{k}_z{z:g}"
            out[name] = write_run(tmp_path, name, params, units, vocab, k, z, seed=i)
    return out


def test_fit_recovers_the_law_and_predicts_held_out_runs(runs):
    curves = {n: lm.read_run(d) for n, d in runs.items()}
    c = curves["m_k100_z1.2"]
    assert c.ratio == pytest.approx(1.2 * 0.1 / 100) and c.rounds[0] == lm.SKIP_ROUNDS + 1 and c.rounds[-1] == 30
    held = ["m_k100_z1.2", "s_k200_z4.8"]
    model = lm.fit([c for n, c in curves.items() if n not in held], [curves[n] for n in held])
    assert model.fit_rmse < 0.02  # the noise added is 0.01 per round, averaged over 5
    # the size and noise exponents, the noise term's growth with the rounds among them, are recovered
    for name in ("alpha", "gamma", "eta"):
        assert model.theta[name] == pytest.approx(LAW[name], abs=0.1), name
    assert {h["run"] for h in model.heldout} == set(held)
    for h in model.heldout:
        assert abs(h["relative_error"]) < 0.01 < abs(h["constant_relative_error"])  # beats knowing nothing
    for params, rounds, ratio in ((500_000, 25, 0.003), (1_400_000, 30, 0.0005)):  # inside the fitted ranges
        assert float(model.predict(params, rounds, ratio)) == pytest.approx(law(params, rounds, ratio), rel=0.02)
    assert model.seconds_per_client_step(700_000) == pytest.approx(700_000 * 1e-8, rel=0.05)


def test_runs_the_model_cannot_use_are_refused_by_name(tmp_path):
    adaptive = write_run(tmp_path, "adaptive", 300_000, 96, 2000, 50, 1.0, dp_clip="adaptive")
    with pytest.raises(ConfigError, match="adaptive: .*fixed clip"):
        lm.read_run(adaptive)
    short = write_run(tmp_path, "short", 300_000, 96, 2000, 50, 1.0, rounds=6)
    with pytest.raises(ConfigError, match="short: 6 rounds"):
        lm.read_run(short)
    with pytest.raises(ConfigError, match="nothing: not a finished training run"):
        lm.read_run(str(tmp_path / "nothing"))
    three = [lm.read_run(write_run(tmp_path, f"r{i}", 300_000, 96, 2000, 50, z)) for i, z in enumerate((0, 1, 2))]
    with pytest.raises(ConfigError, match="leave-one-out .* at least 4 runs, got 3"):
        lm.leave_one_out(lm.fit(three), three)
    with pytest.raises(ConfigError, match="at least 3 runs"):
        lm.fit([lm.read_run(write_run(tmp_path, "one", 300_000, 96, 2000, 50, 1.0))])


def test_candidate_sizes_fit_the_file_budget_and_the_paper_size_is_one():
    sizes = cp.candidate_sizes(vocab_sizes=(2000, 5000, 10000))
    assert all(s["estimated_bytes"] <= 1_468_006 for s in sizes)
    assert {s["vocab_size"] for s in cp.candidate_sizes()} == {10000}  # the loss model's vocabulary only
    paper = [s for s in sizes if s["units"] == 670 and s["vocab_size"] == 10000]
    assert paper and paper[0]["params"] == 1_412_250  # Hard et al.'s 1.4M, the closed form of the project's CIFG
    assert not any(s["units"] == 800 and s["vocab_size"] == 10000 for s in sizes)


def test_the_compute_aware_plan_trades_cohort_rounds_and_size_and_the_cli_prints_it(runs, tmp_path, capsys):
    held = "m_k100_z1.2"
    model_file = str(tmp_path / "loss_model.json")
    png = str(tmp_path / "fit.png")
    assert main(["privacy", "fit", *runs.values(), "--heldout", held, "--out", model_file, "--png", png,
                 "--leave-one-out"]) == 0
    out = capsys.readouterr().out
    assert f"held out {held}" in out and "fitted on 11 runs" in out and "closer than the constant on" in out
    loo = lm.LossModel.load(model_file).leave_one_out
    assert len(loo) == 11 and all(abs(h["relative_error"]) < 0.01 for h in loo)
    assert open(png, "rb").read(4) == b"\x89PNG"
    model = lm.LossModel.load(model_file)
    rows = cp.frontier(model, epsilon=10, delta=1e-5, population=6387, mechanism="ftrl", clip=0.1,
                       client_steps=20_000)
    assert rows == sorted(rows, key=lambda r: r["predicted_loss"])
    assert all(r["clients_per_round"] * r["rounds"] <= 20_000 for r in rows)
    # more noise per update at the same steps cannot predict a lower loss
    for r in rows:
        assert r["predicted_loss"] >= float(model.predict(r["params"], r["rounds"], 0.0))
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387", "--mechanism",
                 "ftrl", "--clip", "0.1", "--loss-model", model_file, "--budget-hours", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "plan:" in out and "predicted loss" in out.replace("pred. loss", "predicted loss") and "eps" in out
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387",
                 "--budget-hours", "1"]) == 2
    assert "--loss-model" in capsys.readouterr().err
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387", "--loss-model",
                 model_file, "--budget-hours", "1", "--budget-client-steps", "100"]) == 2
    assert "one compute budget" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387", "--loss-model",
                 str(tmp_path / "bad.json"), "--budget-hours", "1"]) == 2
    assert "not a keyboard_lm loss model" in capsys.readouterr().err


BASE = {"name": "base", "weights_sha256": "f2913a3970f87eb2e9e505c400fa923ed4925274110b0bfce3acefe1cafa45fc"}


def test_runs_of_one_size_from_one_base_fit_without_the_size_term_and_plan_that_size(tmp_path, capsys):
    # warm starts from one base: one size, the noise and the rounds vary
    runs = {f"k{k}_z{z:g}": write_run(tmp_path, f"k{k}_z{z:g}", 1_412_250, 670, 10000, k, z, seed=i, init_from=BASE)
            for i, (k, z) in enumerate([(50, 0.0), (100, 1.2), (50, 2.4), (100, 8.8), (300, 13.5), (300, 0.0)])}
    curves = {n: lm.read_run(d) for n, d in runs.items()}
    assert curves["k50_z0"].start == "base:f2913a3970f8"
    model = lm.fit([c for n, c in curves.items() if n != "k100_z1.2"], [curves["k100_z1.2"]])
    assert model.one_size and model.start == "base:f2913a3970f8"
    assert model.theta["A"] == 0 and model.theta["alpha"] == 0
    # the law's size term at this size is a constant the other terms absorb: predictions inside the runs hold
    # (late rounds: the fit sees a 5-round mean, above the law where the curve still bends)
    for rounds, ratio in ((22, 0.0), (25, 0.003), (30, 0.0045)):
        assert float(model.predict(1_412_250, rounds, ratio)) == pytest.approx(law(1_412_250, rounds, ratio), rel=0.02)
    assert abs(model.heldout[0]["relative_error"]) < 0.01
    rows = cp.frontier(model, epsilon=10, delta=1e-5, population=6387, mechanism="ftrl", clip=0.1,
                       client_steps=20_000)
    assert {(r["units"], r["params"]) for r in rows} == {(670, 1_412_250)}  # no other size is ranked
    assert model.ranges == {"rounds": 30, "ratio": pytest.approx(8.8 * 0.1 / 100)}
    for r in rows:  # 20,000 client-steps buy up to 400 rounds: beyond the 30 fitted is flagged, as is more noise
        assert ("T > 30" in r["outside_fit"]) == (r["rounds"] > 30)
        assert any(o.startswith("z*C/K >") for o in r["outside_fit"]) == (r["noise_batch_ratio"] > 0.0088 * 1.0001)
    with pytest.raises(ConfigError, match="fitted on one size .*670 units"):
        cp.frontier(model, epsilon=10, delta=1e-5, population=6387, mechanism="ftrl", clip=0.1,
                    client_steps=20_000, sizes=cp.candidate_sizes())
    model_file = str(tmp_path / "one_size.json")
    assert main(["privacy", "fit", *runs.values(), "--heldout", "k100_z1.2", "--out", model_file,
                 "--leave-one-out"]) == 0
    out = capsys.readouterr().out
    assert "no size term" in out and "closer than the constant on 5 of 5" in out
    loo = lm.LossModel.load(model_file).leave_one_out
    assert [h["run"] for h in loo] == [n for n in runs if n != "k100_z1.2"]  # every fitted run, none held out
    assert all(abs(h["relative_error"]) < 0.02 for h in loo)
    assert lm.LossModel.load(model_file).sizes == model.sizes
    png = tmp_path / "plan.png"
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387", "--mechanism",
                 "ftrl", "--clip", "0.1", "--loss-model", model_file, "--budget-client-steps", "20000",
                 "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "one model size" in out and "plan: 670 units" in out and f"plan plot: {png}" in out
    assert "(beyond the fitted runs: T > 30" in out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_runs_from_different_starts_are_refused_by_name(tmp_path):
    warm = lm.read_run(write_run(tmp_path, "warm", 1_412_250, 670, 10000, 100, 1.2, init_from=BASE))
    cold = [lm.read_run(write_run(tmp_path, f"cold{i}", 1_412_250, 670, 10000, 50, z)) for i, z in enumerate((0, 1, 2))]
    with pytest.raises(ConfigError, match=r"different weights .*base:f2913a3970f8: warm.*random: cold0"):
        lm.fit(cold, [warm])
    other = lm.read_run(write_run(tmp_path, "small", 300_000, 96, 10000, 50, 1.0, init_from=BASE))
    same = [lm.read_run(write_run(tmp_path, f"b{i}", 1_412_250, 670, 10000, 50, z, init_from=BASE))
            for i, z in enumerate((0, 1, 2))]
    with pytest.raises(ConfigError, match="held-out run small: 300,000 parameters"):
        lm.fit(same, [other])


def test_runs_of_one_name_in_two_directories_are_told_apart(tmp_path, capsys):
    for k, d in ((50, "k50"), (300, "k300")):
        (tmp_path / d).mkdir()
        for i, z in enumerate((0.0, 1.0, 2.0)):
            write_run(tmp_path / d, f"z{z:g}", 1_412_250, 670, 10000, k, z, seed=i, init_from=BASE)
    runs = [str(tmp_path / d / f"z{z:g}") for d in ("k50", "k300") for z in (0.0, 1.0)]
    runs.append(str(tmp_path / "k50" / "z2"))  # a name given once is named by its directory too
    out = str(tmp_path / "m.json")
    assert main(["privacy", "fit", *runs, "--heldout", "k300/z1", "--out", out]) == 0
    assert "held out k300/z1" in capsys.readouterr().out
    assert lm.LossModel.load(out).fitted_on == ["k50/z0", "k50/z1", "k300/z0", "k50/z2"]
    assert main(["privacy", "fit", *runs, runs[0], "--out", out]) == 2
    assert "runs given twice: k50/z0" in capsys.readouterr().err

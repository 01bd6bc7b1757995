"""McKenna et al.'s own loss-model fit (monotone tables, log-space interpolation) beside the parametric form."""

import json

import numpy as np
import pytest

from keyboard_lm.cli.main import main
from keyboard_lm.privacy import isotonic_loss as il
from keyboard_lm.privacy import compute_plan as cp
from keyboard_lm.privacy import loss_model as lm
from tests.test_loss_model import law, write_run


def test_pava_is_the_least_squares_monotone_fit():
    np.testing.assert_allclose(il.pava([1, 3, 2, 4]), [1, 2.5, 2.5, 4])
    np.testing.assert_allclose(il.pava([5, 4, 6, 1], decreasing=True), [5, 5, 5, 1])
    y = np.random.default_rng(0).standard_normal(30)
    fit = il.pava(y)
    assert np.all(np.diff(fit) >= -1e-12) and fit.mean() == pytest.approx(y.mean())


def test_the_table_is_monotone_in_both_and_keeps_what_already_is():
    rng = np.random.default_rng(1)
    noisy = np.add.outer(np.arange(4) * 0.5, -np.log(np.arange(1, 11))) + 0.2 * rng.standard_normal((4, 10))
    t = il.monotone_table(noisy)
    assert np.all(np.diff(t, axis=1) <= 1e-9) and np.all(np.diff(t, axis=0) >= -1e-9)
    clean = np.add.outer(np.arange(4) * 0.5, -np.log(np.arange(1, 11)))
    np.testing.assert_allclose(il.monotone_table(clean), clean)


def test_fit_reproduces_the_runs_and_interpolates_between_them(tmp_path):
    dirs = [write_run(tmp_path, f"k{k}_z{z:g}", 1_412_250, 670, 10000, k, z, seed=i, noise=0.0)
            for i, (k, z) in enumerate([(100, 0.0), (100, 1.2), (100, 2.4), (100, 4.8)])]
    curves = [lm.read_run(d) for d in dirs]
    model = il.fit_isotonic(curves)
    # the noiseless run's curve falls throughout: it comes back as it is
    assert model.predict(curves[0].params, 30, 0.0) == pytest.approx(curves[0].loss[-1], rel=1e-6)
    for c in curves[1:]:  # a curve that climbs late (the noise term grows with T) is read as its best so far
        got = model.predict(c.params, c.rounds[-1], c.ratio)
        assert min(c.loss) - 1e-9 <= got <= c.loss[-1] + 1e-9
    # between two ratios the prediction lies between their values (log-space interpolation)
    lo, hi = curves[1], curves[2]
    mid = model.predict(lo.params, 30, (lo.ratio * hi.ratio) ** 0.5)
    assert lo.loss[-1] < mid < hi.loss[-1]
    assert model.outside(lo.params, 50, 0.01) == ["T > 30", "z*C/K > 0.0048"]
    loo = il.leave_one_out_isotonic(curves)
    assert [h["run"] for h in loo] == [c.name for c in curves]
    assert loo[-1]["outside"] == ["z*C/K > 0.0024"]  # the noisiest run lies beyond the others


def test_privacy_fit_puts_the_isotonic_errors_beside_the_parametric_ones(tmp_path, capsys):
    runs = [write_run(tmp_path, f"k{k}_z{z:g}", 1_412_250, 670, 10000, k, z, seed=i)
            for i, (k, z) in enumerate([(50, 0.0), (100, 1.2), (50, 2.4), (100, 8.8), (300, 13.5)])]
    out_file = str(tmp_path / "m.json")
    assert main(["privacy", "fit", *runs, "--heldout", "k100_z1.2", "--out", out_file, "--leave-one-out",
                 "--isotonic"]) == 0
    text = capsys.readouterr().out
    assert "isotonic (McKenna et al.'s fit)" in text and "held out k100_z1.2" in text
    record = json.loads(open(out_file).read())
    iso = record["isotonic"]
    assert [h["run"] for h in iso["heldout"]] == ["k100_z1.2"] and len(iso["leave_one_out"]) == 4
    held = iso["heldout"][0]  # inside the runs' ratios: no extrapolation, between its neighbours' values
    model = il.fit_isotonic([lm.read_run(d) for d in runs if not d.endswith("k100_z1.2")])
    assert held["outside"] == []
    assert model.predict(1_412_250, 30, 0.0) <= held["predicted"] <= model.predict(1_412_250, 30, 13.5 * 0.1 / 300)
    assert held["relative_error"] == pytest.approx((held["predicted"] - held["measured"]) / held["measured"])
    assert lm.LossModel.load(out_file).fitted_on  # the planner still reads the parametric model from the file


def test_a_flops_budget_buys_client_steps_at_six_parameters_per_token(tmp_path, capsys):
    import csv

    runs = [write_run(tmp_path, f"k{k}_z{z:g}", 1_412_250, 670, 10000, k, z, seed=i)
            for i, (k, z) in enumerate([(50, 0.0), (100, 1.2), (50, 2.4), (100, 8.8)])]
    for d in runs:  # 8 examples of 20 tokens per client a round
        rows = list(csv.DictReader(open(f"{d}/metrics.csv")))
        with open(f"{d}/metrics.csv", "w", newline="") as f:
            w = csv.DictWriter(f, [*rows[0], "examples"])
            w.writeheader()
            for r in rows:
                w.writerow({**r, "examples": 8 * int(r["clients"])})
    curves = [lm.read_run(d) for d in runs]
    assert curves[0].tokens_per_client_step == 160
    model = lm.fit(curves)
    per_step = lm.flops_per_client_step(model, 1_412_250)
    assert per_step == 6 * 1_412_250 * 160
    rows = cp.frontier(model, epsilon=10, delta=1e-5, population=6387, mechanism="ftrl", clip=0.1,
                       flops=per_step * 5000, cohorts=[50, 100])
    assert {r["client_steps"] for r in rows} == {5000} and all(r["flops"] == per_step * 5000 for r in rows)
    out_file = str(tmp_path / "m.json")
    assert main(["privacy", "fit", *runs, "--out", out_file]) == 0
    assert main(["privacy", "plan", "--epsilon", "10", "--delta", "1e-5", "--population", "6387", "--mechanism",
                 "ftrl", "--clip", "0.1", "--loss-model", out_file, "--budget-flops", f"{per_step * 5000:g}"]) == 0
    assert "training FLOPs (6 x parameters x tokens)" in capsys.readouterr().out

"""`privacy field`: McKenna et al.'s accounting-only vector fields over this project's budgets."""

import json
import math

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy import field as fl
from keyboard_lm.privacy.planner import plan


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_each_cell_is_the_planners_noise_batch_ratio(mechanism):
    result = fl.field("privacy", cohorts=[20, 80], columns=[1.0, 4.0], delta=1e-5, rounds=30, mechanism=mechanism,
                      population=2000, clip=0.5)
    for i, k in enumerate(result["cohorts"]):
        for j, eps in enumerate(result["columns"]):
            row = plan(eps, 1e-5, 2000, 30, mechanism=mechanism, clients_per_round=[k], clip=0.5)[0]
            assert result["ratio"][i][j] == pytest.approx(row["noise_batch_ratio"])
            assert result["z"][i][j] == pytest.approx(row["noise_multiplier"])
    # more privacy budget, less noise on every row; a larger cohort, a lower ratio in every column
    r = np.array(result["ratio"])
    assert (np.diff(r, axis=1) < 0).all() and (np.diff(r, axis=0) < 0).all()


def test_gains_are_the_relative_decrease_one_step_along_each_axis():
    ratio = [[8.0, 4.0, 1.0], [2.0, None, 0.5], [1.0, 1.0, 1.0]]
    along_columns, along_rows = fl.gains(ratio)
    assert along_columns.shape == along_rows.shape == (2, 2)
    assert along_columns[0, 0] == pytest.approx(1.0)   # 8 -> 4: halved, +100%
    assert along_columns[0, 1] == pytest.approx(3.0)   # 4 -> 1
    assert along_rows[0, 0] == pytest.approx(3.0)      # 8 -> 2
    assert math.isnan(along_rows[0, 1]) and math.isnan(along_columns[1, 0])  # an empty cell draws no arrow
    assert along_rows[1, 0] == pytest.approx(1.0)      # 2 -> 1


def test_a_cohort_larger_than_the_population_is_an_empty_cell_with_its_reason():
    result = fl.field("data", cohorts=[100, 400], columns=[200, 800], delta=1e-5, rounds=10, mechanism="ftrl",
                      epsilon=4.0)
    assert result["ratio"][1][0] is None and result["ratio"][1][1] is not None
    assert "more than the population 200" in result["empty"]["400,200"]
    assert result["gain_column"][0][0] is not None and result["gain_row"][0][0] is None
    text = fl.format_field(result)
    assert "| 400 | - |" in text


@pytest.mark.parametrize("kwargs,message", [
    (dict(columns=[4.0, 1.0]), "strictly increasing"),
    (dict(columns=[1.0]), "at least two"),
    (dict(columns=None), "give --epsilons"),
    (dict(population=None), "needs --population"),
    (dict(cohorts=[10, 20.5]), "whole numbers"),
    (dict(delta=1.5), "--delta"),
])
def test_bad_grids_name_the_flag_and_what_is_wrong(kwargs, message):
    args = dict(cohorts=[10, 20], columns=[1.0, 2.0], delta=1e-5, rounds=10, mechanism="ftrl", population=500)
    args.update(kwargs)
    with pytest.raises(ConfigError, match=message):
        fl.field("privacy", **args)


def test_cli_prints_the_table_writes_json_and_the_plot(tmp_path, capsys):
    png = tmp_path / "field.png"
    base = ["privacy", "field", "--vs", "data", "--delta", "1e-5", "--rounds", "20", "--clients-per-round",
            "25,50,100", "--populations", "500,1000,2000", "--epsilon", "2", "--mechanism", "ftrl"]
    assert main([*base, "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "noise-batch ratio z*C/K (rows K, columns N" in out and "| 25 |" in out
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert main([*base, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["column_axis"] == "population" and len(result["gain_row"]) == 2
    with pytest.raises(SystemExit):
        main([*base[:-2], "--populations", "500,abc"])
    assert "comma-separated" in capsys.readouterr().err

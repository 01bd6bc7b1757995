"""The demo's rate sweep: its rates are read strictly and its pick is read from validation clients only."""

from __future__ import annotations

import pytest

from benchmarks.recipes import demo_sweep


def test_rates_are_positive_finite_numbers_or_one_line_naming_the_bad_one(capsys):
    for bad in ("0.01,x", "0", "-1", "nan", "inf"):
        with pytest.raises(SystemExit) as exit_:
            demo_sweep.main(["--server-lrs", bad])
        assert exit_.value.code == 2 and "--server-lrs" in capsys.readouterr().err, bad


def test_the_last_row_with_a_validation_evaluation_is_read(tmp_path):
    (tmp_path / "metrics.csv").write_text("round,recall_at_3,val_recall_at_3\n4,0.30,0.31\n5,,\n8,0.40,0.42\n9,,\n")
    assert demo_sweep.last_evaluation(str(tmp_path))["round"] == "8"
    (tmp_path / "metrics.csv").write_text("round,recall_at_3,val_recall_at_3\n1,,\n")
    with pytest.raises(SystemExit, match="no validation evaluation"):
        demo_sweep.last_evaluation(str(tmp_path))

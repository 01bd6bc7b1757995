"""Ji et al.'s Table II benchmark: each algorithm's arguments train as their protocol says."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.ji_table2 import ji_table2  # noqa: E402

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("algorithm", ["FedAvg", "FedSGD"])
def test_each_algorithm_trains_with_jis_client_and_server(tmp_path, algorithm):
    from keyboard_lm.cli import main

    args = ji_table2.train_args(algorithm, 0.5, 1, 1, 1, str(tmp_path / "run"))
    assert args[args.index("--clients-per-round") + 1] == "45"  # half of the 90 training clients
    # the same arguments on the embedded corpus at a toy size (the GRU's sizes given after Ji's 300)
    start = args.index("--out")
    toy = ["train", *args[start:], "--format", "default", "--partition", "iid", "--num-clients", "20",
           "--units", "16", "--embedding-dim", "16", "--vocab-size", "200", "--max-batches", "2",
           "--clients-per-round", "3"]
    assert main(toy) == 0
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    fed = info["federated"]
    assert (fed["algorithm"], fed["server_optimizer"], fed["server_noise"], fed["clip"]) == (
        algorithm.lower(), "sgd", 0.001, "none")
    assert info["model"]["model_type"] == "gru"
    if algorithm == "FedAvg":
        assert (fed["client_momentum"], fed["client_lr"], info["client_data"]["epochs"]) == (0.5, 0.01, 5)
    else:
        assert fed["client_momentum"] == 0.0


def test_the_best_validation_round_is_the_lowest_validation_loss(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.csv").write_text("round,perplexity,val_loss\n1,\n5,300.0,5.9\n10,250.0,5.7\n15,260.0,5.8\n")
    assert ji_table2.best_validation_row(str(out)) == {"round": 10.0, "perplexity": 250.0, "val_loss": 5.7}


def test_seeds_outside_the_protocols_are_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["ji_table2.py", "--seeds", "0,3", "--collect"])
    with pytest.raises(SystemExit) as exit_:
        ji_table2.main()
    assert exit_.value.code == 2
    assert "--seeds 0,3: choose from 0, 1, 2" in capsys.readouterr().err


def test_the_step_size_control_is_fedavg_at_fedatts_eps_and_shows_once_run(tmp_path, monkeypatch, capsys):
    """FedAvg stepping by 1.2 (FedAtt's eps) tells attention from step size; it trains only when named."""
    args = ji_table2.train_args("FedAvg 1.2", 0.1, 0, 50, 5, str(tmp_path / "c"))
    assert args[args.index("--server-lr") + 1] == "1.2" and args[args.index("--algorithm") + 1] == "fedavg"
    fedavg = ji_table2.train_args("FedAvg", 0.1, 0, 50, 5, str(tmp_path / "c"))
    fedavg[fedavg.index("--server-lr") + 1] = "1.2"
    assert args == fedavg  # nothing else differs
    assert ji_table2.run_dir("w", "FedAvg 1.2", 0.1, 2) == os.path.join("w", "fedavg-1.2_c0.1_seed2")
    collect = type("Args", (), {"work": str(tmp_path), "rounds": 50})
    assert "FedAvg 1.2" not in ji_table2.collect(collect)[1]
    os.makedirs(ji_table2.run_dir(str(tmp_path), "FedAvg 1.2", 0.1, 0))
    text = ji_table2.collect(collect)[1]
    assert "| fraction C | FedAtt | FedAvg | FedSGD | FedAvg 1.2 |" in text and "Control (not Ji's)" in text
    os.rmdir(ji_table2.run_dir(str(tmp_path), "FedAvg 1.2", 0.1, 0))  # only its kept record left
    from benchmarks.common import run_records as _records
    with open(_records.record_path(ji_table2.run_dir(str(tmp_path), "FedAvg 1.2", 0.1, 0)), "w") as f:
        json.dump({"best": None, "curve": [], "diverged_at": None, "finished": True}, f)
    assert "| FedAvg 1.2 |" in ji_table2.collect(collect)[1]
    monkeypatch.setattr(sys, "argv", ["ji_table2.py", "--algorithms", "FedAvg 2", "--collect"])
    with pytest.raises(SystemExit):
        ji_table2.main()
    assert "--algorithms FedAvg 2: choose from FedAtt, FedAvg, FedSGD, FedAvg 1.2" in capsys.readouterr().err


def test_a_run_that_diverged_after_its_kept_round_counts_and_the_cell_says_so(tmp_path):
    """Ji's protocol keeps each run's best validation round, so a later divergence does not drop the run."""
    from benchmarks.common import run_records as _records

    def record(name, curve, diverged_at):
        path = _records.record_path(str(tmp_path / name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"best": None, "curve": curve, "diverged_at": diverged_at, "finished": diverged_at is None}, f)
        return str(tmp_path / name)

    rows = [{"round": 5, "perplexity": 900.0, "val_loss": 6.9}, {"round": 10, "perplexity": 800.0, "val_loss": 6.7}]
    late = record("late", rows, 33)
    done = record("done", [{**r, "perplexity": r["perplexity"] - 100} for r in rows], None)
    early = record("early", [], 2)
    assert ji_table2.kept_result(late) == {"round": 10, "perplexity": 800.0, "diverged_at": 33}
    assert ji_table2.kept_result(done) == {"round": 10, "perplexity": 700.0}
    assert ji_table2.kept_result(early) == "diverged"
    one = {0: ji_table2.kept_result(late)}
    assert ji_table2.cell(one) == "800.0 (1 seed; diverged after the kept round, at round 33)"
    three = {0: ji_table2.kept_result(late), 1: ji_table2.kept_result(done), 2: "diverged"}
    assert ji_table2.cell(three) == ("750.0 ± 70.7 (2 seeds; 1 diverged after the kept round, at round 33; "
                                     "1 diverged before any evaluation)")
    assert ji_table2.cell({}) == "not run" and ji_table2.cell({0: "diverged"}) == "diverged"
    assert ji_table2.cell({0: ji_table2.kept_result(done), 1: None}) == "700.0 (1 seed; 1 never evaluated)"


def test_seed_ratios_pair_each_seed_that_kept_a_round_in_both_runs():
    """A seed draws the same start, cohorts and noise for every algorithm, so the report pairs runs by seed."""
    data = {"FedAtt C=0.1": {0: {"round": 50, "perplexity": 500.0}, 1: {"round": 50, "perplexity": 540.0},
                             2: "diverged"},
            "FedAvg C=0.1": {0: {"round": 50, "perplexity": 550.0}, 1: {"round": 45, "perplexity": 540.0},
                             2: {"round": 50, "perplexity": 560.0}},
            "FedAvg 1.2 C=0.1": {0: {"round": 50, "perplexity": 505.0}},
            "FedAtt C=0.5": {}, "FedAvg C=0.5": {}}
    ratios = ji_table2.seed_ratios(data, [("FedAtt", "FedAvg"), ("FedAvg 1.2", "FedAtt"), ("FedAtt", "FedSGD")])
    assert ratios == {"FedAtt / FedAvg at C = 0.1": {0: pytest.approx(500 / 550), 1: 1.0},
                      "FedAvg 1.2 / FedAtt at C = 0.1": {0: 1.01}}

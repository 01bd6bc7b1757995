"""Ro et al.'s Table 2 benchmark: its protocol reaches `train` as Ro's FedAdam, and the overtaking round."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.ro_table2 import ro_table2  # noqa: E402

pytestmark = pytest.mark.bench


def test_the_protocol_flags_train_ros_fedadam_from_random_weights(tmp_path):
    from keyboard_lm.cli import main

    args = ro_table2.train_args("mail", "si-cifg", 0.1, 0.001, 2, 2, 3, 2, str(tmp_path / "run"))
    assert "--init-from" not in args and args[args.index("--model") + 1] == "si-cifg"
    # the same protocol on the embedded corpus, at a toy size
    corpus_end = args.index("--out")
    small = ["train", *args[corpus_end:], "--format", "default", "--units", "16", "--embedding-dim", "8",
             "--vocab-size", "200", "--max-batches", "2"]
    assert main(small) == 0
    fed = json.loads((tmp_path / "run" / "run.json").read_text())["federated"]
    assert (fed["server_optimizer"], fed["server_lr"], fed["server_adam_epsilon"], fed["client_lr"]) == (
        "adam", 0.001, 1e-8, 0.1)
    assert (fed["clip"], fed["client_clipnorm"], fed["dropout"], fed["weight_average"], fed["lr_decay"]) == (
        "none", None, 0.0, 0.0, 1.0)
    assert (fed["seed"], fed["clients_per_round"], fed["rounds"]) == (2, 3, 2)


def _rows(values):
    return [{"round": float(r), "perplexity": p} for r, p in values]


def test_overtaking_round_is_where_si_stays_below_cifg_on_the_seed_mean():
    cifg = [_rows([(25, 500), (50, 400), (75, 300)]), _rows([(25, 520), (50, 380), (75, 320)])]
    si = [_rows([(25, 480), (50, 420), (75, 290)]), _rows([(25, 500), (50, 400), (75, 300)])]
    # round 25: si below; round 50: si 410 above cifg 390; round 75: below -> stays below from 75
    assert ro_table2.overtakes({"cifg": cifg, "si-cifg": si}) == 75
    # the other way round: below at 50 only, above again at 75 -> never
    assert ro_table2.overtakes({"cifg": si, "si-cifg": cifg}) is None
    never = [_rows([(25, 900), (50, 900), (75, 900)])]
    assert ro_table2.overtakes({"cifg": cifg[:1], "si-cifg": never}) is None


@pytest.mark.parametrize("lines,diverged", [(["round 3 ...", "error: training diverged at round 4"], True),
                                            (["round 3 ...", "run saved"], False)])
def test_a_diverged_sweep_run_counts_as_a_result_with_infinite_loss(tmp_path, lines, diverged):
    out = tmp_path / "run"
    (tmp_path / "run.log").write_text("\n".join(lines))
    assert ro_table2.diverged(str(out)) is diverged
    if diverged:
        assert ro_table2.validation_loss(str(out)) == float("inf")


def _sweep_run(work, model, c, s, val_loss=None, diverged=False):
    out = ro_table2.run_dir(str(work), "mail", "sweep", model, c, s, 0)
    os.makedirs(out)
    best = {} if val_loss is None else {"round": 50, "val_loss": val_loss}
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"best": best, "final_metrics": {"perplexity": 900.0}}, f)
    with open(out + ".log", "w") as f:
        f.write("error: training diverged at round 9\n" if diverged else "run saved\n")


def test_a_pair_whose_seed_diverges_gives_way_to_the_sweeps_next(tmp_path):
    _sweep_run(tmp_path, "cifg", 0.1, 0.01, 6.7)
    _sweep_run(tmp_path, "cifg", 0.5, 0.001, 7.4)
    _sweep_run(tmp_path, "cifg", 0.1, 0.001, 7.5)
    _sweep_run(tmp_path, "cifg", 1.0, 0.01, diverged=True)
    assert ro_table2.ranked_pairs(str(tmp_path), "mail", "cifg") == [(0.1, 0.01), (0.5, 0.001), (0.1, 0.001)]
    trained = []

    def run(corpus, model, c, s, seed, rounds, cohort, eval_every, out):
        if os.path.exists(out):  # as `ensure`: a finished or diverged run is read, not retrained
            return
        trained.append((c, s, seed))
        os.makedirs(out)
        with open(out + ".log", "w") as f:  # seed 1 diverges at the best pair, the next pair trains through
            f.write("error: training diverged at round 100\n" if (c, s, seed) == (0.1, 0.01, 1) else "run saved\n")

    ro_table2.seeds_phase(str(tmp_path), "mail", "cifg", 300, 10, 25, run=run)
    # seed 2 of the ruled-out pair is not trained
    assert trained == [(0.1, 0.01, 0), (0.1, 0.01, 1), (0.5, 0.001, 0), (0.5, 0.001, 1), (0.5, 0.001, 2)]
    assert ro_table2.pairs_in_order(str(tmp_path), "mail", "cifg") == [(0.1, 0.01), (0.5, 0.001)]
    assert ro_table2.diverged_at(ro_table2.run_dir(str(tmp_path), "mail", "seeds", "cifg", 0.1, 0.01, 1)) == 100
    # run again: nothing left to train
    ro_table2.seeds_phase(str(tmp_path), "mail", "cifg", 300, 10, 25, run=run)
    assert len(trained) == 5


def test_a_model_with_no_stable_pair_is_reported_at_the_sweeps_pick_with_every_seed(tmp_path):
    _sweep_run(tmp_path, "cifg", 0.1, 0.01, 6.7)
    _sweep_run(tmp_path, "cifg", 0.5, 0.001, 7.4)
    trained = []

    def run(corpus, model, c, s, seed, rounds, cohort, eval_every, out):
        if os.path.exists(out):
            return
        trained.append((c, s, seed))
        os.makedirs(out)
        with open(out + ".log", "w") as f:  # seed 0 diverges at every pair
            f.write("error: training diverged at round 100\n" if seed == 0 else "run saved\n")

    assert not ro_table2.no_stable_pair(str(tmp_path), "mail", "cifg")
    ro_table2.seeds_phase(str(tmp_path), "mail", "cifg", 300, 10, 25, run=run)
    # each pair stops at its diverged seed 0; then the sweep's pick has its other seeds run
    assert trained == [(0.1, 0.01, 0), (0.5, 0.001, 0), (0.1, 0.01, 1), (0.1, 0.01, 2)]
    assert ro_table2.no_stable_pair(str(tmp_path), "mail", "cifg")
    assert ro_table2.reported_pair(str(tmp_path), "mail", "cifg") == (0.1, 0.01)
    ro_table2.seeds_phase(str(tmp_path), "mail", "cifg", 300, 10, 25, run=run)
    assert len(trained) == 4


def test_a_diverged_seeds_curve_is_infinite_from_its_divergence_on():
    rows = _rows([(25, 500), (50, 400)])
    extended = ro_table2.diverged_curve(rows, [25, 50, 75, 100])
    assert [r["round"] for r in extended] == [25, 50, 75, 100]
    assert extended[:2] == rows and all(r["perplexity"] == float("inf") for r in extended[2:])
    # SI-CIFG stays below a CIFG whose only seed diverged after round 50, from the round it first is below
    si = [_rows([(25, 520), (50, 390), (75, 380), (100, 370)])]
    assert ro_table2.overtakes({"cifg": [extended], "si-cifg": si}) == 50


def test_a_runs_record_outlives_its_directory(tmp_path):
    """A new checkout has no runs/: what the report reads of a finished run is in its record."""
    import shutil

    from benchmarks.common import run_records as _records

    out = ro_table2.run_dir(str(tmp_path), "mail", "seeds", "cifg", 0.1, 0.01, 0)
    assert not ro_table2.is_result(out)
    os.makedirs(out)
    with open(os.path.join(out, "run.json"), "w") as f:  # stopped part-way: not a result, no record
        json.dump({"best": {"round": 25, "val_loss": 6.9}, "federated": {"rounds": 300}, "rounds_done": 40,
                   "final_metrics": {"perplexity": 500.0}}, f)
    with open(os.path.join(out, "metrics.csv"), "w") as f:
        f.write("round,perplexity,val_loss\n25,520.0,6.9\n50,480.0,6.8\n")
    assert not ro_table2.is_result(out) and not os.path.exists(_records.record_path(out))
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump({"best": {"round": 50, "val_loss": 6.8}, "federated": {"rounds": 300}, "rounds_done": 300,
                   "final_metrics": {"perplexity": 480.0}}, f)
    before = (ro_table2.is_result(out), ro_table2.validation_loss(out), ro_table2.kept_round(out), ro_table2.curve(out))
    assert before[:3] == (True, 6.8, 50) and [r["round"] for r in before[3]] == [25.0, 50.0]
    # the record has no held-out figures and the run is gone: said, not guessed
    shutil.rmtree(out)
    after = (ro_table2.is_result(out), ro_table2.validation_loss(out), ro_table2.kept_round(out), ro_table2.curve(out))
    assert after == before
    with pytest.raises(SystemExit, match="no held-out figures and its run"):
        _records.heldout(out, ["--format", "default"])


def test_records_of_runs_under_runs_are_kept_in_the_repository(tmp_path, monkeypatch):
    from benchmarks.common import run_records as _records

    monkeypatch.chdir(tmp_path)
    assert _records.record_path(os.path.join("runs", "ro_table2", "mail", "seeds", "x")) == os.path.join(
        _records.RECORDS, "ro_table2", "mail", "seeds", "x.json")
    assert _records.record_path(str(tmp_path / "elsewhere" / "x")) == str(tmp_path / "elsewhere" / "x.record.json")


def test_held_out_users_are_named_by_a_stable_hash_not_their_address():
    from benchmarks.common import run_records as _records

    a = _records.pseudonymous({"pooled": {"n": 2}, "clients": {"jo@example.org": {"n": 1}, "al@example.org": {"n": 1}}})
    b = _records.pseudonymous({"pooled": {"n": 1}, "clients": {"jo@example.org": {"n": 3}}})
    assert "example.org" not in json.dumps(a) and len(a["clients"]) == 2
    assert set(b["clients"]) < set(a["clients"])  # the same user, the same key: runs still pair


def test_the_sweep_ranks_pairs_that_trained_by_validation_loss_and_drops_diverged_ones(tmp_path):
    """What the selection does with a record: a diverged run or one never run is not ranked, the rest are ordered
    by the validation loss of the round each kept."""
    work = str(tmp_path / "work")
    records = {(0.1, 0.001): (7.48, None), (0.1, 0.01): (6.77, None), (0.5, 0.001): (7.43, None),
               (0.5, 0.01): (6.10, 30), (1.0, 0.01): (float("nan"), None)}  # (1.0, 0.001) never ran
    for (c, s), (loss, diverged_at) in records.items():
        out = ro_table2.run_dir(work, "mail", "sweep", "cifg", c, s, 0)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out + ".record.json", "w", encoding="utf-8") as f:
            json.dump({"best": {"val_loss": loss}, "diverged_at": diverged_at}, f)
    assert ro_table2.ranked_pairs(work, "mail", "cifg") == [(0.1, 0.01), (0.5, 0.001), (0.1, 0.001)]
    diverged = ro_table2.run_dir(work, "mail", "sweep", "cifg", 0.5, 0.01, 0)
    assert ro_table2.validation_loss(diverged) == float("inf")


def test_the_committed_sweep_records_rank_as_the_result_file_reports(monkeypatch):
    """The sweep's runs were lost with a checkout and their records restored from its report: ranked by the code,
    they give the order of the losses the result file printed, so the seeds phase resumes with the same pairs."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.chdir(root)
    with open(os.path.join(root, "benchmarks", "results", "ro_table2", "ro_table2.json"), encoding="utf-8") as f:
        result = json.load(f)
    for corpus in ("mail", "shakespeare"):
        for model in ("cifg", "si-cifg"):
            losses = {(c, s): result[corpus]["sweep"][f"{model} c{c:g} s{s:g}"]
                      for c in ro_table2.CLIENT_LRS for s in ro_table2.SERVER_LRS}
            reported = sorted((loss, pair) for pair, loss in losses.items() if loss is not None)
            assert ro_table2.ranked_pairs(os.path.join("runs", "ro_table2"), corpus, model) == \
                [pair for _, pair in reported], (corpus, model)

"""A result collected from runs trained earlier says when and where those runs trained (benchmarks/common/runs.py
``trained``), not only the collection step's date and machine."""

import json
import os
import socket

import pytest

from benchmarks.common import result_file, run_records
from benchmarks.common.runs import seed_of, seeds_line, trained

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def federated_run(tmp_path_factory):
    """A two-round federated run at a toy size: the federated trainer writes TensorBoard events."""
    from keyboard_lm.cli import main

    out = str(tmp_path_factory.mktemp("collected") / "run")
    assert main(["train", "--format", "default", "--units", "16", "--embedding-dim", "8", "--vocab-size", "200",
                 "--rounds", "2", "--clients-per-round", "2", "--eval-every", "2", "--out", out]) == 0
    return out


def test_a_federated_run_gives_its_start_finish_and_host(federated_run):
    t = trained(federated_run)
    assert t["sessions"] == 1 and t["hosts"] == [socket.gethostname()]
    assert t["started"] is not None and t["finished"] is not None and t["started"] <= t["finished"]
    assert t["training_seconds"] > 0 and t["train_command"]


def test_a_centralized_run_gives_its_finish_and_seconds_and_no_invented_start(small_run):
    t = trained(small_run)
    assert t["started"] is None and t["hosts"] == [] and t["sessions"] == 0  # no event files to read them from
    assert t["finished"] is not None and t["training_seconds"] > 0


def test_a_directory_without_a_run_gives_blanks_not_guesses(tmp_path):
    t = trained(str(tmp_path))
    assert (t["started"], t["finished"], t["training_seconds"], t["hosts"], t["sessions"], t["train_command"]) == (
        None, None, None, [], 0, None)


def test_the_result_file_carries_the_training_runs_beside_the_collection(federated_run, tmp_path):
    runs = [trained(federated_run)]
    seeds = seeds_line({"toy": federated_run}, "none drawn here")
    json_path, md_path = result_file.write("collected", {"x": 1}, "table", str(tmp_path), runs, seeds=seeds)
    with open(json_path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["trained"] == runs and doc["date"] and doc["machine"] and doc["seeds"] == seeds
    with open(md_path, encoding="utf-8") as f:
        header = f.read().split("\n\n")[1]
    assert f"- seeds: {seeds}\n" in header
    assert f"- trained: 1 runs, {runs[0]['started']} to {runs[0]['finished']}, on host {socket.gethostname()}" in header
    assert not os.path.exists(os.path.join(federated_run, "collected.json"))  # the run directory is only read


def test_a_run_without_a_seed_flag_has_trains_default_seed(federated_run, tmp_path):
    assert seed_of(federated_run).startswith("0")  # train's --seed default, the run given none
    assert seed_of(str(tmp_path)) == "not recorded"
    assert seeds_line({"a": federated_run}, "nothing drawn").startswith("nothing drawn; training seeds: a 0")


def test_a_result_file_refuses_a_blank_seeds_line(tmp_path):
    with pytest.raises(ValueError, match="seeds is blank"):
        result_file.write("blank", {}, "table", str(tmp_path), seeds=" ")
    assert not os.path.exists(tmp_path / "blank.json")


def test_the_trained_line_of_a_study_comes_from_the_records_that_hold_it(tmp_path):
    work = tmp_path / "study"
    work.mkdir()
    held = {"run_dir": "x", "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-02T00:00:00+00:00",
            "hosts": ["h"]}
    (work / "a.record.json").write_text(json.dumps({"finished": True, "trained": held}))
    (work / "b.record.json").write_text(json.dumps({"finished": True}))  # written before records kept it
    assert run_records.trained_of(str(work)) == [held]
    assert run_records.trained_of(str(tmp_path / "none")) is None

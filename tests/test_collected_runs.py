"""A result collected from runs trained earlier says when and where those runs trained (benchmarks/common/runs.py
``trained``), not only the collection step's date and machine."""

import json
import os
import socket

import pytest

from benchmarks.common import result_file
from benchmarks.common.runs import trained

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
    json_path, md_path = result_file.write("collected", {"x": 1}, "table", str(tmp_path), runs)
    with open(json_path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["trained"] == runs and doc["date"] and doc["machine"]
    with open(md_path, encoding="utf-8") as f:
        header = f.read().split("\n\n")[1]
    assert f"- trained: 1 runs, {runs[0]['started']} to {runs[0]['finished']}, on host {socket.gethostname()}" in header
    assert not os.path.exists(os.path.join(federated_run, "collected.json"))  # the run directory is only read

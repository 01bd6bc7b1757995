"""benchmarks/tools/run_snapshot.py: a centralized run saved as files, restored on another machine (a new
directory), resumes as the run would have gone on."""

import csv
import json
import os

import numpy as np
import pytest

from benchmarks.tools import run_snapshot
from keyboard_lm.cli import main
from keyboard_lm.models.run_dir import load_run
from tests.conftest import write_word_chain_users

RECIPE = ["--centralized", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--optimizer", "adam",
          "--lr", "0.05", "--ngram-teacher", "0", "--dropout", "0", "--weight-drop", "0", "--weight-average", "0.9"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A corpus of 60 users; a run of three epochs and one stopped after two."""
    root = tmp_path_factory.mktemp("snap")
    words = "we they see hold call send read keep make find good new old long time here".split()
    write_word_chain_users(root / "users.jsonl", 60, 6, 1, words, 8)
    recipe = ["--data", str(root / "users.jsonl"), "--format", "jsonl", *RECIPE]
    assert main(["train", "--out", str(root / "full"), "--epochs", "3", *recipe]) == 0
    assert main(["train", "--out", str(root / "two"), "--epochs", "2", *recipe]) == 0
    return root


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("exact", [True, False])
def test_a_restored_snapshot_resumes_as_the_run_would_have(runs, tmp_path, exact):
    snap, again = str(tmp_path / "snap"), str(tmp_path / "again")
    argv = ["save", str(runs / "two"), snap] + (["--exact"] if exact else [])
    assert run_snapshot.main(argv) == 0
    with open(os.path.join(snap, "snapshot.json"), encoding="utf-8") as f:
        index = json.load(f)
    assert index["epoch"] == 2 and ("bfloat16" in {e["dtype"] for e in index["tensors"]}) != exact
    with open(os.path.join(snap, "run.json"), encoding="utf-8") as f:
        source = json.load(f)["data"]["source"]["path"]
    assert source == run_snapshot.repo_relative(str(runs / "users.jsonl"))  # inside the repository: relative
    assert run_snapshot.main(["restore", snap, again]) == 0
    assert main(["train", "--out", again, "--resume", "--epochs", "3"]) == 0
    a, b = _rows(runs / "full"), _rows(again)
    assert [r["epoch"] for r in b] == ["1", "2", "3"]
    tol = dict(rel=1e-4, abs=1e-6) if exact else dict(rel=2e-2, abs=2e-3)
    for key in ("train_loss", "loss", "recall_at_3"):
        assert float(a[-1][key]) == pytest.approx(float(b[-1][key]), **tol), key
    ra, rb = load_run(str(runs / "full")), load_run(again)
    for name in ra.weights:
        np.testing.assert_allclose(ra.weights[name], rb.weights[name], rtol=tol["rel"] * 10, atol=tol["abs"] * 10)


def test_a_path_inside_the_repository_is_kept_relative_to_it():
    inside = os.path.join(run_snapshot.REPO, "build", "base_corpus_v2", "corpus.jsonl")
    assert run_snapshot.repo_relative(inside) == os.path.join("build", "base_corpus_v2", "corpus.jsonl")
    outside = os.path.join(os.path.dirname(run_snapshot.REPO), "elsewhere.jsonl")
    assert run_snapshot.repo_relative(outside) == outside


def test_bfloat16_rounding_is_to_nearest_and_keeps_the_exponent_range():
    x = np.array([1.0, -3.14159, 1e-30, 3e38, 0.0, 1 + 2**-9], np.float32)
    back = run_snapshot.from_bfloat16(run_snapshot.to_bfloat16(x))
    np.testing.assert_allclose(back, x, rtol=2**-8)
    assert back[2] != 0 and np.isfinite(back[3])


def test_a_damaged_or_misplaced_snapshot_is_one_line_and_exit_2(runs, tmp_path, capsys):
    snap = str(tmp_path / "snap")
    assert run_snapshot.main(["save", str(runs / "two"), snap]) == 0
    assert run_snapshot.main(["restore", snap, str(runs / "full")]) == 2  # not an empty directory
    assert "exists and is not empty" in capsys.readouterr().err
    with open(os.path.join(snap, "checkpoint.npz"), "r+b") as f:
        f.truncate(100)
    assert run_snapshot.main(["restore", snap, str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("run_snapshot: ") and "not a readable run snapshot" in err and "\n" not in err
    assert run_snapshot.main(["save", str(tmp_path), str(tmp_path / "y")]) == 2
    assert "no epoch checkpoint to snapshot" in capsys.readouterr().err

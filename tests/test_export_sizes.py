"""benchmarks/export/export_sizes.py: each run exported by the package, its parts summing to the file, and the
vocabulary it names for a file over the budget exporting under it."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, paper_size_run

pytestmark = pytest.mark.bench


def test_sizes_by_part_and_the_vocabulary_that_fits(tmp_path):
    runs = [paper_size_run(tmp_path, m, bias_seed=0) for m in ("cifg", "si-cifg")]
    budget = 1_450_000  # under both paper-size files: each names a vocabulary that fits
    done = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "export", "export_sizes.py"), *runs,
                           "--budget-bytes", str(budget), "--name", "sizes", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "out" / "sizes.json", encoding="utf-8") as f:
        rows = {r["model_type"]: r for r in json.load(f)["rows"]}
    for r in rows.values():
        assert r["embedding"] + r["recurrent_cell"] + r["projection"] + r["vocabulary_and_metadata"] \
            + r["overhead"] == r["total"]
        assert r["margin"] == budget - r["total"] < 0
        fits = r["fits"]
        assert 9_800 < fits["vocab_size"] < 10_000 and fits["bytes"] <= budget
    assert rows["si-cifg"]["overhead"] > rows["cifg"]["overhead"]  # more operators in its gates
    assert rows["si-cifg"]["fits"]["vocab_size"] < rows["cifg"]["fits"]["vocab_size"]
    assert "--vocab-size" in (tmp_path / "out" / "sizes.md").read_text(encoding="utf-8")

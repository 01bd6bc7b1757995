"""The extended tier (tests/conftest.py's EXTENDED) names tests that exist: a renamed test would otherwise move
back into the default tier, or a typo leave a slow one there, without anyone seeing it."""

import os
import re

from tests.conftest import EXTENDED, REPO


def test_every_extended_entry_names_a_test_file_and_function():
    for entry in EXTENDED:
        path, _, case = entry.partition("::")
        text = open(os.path.join(REPO, "tests", path), encoding="utf-8").read()  # a missing file fails here
        name = case.split("[", 1)[0]
        assert not name or re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{entry}: no such test"


def test_dev_sh_test_leaves_out_the_extended_and_bench_tiers_and_ci_runs_both():
    dev = open(os.path.join(REPO, "dev.sh"), encoding="utf-8").read()
    assert '-m "not extended and not bench"' in dev and '-m "extended or bench"' in dev
    ci = open(os.path.join(REPO, ".ci", "run"), encoding="utf-8").read()
    assert "bash dev.sh test\n" in ci and "bash dev.sh test-extended" in ci

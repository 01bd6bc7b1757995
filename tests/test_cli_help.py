"""The command line does not move while the code under it does: every command's --help equals the pinned
copy in tests/golden/cli_help.txt (made by tests/golden/make_cli_help.py before the refactoring)."""

import difflib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))

import make_cli_help  # noqa: E402


def test_every_commands_help_is_the_pinned_one(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    with open(make_cli_help.OUT, encoding="utf-8") as f:
        pinned = f.read()
    now = make_cli_help.all_help()
    diff = "".join(difflib.unified_diff(pinned.splitlines(True), now.splitlines(True), "pinned", "now", n=1))
    assert now == pinned, "the command line changed (if meant, rerun tests/golden/make_cli_help.py):\n" + diff[:4000]
    assert pinned.count("==== keyboard-lm") >= 20  # every command and sub-command

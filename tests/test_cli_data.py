"""``keyboard-lm data stats`` run as a user runs it (a real subprocess, but where it would import TFF)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def run_cli(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-m", "keyboard_lm.cli", *args], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=600)


def test_stats_on_default_corpus_json():
    result = run_cli("data", "stats", "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["clients"] == stats["train_clients"] + stats["heldout_clients"]
    assert stats["words"] > 20_000
    assert 0 < stats["oov_rate_heldout"] < 0.5
    assert stats["skipped_records"] == sum(stats["skipped_by_reason"].values())


@pytest.mark.shakespeare
def test_stats_on_shakespeare_table(shakespeare_path):
    result = run_cli("data", "stats", "--data", shakespeare_path, "--format", "shakespeare")
    assert result.returncode == 0, result.stderr
    assert "299 (269 train, 30 held-out; seed 0)" in result.stdout
    assert "OOV rate" in result.stdout


def test_bad_record_is_a_one_line_error_not_a_traceback(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"user": "a", "text": "fine"}\n{"text": "no user"}\n', encoding="utf-8")
    result = run_cli("data", "stats", "--data", str(path), "--format", "jsonl")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{path}:2: missing field ('user')" in result.stderr


def test_skip_bad_reports_skipped_records(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = ['{"user": "a", "text": "hello there"}', '{"user": "b", "text": "hi you"}', "garbage"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("data", "stats", "--data", str(path), "--format", "jsonl", "--skip-bad", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["skipped_by_reason"] == {"not valid JSON": 1}


def test_stackoverflow_that_cannot_load_is_a_clear_error(tmp_path, capsys):
    # A corrupt cached database exercises the failure path without any download.  In this process: the
    # reader imports TFF, which the test's worker has loaded already.
    from keyboard_lm.cli import main

    (tmp_path / "stackoverflow.sqlite").write_bytes(b"this is not a sqlite database" * 100)
    assert main(["data", "stats", "--format", "stackoverflow", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "could not load the Stack Overflow dataset" in err
    assert "Traceback" not in err

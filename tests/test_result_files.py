"""Every result file says where its figures came from: a markdown result file's header (its first 8 lines) has
`- date:`, `- machine:`, `- command:` and `- seeds:` lines, and the JSON beside it the same keys, none blank.
A blank anywhere fails: every result file carries all four."""

from __future__ import annotations

import glob
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("date", "machine", "command", "seeds")


def header_gaps(path: str) -> list[str]:
    """The fields a markdown result file's first 8 lines leave out or blank."""
    with open(path, encoding="utf-8") as f:
        head = "\n".join(f.read().splitlines()[:8])
    return [field for field in FIELDS if not re.search(rf"^- {field}:[ \t]*\S", head, re.M)]


def json_gaps(path: str) -> list[str]:
    """The fields a JSON result file leaves out or empty."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return [field for field in FIELDS if not isinstance(doc, dict) or doc.get(field) in (None, "", [], {})]


def gaps(root: str = ROOT) -> set[str]:
    """Every missing field of every result file under ``root``/benchmarks/results, as "path: field"."""
    out = set()
    results = os.path.join(root, "benchmarks", "results")
    for path in glob.glob(os.path.join(results, "**", "*.md"), recursive=True):
        out |= {f"{os.path.relpath(path, root)}: {f}" for f in header_gaps(path)}
    for path in glob.glob(os.path.join(results, "**", "*.json"), recursive=True):
        out |= {f"{os.path.relpath(path, root)}: {f}" for f in json_gaps(path)}
    return out


def test_no_result_file_has_a_blank_field():
    now = gaps()
    assert not now, f"result files with a blank date, machine, command or seeds: {sorted(now)}"


def test_a_blank_field_is_found_in_a_header_and_in_json(tmp_path):
    study = tmp_path / "benchmarks" / "results" / "study"
    study.mkdir(parents=True)
    (study / "full.md").write_text("# full\n\n- date: 2026-01-01\n- machine: AMD EPYC, 2 cores\n"
                                   "- command: `python benchmarks/study/full.py`\n- seeds: 0, 1, 2\n")
    (study / "full.json").write_text(json.dumps({"date": "2026-01-01", "machine": {"cpu": "AMD EPYC"},
                                                 "command": "python benchmarks/study/full.py", "seeds": [0, 1, 2]}))
    (study / "bare.md").write_text("# bare\n\n- date: 2026-01-01\n- machine:\n- command: `x`\n")
    (study / "bare.json").write_text(json.dumps({"date": "2026-01-01", "command": ""}))
    rel = os.path.join("benchmarks", "results", "study")
    assert gaps(str(tmp_path)) == {f"{rel}/bare.md: machine", f"{rel}/bare.md: seeds", f"{rel}/bare.json: machine",
                                   f"{rel}/bare.json: command", f"{rel}/bare.json: seeds"}


def test_the_command_line_is_quoted_so_it_can_be_run_again(tmp_path, monkeypatch):
    """A recipe given as one argument with spaces (`--recipe "e2=--local-epochs 2"`) stays one argument."""
    import shlex
    import sys

    from benchmarks.common import result_file

    argv = ["benchmarks/base/warm_start_sweep.py", "--recipe", "e2 r175=--local-epochs 2 --rounds 175"]
    monkeypatch.setattr(sys, "argv", argv)
    json_path, _ = result_file.write("quoted", {}, "x", str(tmp_path), seeds="0")
    assert shlex.split(json.loads(open(json_path, encoding="utf-8").read())["command"]) == ["python", *argv]

"""The generated pages are current: docs/cli.md's option tables match the parser, docs/results.md lists every
result file (benchmarks/docs_pages.py rewrites both)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_generated_pages_are_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "docs_pages.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]


def test_every_result_file_and_every_option_is_on_a_page():
    sys.path.insert(0, ROOT)
    from benchmarks import docs_pages

    results = docs_pages.results_page()
    for name in os.listdir(os.path.join(ROOT, "benchmarks", "results")):
        if name.endswith(".json"):
            assert f"| [{name[:-5]}](" in results or f"| {name[:-5]} |" in results, name
    tables = docs_pages.option_tables()
    for flag in ("--init-from", "--client-clipnorm", "--dp", "--canary-repeats", "--scratch", "--budget-hours"):
        assert f"`{flag}" in tables, flag
    # help text as --help prints it: argparse's %(default)s and %% expanded, never shown raw
    assert "%%" not in tables and "%(" not in tables
    assert "95% bootstrap intervals" in tables

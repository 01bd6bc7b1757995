"""The generated pages are current and complete: docs/cli.md's option tables match the parser, and docs/results.md,
as the generator writes it, has a row for every result file that exists under benchmarks/results/ (walked here,
not through the generator's own listing) with its date, machine and command filled in."""

import importlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def _generator():
    """The docs generator, wherever benchmarks/ keeps it (its tools folder, or the top)."""
    sys.path.insert(0, ROOT)
    for name in ("benchmarks.tools.docs_pages", "benchmarks.docs_pages"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise AssertionError("no benchmarks/tools/docs_pages.py or benchmarks/docs_pages.py")


def _result_files() -> list[str]:
    """Every JSON result file on disk, as a path relative to benchmarks/results/ without its extension."""
    out = []
    for folder, _, names in os.walk(RESULTS):
        out += [os.path.relpath(os.path.join(folder, n), RESULTS)[:-5] for n in names if n.endswith(".json")]
    return sorted(out)


def _rows(page: str) -> dict[str, list[str]]:
    """The results page's table rows by the name in their first cell (a link's text, or the plain name)."""
    rows = {}
    for line in page.splitlines():
        if not line.startswith("| ") or line.startswith(("| result", "|---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        name = cells[0].split("](", 1)[0].lstrip("[")
        rows[name] = cells
    return rows


def test_generated_pages_are_current():
    path = _generator().__file__
    r = subprocess.run([sys.executable, path, "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]


def unlisted_or_blank(files: list[str], page: str) -> list[str]:
    """Each result file of ``files`` with no row on ``page``, or a row whose date, machine or command is blank."""
    rows, out = _rows(page), []
    for rel in files:
        row = rows.get(rel) or rows.get(os.path.basename(rel))
        if row is None:
            out.append(f"{rel}: no row")
            continue
        out += [f"{rel}: no {field}" for field, cell in zip(("date", "machine", "command"), row[1:4])
                if not cell.strip("` ")]
    return out


def test_every_result_file_on_disk_has_a_row_with_date_machine_and_command():
    files = _result_files()
    assert len(files) > 50, f"{len(files)} result files under benchmarks/results/"
    bad = unlisted_or_blank(files, _generator().results_page())
    assert not bad, f"{len(bad)} result files unlisted or with a blank field on docs/results.md: {bad}"


def test_the_check_fails_on_a_missing_row_and_on_a_blank_command():
    page = ("| result | date | machine | command |\n|---|---|---|---|\n"
            "| [a](../benchmarks/results/s/a.md) | 2026-01-01 | AMD EPYC, 2 cores | `python benchmarks/s/a.py` |\n"
            "| [b](../benchmarks/results/s/b.md) | 2026-01-01 | AMD EPYC, 2 cores |  |\n")
    assert unlisted_or_blank(["s/a"], page) == []
    assert unlisted_or_blank(["s/a", "s/b", "s/c"], page) == ["s/b: no command", "s/c: no row"]


def test_every_option_is_on_the_cli_page():
    tables = _generator().option_tables()
    for flag in ("--init-from", "--client-clipnorm", "--dp", "--canary-repeats", "--scratch", "--budget-hours"):
        assert f"`{flag}" in tables, flag
    # help text as --help prints it: argparse's %(default)s and %% expanded, never shown raw
    assert "%%" not in tables and "%(" not in tables
    assert "95% bootstrap intervals" in tables

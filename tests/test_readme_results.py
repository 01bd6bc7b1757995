"""Every number in README's results table has a home: it appears in a result file of benchmarks/results/ (or,
for the base model, in the card the package ships), so a figure in the README is never written by hand alone."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _results_table() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what")]


def _homes() -> str:
    paths = glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.md")) + \
        glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json")) + \
        [os.path.join(ROOT, "keyboard_lm", "models", "base", "run.json")]
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out.append(f.read())
    return "\n".join(out)


def test_every_number_in_the_results_table_is_in_a_result_file():
    homes = _homes()
    rows = _results_table()
    assert 5 <= len(rows) <= 15, f"{len(rows)} rows: the README keeps about ten headline figures"
    missing = []
    for row in rows:
        measured = row.split(" | ")[1]
        for number in re.findall(r"\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+", measured):
            if number not in homes and number.replace(",", "") not in homes:
                missing.append((number, row[:60]))
    assert not missing, f"numbers without a result file: {missing}"


def test_the_results_table_keeps_short_cells_and_no_aims():
    for row in _results_table():
        measured = row.split(" | ")[1]
        assert len(measured) <= 160, measured
        assert "aim" not in measured and "missed" not in measured, measured

"""README's results table is checked against the homes its rows link to: every figure of a row must be a number
printed in the page section or result file that row links to (or a result file that section links to), compared
as a parsed number, so a figure copied wrong by one digit fails where a search of every result file would not."""

from __future__ import annotations

import os
import re
from decimal import Decimal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a figure: 1,467,169 | 0.2039 | 99.82% | 1.099x | 465; a word or a name around it is not part of it
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d])")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def numbers(text: str, decimals_only: bool = False) -> list[str]:
    """Every number printed in ``text`` as written (thousands separators kept); with ``decimals_only``, the
    figures a description can hold: decimals, percentages, ratios and separated thousands, not a count like
    "3 seeds"."""
    text = LINK.sub("]", text)  # a link's target (an anchor like table-2) is not a figure
    out = []
    for m in NUMBER.finditer(text):
        written = m.group(0)
        after = text[m.end():m.end() + 1]
        if decimals_only and not (m.group(2) or "," in written or after in ("%", "x")):
            continue
        out.append(written)
    return out


def value(written: str) -> Decimal:
    return Decimal(written.replace(",", ""))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def section(path: str, anchor: str | None) -> str:
    """The text under the heading ``anchor`` names, up to the next heading of the same or a higher level (the
    whole file without an anchor); a missing file or anchor is an AssertionError naming it."""
    assert os.path.exists(path), f"{os.path.relpath(path, ROOT)}: linked from README's results table, not found"
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not anchor:
        return "\n".join(lines)
    fenced, headings = False, []  # a "# comment" inside a code block is not a heading
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        m = None if fenced else HEADING.match(line)
        if m:
            headings.append((i, len(m.group(1)), slug(m.group(2))))
    for k, (i, level, name) in enumerate(headings):
        if name == anchor:
            end = next((j for j, lv, _ in headings[k + 1:] if lv <= level), len(lines))
            return "\n".join(lines[i + 1:end])
    raise AssertionError(f"{os.path.relpath(path, ROOT)}#{anchor}: no such heading (linked from README)")


def homes(cell: str) -> dict[str, str]:
    """The texts a row's figures may come from: each linked page section or result file, and every result file
    of benchmarks/results/ those sections link to (one level, markdown and text files)."""
    out = {}
    for target in LINK.findall(cell):
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(ROOT, path))
        text = section(full, anchor or None)
        out[f"{path}#{anchor}" if anchor else path] = text
        for inner in LINK.findall(text):
            inner_path = os.path.normpath(os.path.join(os.path.dirname(full), inner.partition("#")[0]))
            if inner_path.startswith(os.path.join(ROOT, "benchmarks", "results")) and os.path.isfile(inner_path) \
                    and inner_path.endswith((".md", ".txt")):
                with open(inner_path, encoding="utf-8") as f:
                    out[os.path.relpath(inner_path, ROOT)] = f.read()
    return out


def results_rows(readme: str) -> list[str]:
    table = readme.split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| what")]


def unfounded(readme: str) -> list[tuple[str, str]]:
    """(figure, row) for every figure of the results table that its row's homes do not print."""
    missing = []
    for row in results_rows(readme):
        what, measured, where = (c.strip() for c in row.strip().strip("|").split(" | "))
        found = {value(n) for text in homes(where).values() for n in numbers(text)}
        for written in numbers(what, decimals_only=True) + numbers(measured):
            if value(written) not in found:
                missing.append((written, row[:70]))
    return missing


def _readme() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def test_every_figure_in_the_results_table_is_printed_in_the_home_its_row_links():
    rows = results_rows(_readme())
    assert 5 <= len(rows) <= 15, f"{len(rows)} rows: the README keeps about ten headline figures"
    for row in rows:
        where = row.strip().strip("|").split(" | ")[-1]
        assert LINK.search(where), f"a results row links no home: {row[:70]}"
    assert not unfounded(_readme()), f"figures their linked homes do not print: {unfounded(_readme())}"


def _with_one_digit_changed(readme: str, figure: str, changed: str) -> tuple[str, str]:
    row = next(r for r in results_rows(readme) if figure in r.split(" | ")[1])
    wrong = row.replace(figure, changed, 1)
    return readme.replace(row, wrong, 1), wrong


def test_a_figure_changed_by_one_digit_fails_the_check():
    """The demo model's size and the base's recall@3, each with one digit changed in memory: the check names
    the changed figure (both are printed in their homes, so only the change can fail it)."""
    readme = _readme()
    for figure, changed in (("1,466,212", "1,466,213"), ("0.2945", "0.2955")):
        wrong_readme, wrong_row = _with_one_digit_changed(readme, figure, changed)
        assert (changed, wrong_row[:70]) in unfounded(wrong_readme), figure
        assert not any(f == figure for f, _ in unfounded(readme))


def test_nearly_every_one_digit_change_of_a_figure_is_caught():
    """Every single-digit substitution of every decimal figure of the table: under one in ten still passes (a
    substitution passes only where it lands on another figure printed in the same home, as a base's
    recall@3 may land on another epoch's line of the base's table). A search of every result file lets most
    of them through."""
    readme, tried, passed = _readme(), 0, []
    for row in results_rows(readme):
        what, measured, where = (c.strip() for c in row.strip().strip("|").split(" | "))
        found = {value(n) for text in homes(where).values() for n in numbers(text)}
        for figure in numbers(what, decimals_only=True) + numbers(measured, decimals_only=True):
            for i, digit in enumerate(figure):
                for other in "0123456789".replace(digit, "") if digit.isdigit() else "":
                    changed = figure[:i] + other + figure[i + 1:]
                    tried += 1
                    if value(changed) in found:
                        passed.append(changed)
    assert tried > 1000 and len(passed) < 0.1 * tried, (tried, len(passed), passed[:20])


def test_numbers_are_parsed_not_matched_as_text():
    assert numbers("0.966x ± 0.000 (3 seeds, in [0.847, 1.046]); 1,466,212 bytes; 99.82%") == [
        "0.966", "0.000", "3", "0.847", "1.046", "1,466,212", "99.82"]
    assert numbers("3 seeds, eps 10, 1.4 MiB, 0.5%, 1.09x, 12,345", decimals_only=True) == [
        "1.4", "0.5", "1.09", "12,345"]
    assert value("1,466,212") == value("1466212") and value("465") == value("465.0")
    assert slug("SI-CIFG vs CIFG in Ro et al.'s protocol (their Table 2)") == \
        "si-cifg-vs-cifg-in-ro-et-als-protocol-their-table-2"


def test_the_results_table_keeps_short_cells_and_no_aims():
    for row in results_rows(_readme()):
        measured = row.split(" | ")[1]
        assert len(measured) <= 160, measured
        assert "aim" not in measured and "missed" not in measured, measured

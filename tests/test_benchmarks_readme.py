"""benchmarks/README.md names every benchmark script (in every study folder, common/ and tools/) and every result
file family of benchmarks/results/."""

import fnmatch
import os
import re

import pytest

pytestmark = pytest.mark.bench

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")


def _patterns(text: str) -> list[str]:
    """Glob patterns of every backticked name in the README: `a.{json,md}`, `b_*.*`, `c.*`, `d.md`."""
    out = []
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.split("/")[-1]
        m = re.search(r"\{([^}]*)\}", token)
        options = m.group(1).split(",") if m else [""]
        for option in options:
            out.append(token[:m.start()] + option + token[m.end():] if m else token)
    return out


def _readme() -> str:
    with open(os.path.join(BENCH, "README.md"), encoding="utf-8") as f:
        return f.read()


def _walk(top):
    """(folder, file names) under ``top``, not in hidden directories (the arm64 root a latency run unpacks)."""
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        yield folder, names


def test_every_script_is_listed():
    text = _readme()
    scripts = [n for folder, names in _walk(BENCH) if os.path.basename(folder) != "base_corpus"
               for n in names if n.endswith((".py", ".sh")) and not n.startswith("__")]
    missing = [n for n in scripts if f"`{n}`" not in text and not re.search(rf"`{re.escape(n)}[` ]", text)]
    assert not missing, f"benchmarks/README.md does not list {missing}"


def test_every_result_file_belongs_to_a_listed_family():
    patterns = _patterns(_readme())
    results = sorted(n for _, _, names in os.walk(os.path.join(BENCH, "results")) for n in names)
    missing = [n for n in results if not any(fnmatch.fnmatch(n, p) for p in patterns)]
    assert not missing, f"result files no row of benchmarks/README.md names: {missing}"

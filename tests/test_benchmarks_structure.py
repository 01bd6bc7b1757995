"""benchmarks/ keeps its studies apart: what they share lives in benchmarks/common/ under public names, and no
script imports a private name (or a private module) of another."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")

pytestmark = pytest.mark.bench


def _modules():
    """The benchmarks' own modules: not what a benchmark unpacks into a hidden directory (the arm64 root)."""
    for folder, dirs, names in os.walk(BENCH):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def private_imports(source: str) -> list[str]:
    """Every ``from benchmarks... import _name`` (relative imports included) and every import of a module of
    benchmarks whose own name is private, as ``module: name``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            ours = node.level > 0 or module == "benchmarks" or module.startswith("benchmarks.")
            if not ours:
                continue
            parts = [p for p in module.split(".") if p]
            found += [f"{module}: {p}" for p in parts if p.startswith("_") and not p.startswith("__")]
            found += [f"{'.' * node.level}{module}: {a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            found += [f"{a.name}" for a in node.names if a.name.startswith("benchmarks.")
                      and any(p.startswith("_") and not p.startswith("__") for p in a.name.split("."))]
    return found


def test_the_check_finds_private_imports():
    assert private_imports("from benchmarks.ro_table2 import _train, curve\n") == ["benchmarks.ro_table2: _train"]
    assert private_imports("from benchmarks import _report\n") == ["benchmarks: _report"]
    assert private_imports("from ._records import load\n") == ["_records: _records"]
    assert private_imports("import benchmarks._netns\n") == ["benchmarks._netns"]
    assert private_imports("from benchmarks.common.runs import finished\nfrom os import _exit\n") == []


def test_no_benchmark_module_imports_a_private_name_of_another():
    found = {}
    for path in _modules():
        with open(path, encoding="utf-8") as f:
            hits = private_imports(f.read())
        if hits:
            found[os.path.relpath(path, ROOT)] = hits
    assert not found, f"private names imported across benchmarks/ (make them public in benchmarks/common/): {found}"


def test_common_holds_no_study():
    """benchmarks/common/ is shared by the studies, so it imports none of them."""
    common = os.path.join(BENCH, "common")
    for name in sorted(os.listdir(common)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(common, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                assert (node.module or "").startswith("benchmarks.common"), f"common/{name} imports {node.module}"

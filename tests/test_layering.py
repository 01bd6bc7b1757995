"""The dependency rule of STYLE.md: text and inference never import TensorFlow,
export/ never imports TFF, and only keyboard_lm/federated imports TFF."""

import ast
import pathlib
import subprocess
import sys

from tests.conftest import REPO

TF = {"tensorflow", "tensorflow_text", "tensorflow_federated"}


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _py_files(*parts):
    return sorted((REPO.joinpath(*parts)).rglob("*.py"))


def test_text_and_inference_sources_import_no_tensorflow():
    for folder in (("keyboard_lm", "text"), ("keyboard_lm", "inference")):
        for path in _py_files(*folder):
            assert not _imports(path) & TF, path


def test_only_the_federated_layer_imports_tff():
    for path in _py_files("keyboard_lm") + _py_files("export"):
        if "federated" in path.relative_to(REPO).parts:
            continue
        assert "tensorflow_federated" not in _imports(path), path


def test_importing_text_loads_no_tensorflow_at_run_time():
    code = ("import sys, keyboard_lm.text, keyboard_lm.data.corpora, keyboard_lm.data.stats;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (TF,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"

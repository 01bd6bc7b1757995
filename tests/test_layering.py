"""The dependency rule of STYLE.md: text and inference never import TensorFlow
(nor the exporter), keyboard_lm/export never imports TFF, and only keyboard_lm/federated imports TFF; checked
on each file's own imports and transitively through the project's modules."""

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
    assert _py_files("keyboard_lm", "export"), "the exporter is not where this test looks"
    for path in _py_files("keyboard_lm"):
        if "federated" in path.relative_to(REPO).parts:
            continue
        assert "tensorflow_federated" not in _imports(path), path


def test_importing_text_loads_no_tensorflow_at_run_time():
    code = ("import sys, keyboard_lm.text, keyboard_lm.data.corpora, keyboard_lm.data.stats;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (TF,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def _module_files() -> dict[str, pathlib.Path]:
    """Project module name -> file, for every module of the installed package."""
    out = {}
    for path in (REPO / "keyboard_lm").rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _full_imports(path: pathlib.Path, name: str, modules: dict) -> set[str]:
    """Every module (dotted) that ``path`` imports anywhere in its body, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules}
    return found


def _transitive_closure(start: str, modules: dict) -> set[str]:
    seen, todo, external = set(), [start], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imp in _full_imports(modules[name], name, modules):
            if imp in modules:
                todo.append(imp)
            else:
                external.add(imp.split(".")[0])
            # importing a.b.c runs a/__init__ and a/b/__init__ too
            parts = imp.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules]
    return external | seen


def test_layering_holds_transitively():
    modules = _module_files()
    assert "keyboard_lm.export.tflite_export" in modules
    for name in modules:
        reach = _transitive_closure(name, modules)
        if name.startswith(("keyboard_lm.text", "keyboard_lm.inference")):
            assert not reach & TF, f"{name} reaches {sorted(reach & TF)}"
            assert not {m for m in reach if m.startswith("keyboard_lm.export")}, f"{name} reaches the exporter"
        if name.startswith("keyboard_lm.export"):
            assert "tensorflow_federated" not in reach, name
            assert not {m for m in reach if m.startswith("keyboard_lm.federated")}, name


def test_transitive_check_sees_through_a_helper(tmp_path):
    """The checker follows imports through intermediate modules (what the per-file test misses)."""
    modules = {"keyboard_lm.export.a": tmp_path / "a.py", "keyboard_lm.helper": tmp_path / "helper.py",
               "keyboard_lm.federated.x": tmp_path / "x.py"}
    (tmp_path / "a.py").write_text("def f():\n    from keyboard_lm import helper\n", encoding="utf-8")
    (tmp_path / "helper.py").write_text("from keyboard_lm.federated import x\n", encoding="utf-8")
    (tmp_path / "x.py").write_text("import tensorflow_federated as tff\n", encoding="utf-8")
    reach = _transitive_closure("keyboard_lm.export.a", modules)
    assert "tensorflow_federated" in reach and "keyboard_lm.federated.x" in reach


#: The layers of STYLE.md, lowest first; a module may import its own layer and those below, never one above.
LAYERS = (("keyboard_lm.errors", "keyboard_lm.config_checks", "keyboard_lm.durable"), ("keyboard_lm.text",),
          ("keyboard_lm.data", "keyboard_lm.baselines", "keyboard_lm.inference", "keyboard_lm.models"),
          ("keyboard_lm.evaluation", "keyboard_lm.export", "keyboard_lm"),
          ("keyboard_lm.char_encoder", "keyboard_lm.privacy", "keyboard_lm.training"),
          ("keyboard_lm.federated",), ("keyboard_lm.cli",))


def _layer(module: str) -> int:
    """Index in LAYERS of the longest package prefix of ``module``."""
    best = max((p for layer in LAYERS for p in layer if module == p or module.startswith(p + ".")), key=len)
    return next(i for i, layer in enumerate(LAYERS) if best in layer)


def test_no_module_imports_a_layer_above_its_own():
    modules = _module_files()
    for name, path in modules.items():
        for imp in _full_imports(path, name, modules):
            if imp in modules:
                assert _layer(imp) <= _layer(name), f"{name} (layer {_layer(name)}) imports {imp} ({_layer(imp)})"


def test_cli_parser_and_predict_load_no_tensorflow():
    """`keyboard-lm --help` and `predict` work on the predictor-only install: the help reads the recipe from
    config dataclasses that import no TensorFlow."""
    code = ("import sys; from keyboard_lm.cli import build_parser; p = build_parser();"
            "p.parse_args(['predict', 'm.tflite', 'hi']); p.parse_args(['train', '--out', 'x']);"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (TF,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_the_session_does_not_import_the_predictor():
    """A session asks one ranker for its strips (inference/ranker.py) and knows its predictor by a protocol:
    predictor.py imports session.py, never the other way round."""
    modules = _module_files()
    name = "keyboard_lm.inference.session"
    assert "keyboard_lm.inference.predictor" not in _full_imports(modules[name], name, modules)

"""The repository names packages, not the hosts of package registries, and installs as one namespace."""

import pathlib
import re
import subprocess

import pytest

from tests.conftest import REPO

# Hosts of the package registries this project installs from; the lock file is uv's own output.
REGISTRY_HOSTS = re.compile(r"pypi\.org|pythonhosted\.org|deb\.debian\.org|security\.debian\.org|"
                            r"registry\.npmjs\.org|repo1\.maven\.org|dl\.google\.com")


def _tracked_text_files():
    try:
        names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    for name in names.splitlines():
        path = REPO / name
        if name == "uv.lock" or not path.is_file() or path.suffix in (".tflite", ".png", ".npz", ".jar", ".apk"):
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def test_no_registry_host_is_written_into_the_repository():
    hits = [f"{name}:{i + 1}" for name, text in _tracked_text_files()
            for i, line in enumerate(text.splitlines()) if REGISTRY_HOSTS.search(line)]
    assert hits == []


def test_every_package_directory_is_installed():
    """pyproject lists packages explicitly: none may be missing."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "keyboard_lm").rglob("__init__.py")}
    assert on_disk - listed == set()
    assert "package-dir" not in setuptools  # every package lives where its name says
    assert "export" not in listed  # never a top-level package of its own


def test_the_exporter_imports_as_keyboard_lm_export():
    import keyboard_lm.export.tflite_export as module

    assert pathlib.Path(module.__file__).resolve().parent == REPO / "keyboard_lm" / "export"
    assert not (REPO / "export" / "__init__.py").exists()  # the top-level export/ is a pointer, not a package


def test_code_and_docs_say_what_a_thing_is_not_which_ticket_made_it():
    ticket = re.compile(r"\b[Ii]ssues? ?#?\d+")
    hits = [f"{name}:{i + 1}" for name, text in _tracked_text_files()
            if name.endswith((".py", ".md", ".java", ".sh", ".toml"))
            for i, line in enumerate(text.splitlines()) if ticket.search(line)]
    assert hits == []


def test_version_is_the_packages_and_the_cli_prints_it(capsys):
    import tomllib

    import keyboard_lm
    from keyboard_lm.cli import main

    with open(REPO / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == keyboard_lm.__version__
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith(f"keyboard-lm {keyboard_lm.__version__} ")


def test_the_shipped_worker_commands_are_ones_the_cli_accepts():
    """The container's default command and the Kubernetes workers' args parse, and name the flags a plaintext
    worker on the pod network needs (a worker flag renamed or made stricter must not break the manifests)."""
    import json

    import yaml

    from keyboard_lm.cli import build_parser

    dockerfile = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    cmd = json.loads(next(line for line in dockerfile.splitlines() if line.startswith("CMD "))[4:])
    docs = list(yaml.safe_load_all((REPO / "deploy" / "kubernetes" / "workers.yaml").read_text(encoding="utf-8")))
    containers = [c for d in docs if d and d.get("kind") in ("StatefulSet", "Deployment")
                  for c in d["spec"]["template"]["spec"]["containers"]]
    assert containers
    for argv in [cmd, *(c["args"] for c in containers)]:
        assert argv[:2] == ["keyboard-lm", "worker"], argv
        args = build_parser().parse_args(argv[1:])
        assert args.bind == "0.0.0.0" and args.insecure and args.allow_all_interfaces, argv

"""The predictor-only install works where app developers are: Python 3.12 and 3.13, without TensorFlow.

A fresh virtual environment of that Python installs the base package from this
working tree (numpy and ai-edge-litert; no training stack) and must return the
same suggestions as the Python 3.11 predictor on a committed fixture model.
Needs the package index (as the README's setup does); skipped with the reason
where no such Python exists.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO

FIXTURE = REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite"
CONTEXTS = ["", "how are", "what is your", "i like it. you", "thank you very much for"]
SCRIPT = """
import json, sys
from keyboard_lm.inference import Predictor
p = Predictor.load(sys.argv[1])
print(json.dumps({"suggest": [p.suggest(c, 3) for c in json.loads(sys.argv[2])],
                  "complete": p.complete("how are", "y", 3),
                  "modules": sorted({m.split(".")[0] for m in sys.modules} & {"tensorflow", "tflite_runtime"})}))
"""


def find_python(minor: int) -> str | None:
    """A CPython 3.<minor> interpreter: on PATH, or installed by pyenv."""
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser(os.path.join("~", ".pyenv"))]
    candidates = [shutil.which(f"python3.{minor}")]
    for root in filter(None, roots):
        candidates += sorted(glob.glob(os.path.join(root, "versions", f"3.{minor}.*", "bin", f"python3.{minor}")))
    for cand in candidates:
        if not cand:
            continue
        try:
            out = subprocess.run([cand, "-c", "import sys; print(sys.version_info[:2] == (3, %d))" % minor],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.stdout.strip() == "True":
            return cand
    return None


def _predict(python: str, cwd) -> dict:
    out = subprocess.run([python, "-c", SCRIPT, str(FIXTURE), json.dumps(CONTEXTS)], capture_output=True,
                         text=True, cwd=cwd, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.heavy
@pytest.mark.parametrize("minor", [12, 13])
def test_predictor_installs_on_newer_python_and_matches_311(tmp_path, minor):
    python = find_python(minor)
    if python is None:
        pytest.skip(f"no Python 3.{minor} on PATH or under pyenv")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    vpy = str(venv / "bin" / "python")
    install = subprocess.run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(REPO)],
                             capture_output=True, text=True, timeout=1200)
    assert install.returncode == 0, install.stderr[-3000:]
    got = _predict(vpy, tmp_path)  # run outside the repository: the installed package, not the source
    want = _predict(sys.executable, tmp_path)
    assert got["modules"] == []  # ai-edge-litert only: neither TensorFlow nor tflite-runtime
    assert "tflite_runtime" in want["modules"] or want["modules"] == []
    for g, w in zip(got["suggest"] + [got["complete"]], want["suggest"] + [want["complete"]]):
        assert [word for word, _ in g] == [word for word, _ in w]
        np.testing.assert_allclose([p for _, p in g], [p for _, p in w], rtol=1e-4)

"""The repository as it was at a git revision, for a benchmark's before/after in one run."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def resolve(ref: str) -> str | None:
    """``ref``'s short commit id (so a result says what was measured), or None if it names no commit here."""
    found = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "--verify", ref + "^{commit}"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def tree_at(rev: str, dest: Path, paths: list[str]) -> Path:
    """``paths`` of the repository at ``rev`` unpacked under ``dest`` (git archive: the working tree is untouched)."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, *paths], check=True,
                          capture_output=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(dest, filter="data")
    return dest


def package_at(rev: str, dest: str) -> str:
    """The package (``keyboard_lm/``) at ``rev`` under ``dest``; run from ``dest``, it is the one imported."""
    return str(tree_at(rev, Path(dest), ["keyboard_lm"]))

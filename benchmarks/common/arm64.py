"""The emulated aarch64 Python of the latency benchmarks (set up by arm64_env.sh)."""

from __future__ import annotations

import os
import subprocess

#: The setup script (benchmarks/arm64_env.sh; run with --java it adds an emulated aarch64 JVM too).
ENV_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "arm64_env.sh")


def emulated_python(repo: str) -> tuple[list[str], dict]:
    """(argv prefix, environment) that run Python 3.11 for aarch64 under qemu user mode, with ``repo`` importable.

    Runs ``arm64_env.sh`` first (idempotent; installs qemu and the Debian arm64 Python as root once).
    """
    env_dir = subprocess.run(["bash", ENV_SCRIPT], check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()[-1]
    env = dict(os.environ, QEMU_LD_PREFIX=os.path.join(env_dir, "root"),
               PYTHONPATH=os.pathsep.join([os.path.join(env_dir, "site"), repo]))
    return ["qemu-aarch64-static", os.path.join(env_dir, "root", "usr", "bin", "python3.11")], env

"""Starting TFF's C++ worker as a process: where its binary is, a free port, waiting until it answers.

Shared by the local worker of a single-machine run (``local_worker``) and the workers of a run across
machines (``distributed.remote``), so that neither stands on the other.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

from keyboard_lm.errors import KeyboardLMError


def worker_binary() -> str:
    """Path of the worker binary inside the installed tensorflow_federated wheel."""
    import importlib.util

    spec = importlib.util.find_spec("tensorflow_federated")
    if spec is None or not spec.origin:
        raise KeyboardLMError("tensorflow_federated is not installed: no TFF worker binary")
    path = os.path.join(os.path.dirname(spec.origin), "data", "worker_binary")
    if not os.access(path, os.X_OK):
        raise KeyboardLMError(f"TFF worker binary missing or not executable: {path} (Linux x86-64 only)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 30.0) -> None:
    """Return when host:port accepts a TCP connection; error after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise KeyboardLMError(f"worker {host}:{port} did not accept connections within {timeout:.0f} s")
            time.sleep(0.2)


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first line the relay (``worker_relay``) prints ("" if it ends or says nothing within ``timeout`` s)."""
    import select

    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if ready else ""

"""TFF's own C++ worker (``worker_binary``) run as a remote executor service.

First piece of issue 15: find the wheel's worker binary, start it with
bounded limits, wait (bounded) until it accepts connections, parse
``--workers host:port,...`` and join one execution context per worker with
``tff.backends.native.set_mergeable_comp_execution_context``.

Security: the TFF 0.87 worker has a ``--port`` flag but no address flag; it
listens on every interface and has no authentication.  ``start_worker``
therefore refuses any ``bind`` other than loopback unless ``0.0.0.0`` is given
explicitly, and says so; to keep a worker private, run it on a private network
or behind an SSH tunnel / mTLS proxy (docs/distributed.md).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

from keyboard_lm.errors import ConfigError, KeyboardLMError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


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


def parse_workers(text: str) -> list[tuple[str, int]]:
    """``host:port,host:port`` -> [(host, port)]; one clear error for bad input."""
    out = []
    for item in (s.strip() for s in text.split(",")):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"--workers: {item!r} is not host:port")
        out.append((host, int(port)))
    if not out:
        raise ConfigError("--workers: no workers given")
    return out


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


def start_worker(port: int, bind: str = "127.0.0.1", max_concurrent_calls: int = 64,
                 max_message_mb: int = 1024, wait: float = 30.0) -> subprocess.Popen:
    """Start TFF's worker on ``port``; refuses a non-loopback bind except 0.0.0.0."""
    if bind not in LOOPBACK and bind != "0.0.0.0":
        raise ConfigError(f"--bind {bind}: TFF's worker cannot listen on one address; "
                          "use 127.0.0.1 (default) or 0.0.0.0 explicitly")
    cmd = [worker_binary(), f"--port={port}", f"--max_concurrent_computation_calls={max_concurrent_calls}",
           f"--grpc_max_message_length_megabytes={max_message_mb}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port("127.0.0.1", port, wait)
    except KeyboardLMError:
        proc.kill()
        proc.wait()
        raise
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_remote_context(workers: list[tuple[str, int]], num_subrounds: int | None = None) -> None:
    """Install one AsyncExecutionContext per worker, joined by TFF's mergeable context.

    NOT YET WORKING: a federated_sum over two local workers fails with the
    worker's "No cardinality provided for `clients` placement" (the
    cardinalities reaching the factory are empty); untested until fixed.
    """
    import grpc

    from keyboard_lm.federated.runtime import import_tff

    tff = import_tff()
    for host, port in workers:
        wait_for_port(host, port, 10.0)
    contexts = []
    for host, port in workers:
        channel = grpc.insecure_channel(f"{host}:{port}")
        stub = tff.framework.RemoteExecutorGrpcStub(channel)

        def factory(cardinalities, stub=stub):
            executor = tff.framework.RemoteExecutor(stub)
            executor.set_cardinalities(cardinalities)
            return executor

        executor_factory = tff.framework.ResourceManagingExecutorFactory(factory)
        contexts.append(tff.framework.AsyncExecutionContext(
            executor_factory,
            compiler_fn=tff.backends.native.desugar_and_transform_to_native,
            transform_args=tff.tensorflow.transform_args,
            transform_result=tff.tensorflow.transform_result))
    tff.backends.native.set_mergeable_comp_execution_context(contexts, num_subrounds or len(workers))

"""TFF's own C++ worker (``worker_binary``) run as a remote executor service.

Training across machines (docs/distributed.md): find the wheel's worker binary, start
it with bounded limits, wait (bounded) until it accepts connections, parse
``--workers host:port,...``, join one execution context per worker with
``tff.backends.native.set_mergeable_comp_execution_context``, and end a run
whose worker died or hung instead of waiting forever (``Watchdog``).

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
import threading
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


def probe(host: str, port: int, timeout: float = 5.0) -> str:
    """``ok``, ``down`` (refuses connections) or ``silent`` (accepts, but does not answer in ``timeout`` s).

    A TCP connect is not enough: the kernel accepts connections for a stopped
    or wedged process.  The probe calls a method the worker does not have; its
    gRPC server answers UNIMPLEMENTED at once when the process runs, even in
    the middle of a long round.
    """
    import grpc

    channel = grpc.insecure_channel(f"{host}:{port}")
    try:
        call = channel.unary_unary("/keyboard_lm.Probe/Ping", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
        call(b"", timeout=timeout)
        return "ok"
    except grpc.RpcError as e:
        code = e.code()
        if code == grpc.StatusCode.UNAVAILABLE:
            return "down"
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return "silent"
        return "ok"  # any answer (UNIMPLEMENTED) means the process serves requests
    finally:
        channel.close()


#: Seconds a worker may refuse connections or leave probes unanswered before the run ends (``--worker-grace``).
WORKER_GRACE = 30.0


class Watchdog:
    """Bound the wait for a dead or hung worker: TFF's remote executor waits forever for one.

    A daemon thread probes every worker each ``interval`` seconds (``probe``).
    When one has refused connections or not answered for ``grace`` seconds,
    or when no round has finished within the round timeout, it prints one line
    naming the cause and ends the process with ``exit_code`` (the blocked round
    cannot be interrupted from Python); the checkpoints of the finished rounds
    stay, so ``train --resume`` after restarting the worker finishes the run.

    The round timeout catches a worker that answers probes but never finishes
    its part of the round: ``round_timeout`` seconds if given, else 10x the
    slowest round so far and at least ``min_round_timeout``, and
    ``first_round_timeout`` for the first round (it includes compiling).
    """

    def __init__(self, workers: list[tuple[str, int]], interval: float = 5.0, grace: float = WORKER_GRACE,
                 exit_code: int = 3, round_timeout: float | None = None, min_round_timeout: float = 600.0,
                 first_round_timeout: float = 1800.0):
        self.workers, self.interval, self.grace, self.exit_code = workers, interval, grace, exit_code
        self.round_timeout, self.min_round_timeout = round_timeout, min_round_timeout
        self.first_round_timeout = first_round_timeout
        self._slowest = None
        self._last = time.monotonic()
        self._stopped = threading.Event()

    def round_done(self, round_num: int, seconds: float) -> None:
        """Called by the training loop after every round."""
        self._slowest = max(self._slowest or 0.0, seconds)
        self._last = time.monotonic()

    def timeout(self) -> float:
        if self.round_timeout is not None:
            return self.round_timeout
        if self._slowest is None:
            return self.first_round_timeout
        return max(self.min_round_timeout, 10 * self._slowest)

    def _fail(self, what: str) -> None:
        import sys

        print(f"error: {what}; the round cannot finish. Restart the worker and continue with `keyboard-lm train "
              f"--out RUN_DIR --resume --workers ...` (finished rounds are checkpointed)",
              file=sys.stderr, flush=True)
        os._exit(self.exit_code)

    def check(self, bad_since: dict) -> None:
        """One pass over the workers and the round clock (the thread's loop body)."""
        now = time.monotonic()
        for host, port in self.workers:
            state = probe(host, port, timeout=self.interval)
            if state == "ok":
                bad_since.pop((host, port), None)
                continue
            first = bad_since.setdefault((host, port), now)
            if time.monotonic() - first >= self.grace:
                how = "refused connections" if state == "down" else "accepted connections but not answered"
                self._fail(f"TFF worker {host}:{port} has {how} for {self.grace:.0f} s")
        waited = time.monotonic() - self._last
        if waited > self.timeout():
            self._fail(f"no round finished in {waited:.0f} s (timeout {self.timeout():g} s); a TFF worker "
                       "may be stuck")

    def start(self) -> threading.Thread:
        def watch():
            bad_since: dict = {}
            while not self._stopped.wait(self.interval):
                self.check(bad_since)

        thread = threading.Thread(target=watch, name="tff-worker-watchdog", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """End the watch (the run is over): a process that trains again must not be ended by this run's clock."""
        self._stopped.set()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_remote_context(workers: list[tuple[str, int]], num_subrounds: int | None = None,
                       max_message_mb: int = 1024) -> None:
    """Install one AsyncExecutionContext per worker, joined by TFF's mergeable context.

    Each round's clients are split into ``num_subrounds`` (default: one per
    worker) parts, each part runs up to the aggregation on one worker, and the
    partial aggregates are merged. A computation without client-placed
    arguments (``initialize``, reading the model weights) infers no clients
    cardinality, which TFF's C++ worker refuses ("No cardinality provided for
    `clients` placement"); such a call gets 0 clients, as TFF's own local C++
    context does (``default_num_clients=0``).
    """
    import grpc

    from keyboard_lm.federated.runtime import import_tff, release_local_worker

    tff = import_tff()
    for host, port in workers:
        wait_for_port(host, port, 10.0)
    contexts = []
    for host, port in workers:
        # gRPC's default 4 MB limit is below one paper-size round's results (11 MB measured): use the
        # worker's own limit (start_worker's max_message_mb) on the driver's side too.
        limit = max_message_mb * 1024 * 1024
        channel = grpc.insecure_channel(f"{host}:{port}", options=[("grpc.max_send_message_length", limit),
                                                                   ("grpc.max_receive_message_length", limit)])
        stub = tff.framework.RemoteExecutorGrpcStub(channel)

        def factory(cardinalities, stub=stub):
            cardinalities = dict(cardinalities)
            cardinalities.setdefault(tff.CLIENTS, 0)
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
    release_local_worker()

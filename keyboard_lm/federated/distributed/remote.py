"""TFF's own C++ worker (``worker_binary``) run as a remote executor service.

Training across machines (docs/distributed.md): find the wheel's worker binary, start
it with bounded limits, wait (bounded) until it accepts connections, parse
``--workers host:port,...``, join one execution context per worker with
``tff.backends.native.set_mergeable_comp_execution_context``, and end a run
whose worker died or hung instead of waiting forever (``Watchdog``).

Security: the TFF 0.87 worker has a ``--port`` flag but no address flag (it
listens on every interface) and no authentication.  ``start_worker`` runs it
in its own network namespace, reachable only through a socket bound to
``bind:port`` in the host's namespace, optionally behind TLS with client
certificates (``federated.worker_relay``, ``worker_tls``).  Plaintext is refused on a
non-loopback address unless ``insecure``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

from keyboard_lm.errors import ConfigError, KeyboardLMError
from keyboard_lm.federated.worker_process import first_line, wait_for_port, worker_binary


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


def isolation_error() -> str | None:
    """None if ``start_worker`` can put the worker in a network namespace here, else the system's reason."""
    from keyboard_lm.federated import worker_relay

    return worker_relay.check()


def _listener(bind: str, port: int) -> socket.socket:
    """A listening TCP socket on ``bind:port`` in this process's (the host's) network namespace."""
    try:
        infos = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ConfigError(f"--bind {bind}: {e.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart on the same port, in TIME_WAIT
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise ConfigError(f"--bind {bind} --port {port}: {e.strerror}") from None
    return sock


def _is_loopback(bind: str) -> bool:
    import ipaddress

    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return False


def start_worker(port: int, bind: str = "127.0.0.1", max_concurrent_calls: int = 64,
                 max_message_mb: int = 1024, wait: float = 30.0, *, tls=None, insecure: bool = False,
                 allow_all_interfaces: bool = False) -> subprocess.Popen:
    """Start TFF's worker reachable at ``bind:port`` only; returns the process to stop (it stops the worker).

    The worker runs in a new network namespace and a relay (``worker_relay``)
    forwards the connections accepted on ``bind:port`` to it; with ``tls`` (a
    ``worker_tls.TLSFiles``: server certificate, key, client CA) the relay
    accepts only TLS connections presenting a client certificate signed by
    that CA.  Plaintext on a non-loopback ``bind`` needs ``insecure``.  Where
    the system does not permit namespaces this is a ConfigError, unless
    ``allow_all_interfaces`` (plaintext only): then TFF's worker runs as it is,
    on every interface of the machine, and the returned process has
    ``isolated`` False.  Killing the returned process ends the worker too (the
    kernel signals it: PR_SET_PDEATHSIG), and on either path so does the end
    of this process (even by SIGKILL) or of the thread that called this function.
    """
    if tls is None and not insecure and not _is_loopback(bind):
        raise ConfigError(f"--bind {bind}: plaintext gRPC with no authentication on a non-loopback address; "
                          "give --tls-cert, --tls-key and --tls-client-ca (or --insecure on a trusted network)")
    cmd = [worker_binary(), f"--port={port}", f"--max_concurrent_computation_calls={max_concurrent_calls}",
           f"--grpc_max_message_length_megabytes={max_message_mb}"]
    from keyboard_lm.federated import worker_relay

    listener = _listener(bind, port)
    relay = [*worker_relay.command(), f"--listen-fd={listener.fileno()}", f"--parent={os.getpid()}",
             f"--inner-port={port}", f"--wait={wait}"]
    if tls is not None:
        relay += [f"--tls-cert={tls.cert}", f"--tls-key={tls.key}", f"--tls-client-ca={tls.ca}"]
    try:
        proc = subprocess.Popen([*relay, "--", *cmd], stdout=subprocess.PIPE, pass_fds=(listener.fileno(),),
                                text=True)
    finally:
        listener.close()  # the relay holds it now: it closes when the relay ends
    line = first_line(proc, wait + 15.0)
    if line == "ready":
        proc.stdout.close()
        proc.isolated = True
        return proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    proc.stdout.close()
    kind, _, why = line.partition(": ")
    if kind != "namespace":
        raise KeyboardLMError(f"worker on {bind}:{port}: {why or f'relay exited with code {proc.returncode}'}")
    if not allow_all_interfaces or tls is not None:
        raise ConfigError(f"cannot isolate TFF's worker: this system does not permit network namespaces ({why}); "
                          "--allow-all-interfaces runs it on every interface of the machine (plaintext only)")
    # Bound to this process: without the relay nothing else would end the worker if this process is killed
    proc = subprocess.Popen(worker_relay.bound_to_this_process(cmd), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_port("127.0.0.1", port, wait)
    except BaseException:  # a timeout, or Ctrl-C / SIGTERM while it starts: no worker outlives its start
        proc.kill()
        proc.wait()
        raise
    proc.isolated = False
    return proc


def _tcp_state(host: str, port: int, timeout: float) -> str:
    """Why a worker that fails its probes does: what a plain TCP connection to it meets, in words."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return "accepted connections but not answered"  # the kernel accepts for a stopped or wedged process
    except ConnectionRefusedError:
        return "refused connections"  # the process is gone
    except OSError as e:  # a timeout, no route: a cut link, a host that is down
        return f"been unreachable ({e.strerror or 'TCP connections time out'})"


def _channel(host: str, port: int, credentials=None, options=None):
    import grpc

    target = f"{host}:{port}"
    if credentials is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, credentials, options=options)


def _ping(host: str, port: int, credentials, timeout: float):
    """Call a method the worker does not have: None when its gRPC server answers (UNIMPLEMENTED included),
    else the ``grpc.RpcError`` (UNAVAILABLE or DEADLINE_EXCEEDED)."""
    import grpc

    channel = _channel(host, port, credentials)
    try:
        channel.unary_unary("/keyboard_lm.Probe/Ping", request_serializer=lambda b: b,
                            response_deserializer=lambda b: b)(b"", timeout=timeout)
        return None
    except grpc.RpcError as e:
        failed = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        return e if e.code() in failed else None  # any other answer means the process serves requests
    finally:
        channel.close()


def probe(host: str, port: int, timeout: float = 5.0, credentials=None) -> str:
    """``ok``, ``down`` (refuses connections) or ``silent`` (accepts, but does not answer in ``timeout`` s).

    A TCP connect is not enough: the kernel accepts connections for a stopped
    or wedged process.  The probe calls a method the worker does not have; its
    gRPC server answers UNIMPLEMENTED at once when the process runs, even in
    the middle of a long round.  ``credentials``: ``grpc.ssl_channel_credentials``
    for a worker behind TLS (``worker_tls.channel_credentials``).
    """
    import grpc

    error = _ping(host, port, credentials, timeout)
    if error is None:
        return "ok"
    return "down" if error.code() == grpc.StatusCode.UNAVAILABLE else "silent"


def _check_channel(host: str, port: int, credentials, timeout: float = 10.0) -> None:
    """One call to the worker over the run's channel; a ConfigError naming why it failed (TLS or plaintext)."""
    error = _ping(host, port, credentials, timeout)
    if error is not None:
        how = "over TLS (--tls-ca, --tls-cert, --tls-key)" if credentials is not None else "in plaintext"
        detail = " ".join((error.details() or str(error.code())).split())
        raise ConfigError(f"worker {host}:{port} accepts TCP connections but not gRPC {how}: {detail}; "
                          "is it started with matching --tls-* flags?")


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
    With ``tls`` (``worker_tls.TLSFiles``) the probes go over TLS, as the rounds do.
    """

    def __init__(self, workers: list[tuple[str, int]], interval: float = 5.0, grace: float = WORKER_GRACE,
                 exit_code: int = 3, round_timeout: float | None = None, min_round_timeout: float = 600.0,
                 first_round_timeout: float = 1800.0, tls=None):
        self.credentials = None
        if tls is not None:
            from keyboard_lm.federated.distributed.worker_tls import channel_credentials

            self.credentials = channel_credentials(tls)
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
            state = probe(host, port, timeout=self.interval, credentials=self.credentials)
            if state == "ok":
                bad_since.pop((host, port), None)
                continue
            first = bad_since.setdefault((host, port), now)
            if time.monotonic() - first >= self.grace:
                self._fail(f"TFF worker {host}:{port} has {_tcp_state(host, port, timeout=2.0)} for "
                           f"{self.grace:.0f} s")
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


def set_remote_context(workers: list[tuple[str, int]], num_subrounds: int | None = None,
                       max_message_mb: int = 1024, tls=None) -> None:
    """Install one AsyncExecutionContext per worker, joined by TFF's mergeable context.

    Each round's clients are split into ``num_subrounds`` (default: one per
    worker) parts, each part runs up to the aggregation on one worker, and the
    partial aggregates are merged. A computation without client-placed
    arguments (``initialize``, reading the model weights) infers no clients
    cardinality, which TFF's C++ worker refuses ("No cardinality provided for
    `clients` placement"); such a call gets 0 clients, as TFF's own local C++
    context does (``default_num_clients=0``).

    ``tls`` (``worker_tls.TLSFiles``: client certificate, key, the CA that
    signed the workers' certificate): TLS channels presenting that client
    certificate.  Each worker must answer one call first (over TLS if given):
    a worker that accepts TCP but not the channel is one clear error here, not
    a round that waits for it.
    """
    from keyboard_lm.federated.runtime import release_local_worker, start_runtime

    credentials = None
    if tls is not None:
        from keyboard_lm.federated.distributed.worker_tls import channel_credentials

        credentials = channel_credentials(tls)
    tff = start_runtime()
    for host, port in workers:
        wait_for_port(host, port, 10.0)
        _check_channel(host, port, credentials)
    contexts = []
    for host, port in workers:
        # gRPC's default 4 MB limit is below one paper-size round's results (11 MB measured): use the
        # worker's own limit (start_worker's max_message_mb) on the driver's side too.
        limit = max_message_mb * 1024 * 1024
        channel = _channel(host, port, credentials, options=[("grpc.max_send_message_length", limit),
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

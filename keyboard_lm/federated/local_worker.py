"""TFF's local worker, reachable from this process only.

TFF 0.87's local execution context starts ``worker_binary --port=P``: a gRPC
executor service with no address flag and no authentication, listening on
every interface of the machine, and killed only by a finalizer (a process that
dies by SIGKILL leaves it running under init).  This module builds the same
synchronous context (TFF's native compiler, its remote executor over a
``ResourceManagingExecutorFactory``) on a worker that

- runs in a network namespace of its own (``worker_relay``: a user namespace
  where the kernel allows it unprivileged), whose only interface is loopback;
- is reached through a Unix socket in a private directory (mode 0700) that the
  relay accepts on, so nothing this run starts has a network address at all;
- dies with this process however it ends: the relay and the worker ask the
  kernel for PR_SET_PDEATHSIG, and the relay also polls its parent.  Children
  are started from one long-lived thread (``_Keeper``) because the kernel sends
  that signal when the *thread* that started the child ends, and TFF first
  computes from whichever thread the caller or its own runner uses.

Where the system permits no network namespace, the run is refused with one
line, unless the user allowed TFF's own behaviour (``allow_all_interfaces``,
``train --allow-all-interfaces``, or ``KEYBOARD_LM_ALLOW_ALL_INTERFACES=1``):
then the worker listens on every interface as TFF starts it, still bound to
this process's life.
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from keyboard_lm.errors import ConfigError, KeyboardLMError

ALLOW_ENV = "KEYBOARD_LM_ALLOW_ALL_INTERFACES"
#: The worker's port inside its namespace: any port, the namespace is new and has nothing else in it.
INNER_PORT = 8000
_allowed = False


def allow_all_interfaces(allowed: bool = True) -> None:
    """Let a local worker listen on every interface where namespaces are refused (the user's explicit choice)."""
    global _allowed
    _allowed = allowed


def all_interfaces_allowed() -> bool:
    return _allowed or os.environ.get(ALLOW_ENV, "") not in ("", "0")


class _Keeper:
    """One daemon thread that starts child processes and lives as long as this process.

    PR_SET_PDEATHSIG fires when the thread that forked the child ends, not the
    process: a worker started from TFF's runner thread or a short-lived caller
    thread would be killed with that thread.  Started here, it ends with the process.
    """

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, fn):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="keyboard_lm-process-keeper",
                                                daemon=True)
                self._thread.start()
        done: queue.Queue = queue.Queue(maxsize=1)
        self._jobs.put((fn, done))
        ok, value = done.get()
        if ok:
            return value
        raise value

    def _serve(self):
        while True:
            fn, done = self._jobs.get()
            try:
                done.put((True, fn()))
            except BaseException as e:  # handed to the caller, raised in its thread
                done.put((False, e))


_keeper = _Keeper()


class LocalWorker:
    """A started local worker: ``target`` is the gRPC address to dial, ``isolated`` whether it has no network
    address (namespace + Unix socket) or listens on every interface (allowed fallback)."""

    def __init__(self, proc: subprocess.Popen, target: str, isolated: bool, directory: str | None = None):
        self.proc, self.target, self.isolated, self.directory = proc, target, isolated, directory

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """End the worker and reap it before returning; remove the socket's directory.

        The relay is asked with SIGTERM: it then stops and reaps its worker itself, so the worker is gone when
        this returns (killing the relay outright leaves the kernel's parent-death signal to end the worker a
        moment later). SIGKILL after 10 s, or at once for a worker that is this process's own child.
        """
        from keyboard_lm.federated.worker_relay import stop_process

        if self.isolated:
            stop_process(self.proc, timeout=10.0)
        elif self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def _worker_cmd(port: int, max_concurrent_calls: int) -> list[str]:
    from keyboard_lm.federated.worker_process import worker_binary

    return [worker_binary(), f"--port={port}", f"--max_concurrent_computation_calls={max_concurrent_calls}"]


def _start_isolated(max_concurrent_calls: int, wait: float) -> LocalWorker | str:
    """The worker in its own namespace behind a Unix socket; or the system's reason namespaces are refused."""
    from keyboard_lm.federated import worker_process, worker_relay

    directory = tempfile.mkdtemp(prefix="keyboard_lm-tff-")  # mode 0700: only this user can connect
    path = os.path.join(directory, "worker.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(128)
        relay = [*worker_relay.command(), f"--listen-fd={listener.fileno()}", f"--parent={os.getpid()}",
                 f"--inner-port={INNER_PORT}", f"--wait={wait}", "--", *_worker_cmd(INNER_PORT, max_concurrent_calls)]
        proc = _keeper.run(lambda: subprocess.Popen(relay, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                    stderr=subprocess.DEVNULL, pass_fds=(listener.fileno(),),
                                                    text=True))
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    finally:
        listener.close()  # the relay holds its own copy
    line = worker_process.first_line(proc, wait + 15.0)
    if line == "ready":
        proc.stdout.close()
        return LocalWorker(proc, f"unix:{path}", True, directory)
    worker = LocalWorker(proc, "", False, directory)
    worker.stop()
    proc.stdout.close()
    kind, _, why = line.partition(": ")
    if kind == "namespace":
        return why
    raise KeyboardLMError(f"TFF's local worker did not start: {why or f'relay exited with code {proc.returncode}'}")


def _start_on_all_interfaces(max_concurrent_calls: int, wait: float) -> LocalWorker:
    """TFF's own way (every interface, a free port), but killed by the kernel when this process ends."""
    from keyboard_lm.federated import worker_process, worker_relay

    port = worker_process.free_port()
    cmd = worker_relay.bound_to_this_process(_worker_cmd(port, max_concurrent_calls))
    proc = _keeper.run(lambda: subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
    worker = LocalWorker(proc, f"localhost:{port}", False)
    try:
        worker_process.wait_for_port("127.0.0.1", port, wait)
    except BaseException:
        worker.stop()
        raise
    return worker


def _refusal(why: str) -> ConfigError:
    return ConfigError(f"cannot isolate TFF's local worker: this system does not permit network namespaces ({why}), "
                       f"and TFF's worker would listen on every interface with no authentication; "
                       f"--allow-all-interfaces (or {ALLOW_ENV}=1) runs it so")


def check_isolation() -> None:
    """Refuse now (a ConfigError) what the first computation would refuse: a local worker that cannot be
    isolated, unless the user allowed every interface.  Costs one short child process."""
    if all_interfaces_allowed():
        return
    from keyboard_lm.federated import worker_relay

    why = worker_relay.check()
    if why is not None:
        raise _refusal(why)


def start_local_worker(max_concurrent_calls: int = -1, wait: float = 30.0) -> LocalWorker:
    """Start a local worker that only this process can reach (see the module docstring)."""
    started = _start_isolated(max_concurrent_calls, wait)
    if isinstance(started, LocalWorker):
        return started
    if not all_interfaces_allowed():
        raise _refusal(started)
    return _start_on_all_interfaces(max_concurrent_calls, wait)


#: Workers started by this process's contexts (stopped at exit, or when a remote context replaces them).
_started: list[LocalWorker] = []
_started_lock = threading.Lock()


def started_workers() -> list[LocalWorker]:
    with _started_lock:
        return [w for w in _started if w.proc.poll() is None]


def stop_local_workers() -> None:
    with _started_lock:
        workers = list(_started)
        _started.clear()
    for w in workers:
        w.stop()


def create_context(max_concurrent_calls: int = -1):
    """A ``SyncExecutionContext`` as TFF's ``create_sync_local_cpp_execution_context`` builds, on an isolated
    worker started with the first computation (and again if it died)."""
    import grpc
    from tensorflow_federated.python.core.backends.native import compiler
    from tensorflow_federated.python.core.environments.tensorflow_frontend import tensorflow_computation
    from tensorflow_federated.python.core.impl.execution_contexts import sync_execution_context
    from tensorflow_federated.python.core.impl.executor_stacks import python_executor_stacks
    from tensorflow_federated.python.core.impl.executors import remote_executor, remote_executor_grpc_stub
    from tensorflow_federated.python.core.impl.types import placements

    limit = 2 * 1000 * 1000 * 1000  # TFF's own channel limit for its local worker
    options = [("grpc.max_message_length", limit), ("grpc.max_receive_message_length", limit),
               ("grpc.max_send_message_length", limit)]
    state = {"worker": None, "stub": None}
    lock = threading.Lock()

    def stub():
        with lock:
            worker = state["worker"]
            if worker is not None and worker.proc.poll() is None and state["stub"].is_ready:
                return state["stub"]
            if worker is not None:
                worker.stop()
            worker = start_local_worker(max_concurrent_calls)
            with _started_lock:
                _started.append(worker)
            channel = grpc.insecure_channel(worker.target, options)
            state["worker"], state["stub"] = worker, remote_executor_grpc_stub.RemoteExecutorGrpcStub(channel)
            deadline = time.monotonic() + 30.0
            while not state["stub"].is_ready:
                if time.monotonic() > deadline or worker.proc.poll() is not None:
                    raise KeyboardLMError("TFF's local worker started but does not answer")
                time.sleep(0.05)
            return state["stub"]

    def stack_fn(cardinalities):
        cardinalities.setdefault(placements.CLIENTS, 0)
        executor = remote_executor.RemoteExecutor(stub())
        executor.set_cardinalities(cardinalities)
        return executor

    factory = python_executor_stacks.ResourceManagingExecutorFactory(executor_stack_fn=stack_fn)
    return sync_execution_context.SyncExecutionContext(
        executor_fn=factory, compiler_fn=compiler.desugar_and_transform_to_native,
        transform_args=tensorflow_computation.transform_args,
        transform_result=tensorflow_computation.transform_result)


def process_stat(pid: int) -> tuple[str, int] | None:
    """(comm, ppid) of process ``pid`` from Linux /proc; None once it has ended (or without /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may contain spaces and parentheses, so cut at the last ")".
    return stat[stat.find("(") + 1:stat.rfind(")")], int(stat[stat.rfind(")") + 2:].split()[1])


def worker_processes() -> list[tuple[int, int]]:
    """(pid, ppid) of every live ``worker_binary`` process this user can see."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.isdigit() and (stat := process_stat(int(entry))) is not None and \
                stat[0].startswith("worker_binary"[:15]):  # comm is cut at 15 characters
            found.append((int(entry), stat[1]))
    return found


#: Processes that adopt orphans: init, and the subreapers of a user session or a container.
_REAPERS = ("systemd", "init", "tini", "dumb-init", "docker-init")


def orphaned_workers() -> list[int]:
    """Pids of this installation's ``worker_binary`` processes re-parented to init (or a subreaper) by a
    run that died without stopping them: TFF's own local context, or a run of an earlier version.

    A worker of a live run has that run (or its relay, a Python process) as its parent, never init."""
    from keyboard_lm.federated.worker_process import worker_binary

    try:
        binary = os.path.realpath(worker_binary())
    except (OSError, KeyboardLMError):
        return []
    found = []
    for pid, ppid in worker_processes():
        try:
            exe = os.path.realpath(f"/proc/{pid}/exe")
        except OSError:
            continue
        parent = process_stat(ppid)
        if exe == binary and (ppid == 1 or (parent is not None and parent[0] in _REAPERS)):
            found.append(pid)
    return found


def end_orphaned_workers(say=None) -> list[int]:
    """Kill the orphaned workers ``orphaned_workers`` finds (this user's only: the kernel refuses others')."""
    import signal

    ended = []
    for pid in orphaned_workers():
        try:
            os.kill(pid, signal.SIGKILL)
            ended.append(pid)
        except OSError:
            continue
    if ended and say is not None:
        say(f"ended {len(ended)} TFF worker(s) left listening by an earlier run that died (pid "
            f"{', '.join(map(str, ended))})")
    return ended

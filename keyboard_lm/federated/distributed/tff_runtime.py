"""Importing TFF quietly and cleaning up its local C++ worker.

TFF 0.87 runs computations in a ``worker_binary`` subprocess that it starts on
first use, wired to the parent's stdout, and only stops from a finalizer that
may never run.  Left behind, that process keeps the parent's stdout open, so a
pipeline such as ``keyboard-lm train ... | tee log`` never ends.
``start_runtime`` (called when a run starts, by the process builders and by
workers; importing the federated layer installs nothing) wraps TFF's default
context so that the first computation starts the worker, with its output
sent to /dev/null, and registers an exit hook that stops the workers this
process started.  A
SIGTERM (``kill``, a job scheduler) ends the process through that same hook,
not around it, unless the program installed its own handler.

TFF's finalizer stops its worker with SIGINT and waits for it without a
limit.  A process started with SIGINT ignored (``cmd &`` in a script,
``nohup``) passes that on to the worker, which then never ends, and the
finalizer blocks whichever thread the garbage collector happens to run it
in: a run that switches from the local worker to remote ones
(``release_local_worker``) or ends (``stop_workers``) kills and reaps the
worker itself first.
"""

from __future__ import annotations

import atexit
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

_WORKER_NAME = "worker_binary"
_registered = False
_exit_hook = False
#: Pids of the local workers TFF started for this process's default context.
_local_workers: set[int] = set()


def _child_workers() -> list[int]:
    """Pids of our own TFF worker processes (Linux /proc; nothing elsewhere)."""
    me, pids = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        # /proc/PID/stat: "pid (comm) state ppid ..."; comm may contain spaces.
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        if ppid == me and comm.startswith(_WORKER_NAME[:15]):
            pids.append(int(entry))
    return pids


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _silence_finalizer_of_killed_workers() -> None:
    """TFF's finalizer of a worker already killed here raises ProcessLookupError: only noise, not shown."""
    import sys

    previous_hook = sys.unraisablehook
    if getattr(previous_hook, "keyboard_lm", False):
        return

    def hook(unraisable):
        finalizer = getattr(unraisable.object, "__qualname__", "")
        if not (isinstance(unraisable.exc_value, ProcessLookupError) and "ServiceManager" in finalizer):
            previous_hook(unraisable)

    hook.keyboard_lm = True
    sys.unraisablehook = hook


def release_local_worker() -> None:
    """Kill and reap the local worker of TFF's default context, once another context has replaced it.

    Called after installing remote workers' context: the old context is garbage from then on, and its
    finalizer (SIGINT, then an unbounded wait) would otherwise run in whatever thread collects it, and hang
    there if the worker ignores SIGINT.  Collected here and now, it finds its worker gone.  Workers this
    process started for other purposes (``remote.start_worker``) are left alone.
    """
    import gc

    _kill(sorted(_local_workers))
    _local_workers.clear()
    _silence_finalizer_of_killed_workers()
    gc.collect()


def stop_workers() -> None:
    """Stop the TFF worker processes started by this process.

    The workers are killed and reaped first (see the module's docstring).
    Then the C++ context is dropped while the interpreter is still whole, so
    that finalizer runs now; it finds its worker gone and raises
    ProcessLookupError, which is only noise here.  A finalizer that runs later
    in the shutdown (its object still referenced until then) is silenced the
    same way: this runs only at exit.
    """
    import gc
    import sys

    _kill(_child_workers())
    _local_workers.clear()
    if "tensorflow_federated" in sys.modules:
        from tensorflow_federated.python.core.impl.context_stack import set_default_context

        _silence_finalizer_of_killed_workers()
        set_default_context.set_no_default_context()
        gc.collect()


def import_tff():
    """Import tensorflow_federated quietly; returns the module.

    Importing starts nothing and changes no signal handling: it only
    registers the exit hook (``stop_workers``) under which TFF's own
    finalizers run while the interpreter is still whole, instead of failing
    noisily in its shutdown. ``start_runtime`` does the rest when a run (or a
    process builder, or a worker) first needs TFF to compute.
    """
    global _exit_hook
    import logging
    import warnings

    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    import tensorflow_federated as tff

    logging.getLogger("absl").setLevel(logging.ERROR)
    if not _exit_hook:
        atexit.register(stop_workers)
        _exit_hook = True
    return tff


def start_runtime():
    """TFF ready to compute in this process (idempotent); returns the module.

    Makes SIGTERM end the process through the exit hook that stops the
    workers this process starts (unless the program set its own handler), and
    wraps TFF's default context so that the first computation starts the
    worker with its output sent to /dev/null. The worker itself starts with
    that first computation.
    """
    global _registered
    tff = import_tff()
    if not _registered:
        _exit_on_sigterm()
        _quiet_first_invocation()
        _registered = True
    return tff


def _exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit(143), so exit hooks run and no worker is orphaned.

    With the default action the process dies at once and its busy worker keeps
    running, re-parented to init.  Only the main thread can set handlers, and
    a handler the program set itself is left alone.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def workers_running() -> int:
    """How many TFF workers this process has started (and not stopped)."""
    return len(_child_workers())


def _quiet_first_invocation() -> None:
    """Wrap TFF's default context: its first ``invoke`` starts the worker quietly.

    TFF hands the worker whatever ``sys.stdout``/``sys.stderr`` are when the
    first computation runs; that may be a pipe the caller waits on, or (under
    pytest's capture) an object without a file descriptor, on which starting
    the worker fails.  The worker only prints C++ logs, so during the first
    invocation both point at /dev/null.
    """
    import sys

    from tensorflow_federated.python.core.impl.context_stack import context_base, context_stack_impl
    from tensorflow_federated.python.core.impl.context_stack.set_default_context import set_default_context

    inner = context_stack_impl.context_stack.current

    class QuietStartContext(context_base.SyncContext):
        started = False

        def invoke(self, comp, arg):
            if QuietStartContext.started:
                return inner.invoke(comp, arg)
            devnull = open(os.devnull, "w")  # noqa: SIM115 - the worker keeps its own copy of the fd
            saved = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = devnull
            before = set(_child_workers())
            try:
                result = inner.invoke(comp, arg)
                QuietStartContext.started = True
                return result
            finally:
                sys.stdout, sys.stderr = saved
                devnull.close()
                _local_workers.update(set(_child_workers()) - before)

    set_default_context(QuietStartContext())

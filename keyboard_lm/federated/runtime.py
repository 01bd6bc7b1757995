"""Importing TFF quietly and cleaning up its local C++ worker.

TFF 0.87 runs computations in a ``worker_binary`` subprocess that it starts on
first use, wired to the parent's stdout, and only stops from a finalizer that
may never run.  Left behind, that process keeps the parent's stdout open, so a
pipeline such as ``keyboard-lm train ... | tee log`` never ends.
``import_tff`` wraps TFF's default context so that the first computation
(not the import) starts the worker, with its output sent to /dev/null, and
registers an exit hook that stops the workers this process started.  A
SIGTERM (``kill``, a job scheduler) ends the process through that same hook,
not around it, unless the program installed its own handler.
"""

from __future__ import annotations

import atexit
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

_WORKER_NAME = "worker_binary"
_registered = False


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


def stop_workers() -> None:
    """Stop the TFF worker processes started by this process.

    The workers are killed and reaped first: TFF's own finalizer sends SIGINT
    and waits, and a busy worker can ignore that and hang the exit.  Then the
    C++ context is dropped while the interpreter is still whole, so that
    finalizer runs now; it finds its worker gone and raises
    ProcessLookupError, which is only noise here.  A finalizer that runs later
    in the shutdown (its object still referenced until then) is silenced the
    same way: this runs only at exit.
    """
    import gc
    import sys

    for pid in _child_workers():
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    if "tensorflow_federated" in sys.modules:
        from tensorflow_federated.python.core.impl.context_stack import set_default_context

        previous_hook = sys.unraisablehook

        def hook(unraisable):
            finalizer = getattr(unraisable.object, "__qualname__", "")
            if not (isinstance(unraisable.exc_value, ProcessLookupError) and "ServiceManager" in finalizer):
                previous_hook(unraisable)

        sys.unraisablehook = hook
        set_default_context.set_no_default_context()
        gc.collect()


def import_tff():
    """Import tensorflow_federated with the exit hook in place; returns the module.

    Importing starts nothing: the worker starts when a computation first runs.
    """
    global _registered
    import logging
    import warnings

    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    import tensorflow_federated as tff

    logging.getLogger("absl").setLevel(logging.ERROR)
    if not _registered:
        atexit.register(stop_workers)
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
            try:
                result = inner.invoke(comp, arg)
                QuietStartContext.started = True
                return result
            finally:
                sys.stdout, sys.stderr = saved
                devnull.close()

    set_default_context(QuietStartContext())

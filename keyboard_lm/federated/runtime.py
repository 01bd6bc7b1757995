"""Importing TFF quietly, with a local worker only this process reaches, and cleaning up after it.

TFF 0.87 runs computations in a ``worker_binary`` subprocess that it starts on
first use: it listens on every interface with no authentication, is wired to
the parent's stdout, and only stops from a finalizer that may never run (a
process killed by SIGKILL leaves it listening under init).  ``import_tff``
replaces TFF's default context with ``local_worker.create_context()``: the
same native compiler and remote executor, on a worker in a network namespace
of its own reached through a Unix socket (no network address), started with
the first computation with its output sent to /dev/null, and ended by the
kernel when this process ends, however it ends.  ``start_runtime`` (called
when a run starts, by the process builders and by workers) also makes SIGTERM
end the process through the exit hook that stops the workers, and ends
workers that earlier runs of TFF's own context left listening.

A run that switches from the local worker to remote ones
(``release_local_worker``) or ends (``stop_workers``) kills and reaps its
local workers itself.
"""

from __future__ import annotations

import atexit
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

_registered = False
_exit_hook = False


def _child_workers() -> list[int]:
    """Pids of the TFF worker processes this process started: its children, and its relays' children
    (Linux /proc; nothing elsewhere)."""
    from keyboard_lm.federated.local_worker import started_workers, worker_processes

    parents = {os.getpid(), *(w.pid for w in started_workers())}
    return [pid for pid, ppid in worker_processes() if ppid in parents]


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
    """Stop the local workers of this process's default context, once another context has replaced it.

    Called after installing remote workers' context; workers this process started for other purposes
    (``remote.start_worker``) are left alone.
    """
    from keyboard_lm.federated.local_worker import stop_local_workers

    stop_local_workers()


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

    from keyboard_lm.federated.local_worker import stop_local_workers

    stop_local_workers()
    _kill(_child_workers())
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
        from keyboard_lm.federated.local_worker import create_context

        # Before anything computes: TFF's own default context would start a worker on every interface.
        tff.framework.set_default_context(create_context())
        atexit.register(stop_workers)
        _exit_hook = True
    return tff


def start_runtime():
    """TFF ready to compute in this process (idempotent); returns the module.

    Makes SIGTERM end the process through the exit hook that stops the
    workers this process starts (unless the program set its own handler),
    and ends TFF workers that dead runs left listening (one line on stderr
    if there were any). The worker itself starts with the first computation.
    """
    global _registered
    tff = import_tff()
    if not _registered:
        import sys

        from keyboard_lm.federated.local_worker import end_orphaned_workers

        _exit_on_sigterm()
        end_orphaned_workers(lambda line: print(f"keyboard-lm: {line}", file=sys.stderr))
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

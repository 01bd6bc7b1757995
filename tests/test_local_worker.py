"""The local TFF worker of every federated run: no network address, no life after its run, and an explicit choice
where the system cannot isolate it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, worker_isolation_unavailable
from tests.process_tree import descendants, listening, reachable_from_network
from tests.test_worker_isolation import _without_namespaces

pytestmark = pytest.mark.heavy

SKIP = worker_isolation_unavailable()
needs_namespaces = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
#: A small default federated run (no flag about workers or addresses): long enough to look at while it trains.
RUN = ["--no-phrases", "--units", "24", "--embedding-dim", "16", "--vocab-size", "600", "--clients-per-round", "4",
       "--max-batches", "3", "--seed", "3", "--rounds", "40", "--dropout", "0", "--eval-every", "40"]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "KEYBOARD_LM_ALLOW_ALL_INTERFACES"}
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def _wait_for_worker(proc: subprocess.Popen, timeout: float = 240.0) -> dict[int, str]:
    """The run's process tree once TFF's worker runs in it (the first round has started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tree = descendants(proc.pid)
        if any(comm.startswith("worker_binary") for comm in tree.values()):
            return tree
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(0.2)
    raise AssertionError("no TFF worker started within the time a first round takes")


@needs_namespaces
def test_a_default_federated_train_listens_on_no_network_address_and_kill_9_leaves_no_worker(tmp_path):
    """During `train` (federated, no flags about workers), no socket of the run or its children can be reached
    from the network; after SIGKILL of the run, none of its processes (relay, worker) is alive 5 s later."""
    proc = subprocess.Popen([sys.executable, "-m", "keyboard_lm.cli", "train", "--out", str(tmp_path / "run"), *RUN],
                            cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        tree = _wait_for_worker(proc)
        time.sleep(1.0)  # the worker listens before the run's first call reaches it
        tree = descendants(proc.pid)
        sockets = listening([proc.pid, *tree])
        assert sockets, "the worker listens somewhere: in its own namespace"  # the check sees what it looks for
        assert reachable_from_network(sockets) == [], sockets
        assert not [s for s in sockets if s["host"]], f"a TCP port in the host's namespace: {sockets}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5.0
        alive = tree
        while alive and time.monotonic() < deadline:
            alive = {pid: comm for pid, comm in tree.items() if _alive(pid)}
            time.sleep(0.1)
        assert not alive, f"still running 5 s after kill -9 of the run: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


#: One TFF computation, then what the worker listens on, from a process that then waits to be ended.
_COMPUTE = ("from keyboard_lm.federated.runtime import start_runtime\n"
            "tff = start_runtime()\n"
            "print(tff.federated_computation(lambda: 41)() + 1, flush=True)\n")


def test_without_namespaces_a_local_worker_is_refused_in_one_line_unless_allowed():
    """Where the system permits no network namespace, the first computation is refused with one line that says
    why and how to allow it; with KEYBOARD_LM_ALLOW_ALL_INTERFACES=1 (train's --allow-all-interfaces) it runs."""
    refused = _without_namespaces(["train", "--out", "RUN", *RUN])
    if refused is None:
        pytest.skip("cannot make a user namespace with namespace limits here (unshare)")
    prefix = refused[:refused.index(sys.executable)]
    done = subprocess.run([*prefix, sys.executable, "-c", _COMPUTE], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env=_env())
    assert done.returncode != 0
    assert "cannot isolate TFF's local worker: this system does not permit network namespaces" in done.stderr
    assert "--allow-all-interfaces" in done.stderr and "KEYBOARD_LM_ALLOW_ALL_INTERFACES=1" in done.stderr
    allowed = subprocess.run([*prefix, sys.executable, "-c", _COMPUTE], capture_output=True, text=True,
                             timeout=120, cwd=REPO, env=_env(KEYBOARD_LM_ALLOW_ALL_INTERFACES="1"))
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert allowed.stdout.strip() == "42"


def test_train_without_namespaces_is_one_line_and_exit_2(tmp_path):
    """The CLI's form of the refusal: `train` says it in one line, exit code 2, before writing a round."""
    refused = _without_namespaces(["train", "--out", str(tmp_path / "run"), *RUN])
    if refused is None:
        pytest.skip("cannot make a user namespace with namespace limits here (unshare)")
    done = subprocess.run(refused, capture_output=True, text=True, timeout=300, cwd=REPO, env=_env())
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("keyboard-lm: error:")]
    assert len(lines) == 1 and "cannot isolate TFF's local worker" in lines[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr


def test_a_starting_run_ends_a_worker_that_a_killed_run_left_listening():
    """A worker_binary re-parented to init (TFF's own context in a process killed by SIGKILL) is found and ended
    by the next start of the runtime."""
    from keyboard_lm.federated import worker_process
    from keyboard_lm.federated.local_worker import end_orphaned_workers, orphaned_workers

    port = worker_process.free_port()
    # A parent that starts the worker with nothing bound to its life and exits at once: the worker is orphaned,
    # exactly as TFF's own local context leaves it after SIGKILL.
    leaver = ("import subprocess, sys\n"
              "p = subprocess.Popen([sys.argv[1], '--port=' + sys.argv[2]], stdout=subprocess.DEVNULL, "
              "stderr=subprocess.DEVNULL, start_new_session=True)\n"
              "print(p.pid)\n")
    out = subprocess.run([sys.executable, "-c", leaver, worker_process.worker_binary(), str(port)],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    orphan = int(out)
    try:
        deadline = time.monotonic() + 10
        while orphan not in orphaned_workers() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert orphan in orphaned_workers()
        said = []
        assert orphan in end_orphaned_workers(said.append)
        assert len(said) == 1 and str(orphan) in said[0]
        deadline = time.monotonic() + 5
        while _alive(orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(orphan)
    finally:
        try:
            os.kill(orphan, signal.SIGKILL)
        except ProcessLookupError:
            pass


@needs_namespaces
def test_the_worker_outlives_the_thread_that_started_it():
    """The kernel's parent-death signal follows the thread that started a child: a worker started from a
    short-lived thread must still answer after that thread has ended."""
    code = ("import threading, time\n"
            "from keyboard_lm.federated import local_worker\n"
            "box = []\n"
            "t = threading.Thread(target=lambda: box.append(local_worker.start_local_worker()))\n"
            "t.start(); t.join(); time.sleep(1.5)\n"
            "w = box[0]\n"
            "print(w.isolated, w.proc.poll() is None, w.target.startswith('unix:'), flush=True)\n"
            "w.stop()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=_env())
    assert done.stdout.split() == ["True", "True", "True"], done.stderr[-3000:]

"""TFF's worker binary started on 127.0.0.1."""

import socket

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated import worker_process
from keyboard_lm.federated.distributed import remote

pytestmark = pytest.mark.heavy


def test_parse_workers_and_refusals():
    assert remote.parse_workers("127.0.0.1:8000, h:9") == [("127.0.0.1", 8000), ("h", 9)]
    with pytest.raises(ConfigError, match="not host:port"):
        remote.parse_workers("127.0.0.1")
    with pytest.raises(ConfigError, match="--bind 10.0.0.1"):
        remote.start_worker(1, bind="10.0.0.1")


def test_worker_starts_listens_and_stops():
    port = worker_process.free_port()
    proc = remote.start_worker(port, wait=30.0)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0):
            pass
    finally:
        proc.kill()
        proc.wait(timeout=10)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2.0).close()


SMALL = ["--no-phrases", "--units", "24", "--embedding-dim", "16", "--vocab-size", "600", "--clients-per-round", "4",
         "--max-batches", "3", "--seed", "3", "--rounds", "2", "--dropout", "0", "--server-optimizer", "adam",
         "--server-lr", "0.01", "--eval-every", "2"]


def _drive(runs: dict, timeout: float = 900) -> dict:
    """Run each ``name -> argv`` of ``runs`` through `keyboard-lm` in ONE driver process, in order.

    The execution context is process-wide, so runs on workers never share the test's process; one driver
    for all of them imports TensorFlow and TFF once instead of once per run.  Local runs must come before
    the first ``--workers`` run.  The driver ignores SIGINT, as a command started with ``&`` from a script
    does, and its workers inherit that: the local worker the first ``--workers`` run replaces must still be
    stopped without hanging the run (the collection after each run would block on it otherwise).  Returns
    ``name -> [exit code, stdout, stderr]``.
    """
    import json
    import os
    import subprocess
    import sys

    script = ("import contextlib, gc, io, json, signal, sys\n"
              "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "from keyboard_lm.cli import main\n"
              "results = {}\n"
              "for name, argv in json.loads(sys.argv[1]).items():\n"
              "    out, err = io.StringIO(), io.StringIO()\n"
              "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
              "        code = main(argv)\n"
              "    gc.collect()\n"
              "    results[name] = [code, out.getvalue(), err.getvalue()]\n"
              "print(json.dumps(results))\n")
    done = subprocess.run([sys.executable, "-c", script, json.dumps(runs)], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


VARIANTS = {"plain": (), "compression": ("--compression",),
            "dp-adaptive-z0": ("--dp", "fedavg", "--dp-noise-multiplier", "0", "--dp-clip-quantile", "0.5")}


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    """Every variant trained in one process and on two TFF workers, plus runs whose clients' data the workers
    read themselves (--worker-data), with and without the data where they look: ``(root, results)``."""
    import json

    from tests.conftest import build_once

    def build(root):
        ports = [worker_process.free_port(), worker_process.free_port()]
        workers = [remote.start_worker(p, wait=30.0) for p in ports]
        flag = ",".join(f"127.0.0.1:{p}" for p in ports)
        runs = {f"local-{n}": ["train", "--out", str(root / f"local-{n}"), *SMALL, *x] for n, x in VARIANTS.items()}
        runs.update({f"remote-{n}": ["train", "--out", str(root / f"remote-{n}"), *SMALL, *x, "--workers", flag]
                     for n, x in VARIANTS.items()})
        shards = str(root / "shards")
        runs["worker-data"] = ["train", "--out", str(root / "worker-data"), *SMALL, "--workers", flag,
                               "--worker-data", shards]
        runs["worker-data-missing"] = ["train", "--out", str(root / "m"), *SMALL, "--workers", flag,
                                       "--worker-data", shards, "--worker-data-root", str(root / "elsewhere")]
        try:
            results = _drive(runs)
        finally:
            for w in workers:
                w.kill()
                w.wait(timeout=10)
        (root / "results.json").write_text(json.dumps(results), encoding="utf-8")

    root = build_once(tmp_path_factory, "remote_spread", build)
    return root, json.loads((root / "results.json").read_text(encoding="utf-8"))


def _losses(run_dir):
    import csv
    import os

    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return [float(r["train_loss"]) for r in csv.DictReader(f)]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_two_local_workers_give_the_single_process_rounds(spread, variant):
    import numpy as np

    from keyboard_lm.models.run_dir import load_run

    root, results = spread
    for name in (f"local-{variant}", f"remote-{variant}"):
        assert results[name][0] == 0, results[name][2][-2000:]
    assert "training on 2 TFF workers" in results[f"remote-{variant}"][1]
    local, spread_losses = _losses(root / f"local-{variant}"), _losses(root / f"remote-{variant}")
    assert len(local) == len(spread_losses) == 2
    np.testing.assert_allclose(spread_losses, local, rtol=1e-5)
    if variant != "compression":  # stochastic quantization draws unseeded noise inside TFF
        a, b = load_run(str(root / f"local-{variant}")).weights, load_run(str(root / f"remote-{variant}")).weights
        for name in a:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-4, atol=1e-6)


def test_workers_refuse_what_is_not_checked_under_the_mergeable_context(tmp_path, capsys):
    from keyboard_lm.cli import main

    assert main(["train", "--out", str(tmp_path / "r"), *SMALL, "--algorithm", "fedatt",
                 "--workers", "127.0.0.1:1"]) == 2
    assert "FedAtt cannot run on TFF's mergeable context" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "r"), *SMALL, "--workers", "nohost"]) == 2
    assert "not host:port" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "r"), *SMALL, "--worker-grace", "5"]) == 2
    assert "--worker-grace needs --workers" in capsys.readouterr().err


def _wait_stopped(pid: int, timeout: float = 10.0) -> None:
    """Until every thread of ``pid`` is in the stopped state (T in /proc/PID/task/*/stat)."""
    import glob
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for path in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                with open(path, encoding="utf-8") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:  # a thread that just ended
                continue
        if states and all(s in "Tt" for s in states):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not stop within {timeout} s")


def _checkpointed(out: str) -> int:
    """The latest round whose program state ``out`` holds (0 before the first)."""
    import os

    path = os.path.join(out, "checkpoints")
    names = os.listdir(path) if os.path.isdir(path) else []
    rounds = [n.rsplit("_", 1)[1] for n in names if n.startswith("program_state_")]
    return max((int(r) for r in rounds if r.isdigit()), default=0)  # not a write in progress (_tempN)


def test_a_dead_then_a_hung_worker_is_a_clear_error_and_resume_finishes(tmp_path):
    """Killed: it refuses connections. Hung (SIGSTOP): the kernel still accepts TCP, the gRPC probe finds it
    silent. One run meets both, each ended by the watchdog and resumed; then it finishes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = str(tmp_path / "run")
    ports = [worker_process.free_port(), worker_process.free_port()]
    workers = [remote.start_worker(p, wait=30.0) for p in ports]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    flag = ",".join(f"127.0.0.1:{p}" for p in ports)
    cli = [sys.executable, "-m", "keyboard_lm.cli", "train", "--out", out]
    watch = ["--workers", flag, "--worker-grace", "5"]
    # A checkpoint every round: the faults are timed by the rounds saved, and a resume goes on from the last.
    args = [*SMALL[:-10], "--rounds", "40", "--dropout", "0", "--eval-every", "40", "--checkpoint-every", "1"]

    def ended_by_watchdog(argv, fault, after_round):
        """Start ``train argv``; when a round after ``after_round`` is checkpointed, ``fault`` a worker."""
        train = subprocess.Popen([*cli, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 300
            while _checkpointed(out) <= after_round:
                assert train.poll() is None and time.monotonic() < deadline, train.stderr.read()[-2000:]
                time.sleep(0.2)
            fault()
            started = time.monotonic()
            _, err = train.communicate(timeout=180)  # bounded: the watchdog ends the run
        finally:
            if train.poll() is None:
                train.kill()
        assert train.returncode == 3, err[-2000:]
        assert time.monotonic() - started < 60
        return err

    def kill():
        workers[1].kill()
        workers[1].wait(timeout=10)

    def stop():
        os.kill(workers[0].pid, signal.SIGSTOP)
        _wait_stopped(workers[0].pid)  # the signal is asynchronous: a thread may still answer one call
        with socket.create_connection(("127.0.0.1", ports[0]), timeout=2.0):
            pass  # a TCP check cannot tell
        assert remote.probe("127.0.0.1", ports[0], timeout=2.0) == "silent"

    try:
        err = ended_by_watchdog([*args, *watch], kill, after_round=1)
        assert f"TFF worker 127.0.0.1:{ports[1]} has refused connections for 5 s" in err and "--resume" in err
        workers[1] = remote.start_worker(ports[1], wait=30.0)  # restarted on the same port
        done = _checkpointed(out)
        err = ended_by_watchdog(["--resume", *watch], stop, after_round=done)
        assert f"TFF worker 127.0.0.1:{ports[0]} has accepted connections but not answered" in err
        assert "--resume" in err
        os.kill(workers[0].pid, signal.SIGCONT)
        assert remote.probe("127.0.0.1", ports[0], timeout=5.0) == "ok"
        last = _checkpointed(out) + 2
        finished = subprocess.run([*cli, "--resume", "--rounds", str(last), *watch], capture_output=True, text=True,
                                  env=env, timeout=600)
        assert finished.returncode == 0, finished.stderr[-2000:]
        with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
            rounds = [int(line.split(",")[0]) for line in f.read().splitlines()[1:]]
        assert rounds == list(range(1, last + 1))
    finally:
        for w in workers:
            if w.poll() is None:
                os.kill(w.pid, signal.SIGCONT)
                w.kill()
            w.wait(timeout=10)


def test_workers_read_their_clients_data_themselves(spread):
    """--worker-data: the same rounds as the driver-side data; a worker without the data is a clear error."""
    import os

    import numpy as np

    from keyboard_lm.models.run_dir import load_run

    root, results = spread
    code, out, err = results["worker-data"]
    assert code == 0, err[-2000:]
    assert "client shards" in out and os.path.exists(os.path.join(root, "shards", "manifest.json"))
    np.testing.assert_allclose(_losses(root / "worker-data"), _losses(root / "local-plain"), rtol=1e-5)
    a, b = load_run(str(root / "local-plain")).weights, load_run(str(root / "worker-data")).weights
    for name in a:
        np.testing.assert_allclose(b[name], a[name], rtol=1e-4, atol=1e-6)
    code, _, err = results["worker-data-missing"]
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "round 1: a TFF worker could not read client data under" in last
    assert "elsewhere/clients/" in last and "No such file or directory" in last


def test_worker_data_flags_are_checked(tmp_path, capsys):
    from keyboard_lm.cli import main

    assert main(["train", "--out", str(tmp_path / "r"), *SMALL, "--worker-data-root", "/x"]) == 2
    assert "give --worker-data too" in capsys.readouterr().err
    assert main(["train", "--centralized", "--out", str(tmp_path / "r"), "--worker-data", "d"]) == 2
    assert "federated training only" in capsys.readouterr().err


def test_a_round_that_never_finishes_ends_the_run(tmp_path):
    """The round timeout: a worker that answers probes but never finishes its part is caught too."""
    import os
    import subprocess
    import sys

    port = worker_process.free_port()
    worker = remote.start_worker(port, wait=30.0)
    try:
        done = subprocess.run([sys.executable, "-m", "keyboard_lm.cli", "train", "--out", str(tmp_path / "r"),
                               *SMALL, "--workers", f"127.0.0.1:{port}", "--round-timeout", "0.5"],
                              capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    finally:
        worker.kill()
        worker.wait(timeout=10)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "no round finished in" in done.stderr and "(timeout 0.5 s)" in done.stderr
    assert "--resume" in done.stderr


def test_round_timeout_follows_the_slowest_round_and_probe_tells_down():
    watchdog = remote.Watchdog([("127.0.0.1", 1)])
    assert watchdog.timeout() == 1800.0  # the first round traces and compiles
    watchdog.round_done(1, 30.0)
    assert watchdog.timeout() == 600.0  # at least min_round_timeout
    watchdog.round_done(2, 100.0)
    watchdog.round_done(3, 20.0)
    assert watchdog.timeout() == 1000.0  # 10x the slowest round so far
    assert remote.Watchdog([], round_timeout=5.0).timeout() == 5.0
    assert remote.probe("127.0.0.1", worker_process.free_port(), timeout=2.0) == "down"

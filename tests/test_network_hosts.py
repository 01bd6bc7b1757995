"""`keyboard-lm train --workers` across a network: the driver and two workers on hosts that are network
namespaces joined by a switch (benchmarks/common/netns.py), each worker reached at its host's address."""

import os
import subprocess
import sys
import time

import pytest

from benchmarks.common import netns as _netns
from tests.conftest import worker_isolation_unavailable
from tests.test_remote_workers import SMALL, _checkpointed, _losses

pytestmark = pytest.mark.heavy

PORT = 8001  # each host is a namespace of its own: the same port on every host
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
CLI = [sys.executable, "-m", "keyboard_lm.cli"]
GRACE, INTERVAL = 5.0, 5.0  # --worker-grace given here; the watchdog's probe interval (its probe timeout too)


SKIP = _netns.unavailable() or worker_isolation_unavailable()
if SKIP is not None:
    pytest.skip(SKIP, allow_module_level=True)


@pytest.fixture(scope="module")
def hosts():
    """Host 0 is the driver; hosts 1 and 2 each run `keyboard-lm worker --bind <its address> --insecure`."""
    net = _netns.Network(3).__enter__()
    workers = []
    try:
        for i in (1, 2):
            argv = [*CLI, "worker", "--bind", net.address(i), "--port", str(PORT), "--insecure"]
            workers.append(subprocess.Popen(net.command(i, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True, env=ENV))
        for w in workers:
            line = w.stdout.readline()
            assert "TFF worker on" in line, w.stderr.read()[-2000:]
        yield net, ",".join(f"{net.address(i)}:{PORT}" for i in (1, 2))
    finally:
        for w in workers:
            if w.poll() is None:
                w.terminate()  # SIGTERM: the worker stops its relay and TFF's worker
            try:
                w.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        net.close()


def test_two_hosts_give_the_single_process_rounds_and_move_bytes(hosts, tmp_path, record_property):
    import numpy as np

    from keyboard_lm.cli import main

    net, flag = hosts
    assert main(["train", "--out", str(tmp_path / "local"), *SMALL]) == 0
    before = net.counters()
    done = net.run(0, [*CLI, "train", "--out", str(tmp_path / "hosts"), *SMALL, "--workers", flag],
                   capture_output=True, text=True, env=ENV, timeout=600)
    after = net.counters()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "training on 2 TFF workers" in done.stdout
    np.testing.assert_allclose(_losses(tmp_path / "hosts"), _losses(tmp_path / "local"), rtol=1e-5)
    moved = {i: (after[i][0] - before[i][0], after[i][1] - before[i][1]) for i in after}
    record_property("bytes_sent_received_per_host", moved)
    print("bytes (sent, received) per host, 0 = driver:", moved)
    for i in (1, 2):  # each worker received its part of the round and sent a partial aggregate back
        assert moved[i][0] > 0 and moved[i][1] > 0
    # Every byte a worker moved crossed the driver's link (the switch carries nothing else of theirs).
    assert moved[0][0] >= moved[1][1] + moved[2][1] - 10_000
    assert moved[0][1] >= moved[1][0] + moved[2][0] - 10_000


def test_a_cut_link_ends_the_run_and_resume_finishes_it(hosts, tmp_path):
    net, flag = hosts
    out = str(tmp_path / "run")
    watch = ["--workers", flag, "--worker-grace", str(int(GRACE))]
    # A checkpoint every round: the faults are timed by the rounds saved, and a resume goes on from the last.
    args = [*SMALL[:-10], "--rounds", "40", "--dropout", "0", "--eval-every", "40", "--checkpoint-every", "1"]
    cut = f"{net.address(2)}:{PORT}"
    train = subprocess.Popen(net.command(0, [*CLI, "train", "--out", out, *args, *watch]), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 300
        while _checkpointed(out) < 1:
            assert train.poll() is None and time.monotonic() < deadline, train.stderr.read()[-2000:]
            time.sleep(0.2)
        net.set_link(2, False)
        started = time.monotonic()
        _, err = train.communicate(timeout=180)
        took = time.monotonic() - started
    finally:
        if train.poll() is None:
            train.kill()
            train.wait()
        net.set_link(2, True)
    assert train.returncode == 3, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"TFF worker {cut} has been unreachable" in errors[0], err[-2000:]
    assert "--resume" in errors[0]
    # The watchdog's bound: a probe may start just before the cut and pass; the next, one interval later, waits a
    # probe timeout; a worker that refuses (no ARP answer) is judged again one interval and one probe later.
    assert took < GRACE + 2 * (INTERVAL + INTERVAL) + 5, took
    print(f"the watchdog ended the run {took:.1f} s after the cut: {errors[0]}")
    last = _checkpointed(out) + 2
    finished = net.run(0, [*CLI, "train", "--out", out, "--resume", "--no-phrases", "--rounds", str(last), *watch],
                       capture_output=True, text=True, env=ENV, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
        rounds = [int(line.split(",")[0]) for line in f.read().splitlines()[1:]]
    assert rounds == list(range(1, last + 1))

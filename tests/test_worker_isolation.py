"""`keyboard-lm worker` in its own network namespace: reachable only at --bind:--port, TLS with client
certificates in front of it, and one line for each bad combination of flags."""

import json
import re
import socket
import struct

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated import worker_process
from keyboard_lm.federated.distributed import remote, worker_tls
from tests.conftest import worker_isolation_unavailable
from tests.test_remote_workers import SMALL, _drive, _losses

pytestmark = pytest.mark.heavy

#: TFF's executor service: the first call a driver makes to a worker.
GET_EXECUTOR = "/tensorflow_federated.v0.ExecutorGroup/GetExecutor"


SKIP = worker_isolation_unavailable()
needs_namespaces = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


def _listeners(port: int) -> set[str]:
    """Addresses with a TCP socket in LISTEN state on ``port`` in this process's network namespace."""
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            with open(table, encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:  # no IPv6 in this kernel
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:
                continue
            # The kernel prints each 32-bit word of the address in host (little-endian) order.
            raw = b"".join(struct.pack("<I", int(address[i:i + 8], 16)) for i in range(0, len(address), 8))
            found.add(socket.inet_ntop(family, raw))
    return found


def _call(port: int, credentials=None, host: str = "127.0.0.1"):
    """One GetExecutor call (empty request); the gRPC status code, or OK."""
    import grpc

    channel = (grpc.insecure_channel(f"{host}:{port}") if credentials is None
               else grpc.secure_channel(f"{host}:{port}", credentials))
    try:
        channel.unary_unary(GET_EXECUTOR, request_serializer=lambda b: b,
                            response_deserializer=lambda b: b)(b"", timeout=10.0)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()
    finally:
        channel.close()


@needs_namespaces
def test_worker_listens_only_on_the_bound_address():
    """TFF's worker binary listens on every interface; in its namespace only the bound socket is visible."""
    port = worker_process.free_port()
    proc = remote.start_worker(port, bind="127.0.0.2", wait=30.0)
    try:
        assert proc.isolated
        assert _listeners(port) == {"127.0.0.2"}  # not 0.0.0.0, not ::
        assert remote.probe("127.0.0.2", port, timeout=5.0) == "ok"
        with pytest.raises(OSError):  # another loopback address of the same machine: nothing there
            socket.create_connection(("127.0.0.1", port), timeout=2.0).close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert _listeners(port) == set()
    assert remote.probe("127.0.0.2", port, timeout=2.0) == "down"


def _ended(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie waiting to be reaped) within ``timeout`` s."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _without_namespaces(argv: list[str]) -> list[str]:
    """``keyboard-lm argv`` in a user namespace whose limits forbid new network and user namespaces, as some
    containers do; None where this system cannot make such a namespace."""
    import shutil
    import subprocess
    import sys

    limits = "echo 0 > /proc/sys/user/max_net_namespaces && echo 0 > /proc/sys/user/max_user_namespaces"
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "--user", "--map-root-user", "sh", "-c", limits], capture_output=True).returncode != 0:
        return None
    return ["unshare", "--user", "--map-root-user", "sh", "-c", f'{limits} && exec "$@"', "sh",
            sys.executable, "-m", "keyboard_lm.cli", *argv]


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
def test_without_namespaces_the_worker_is_refused_unless_all_interfaces_are_allowed():
    import os
    import subprocess

    port = worker_process.free_port()
    refused = _without_namespaces(["worker", "--port", str(port)])
    if refused is None:
        pytest.skip("cannot make a user namespace with namespace limits here (unshare)")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(refused, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("keyboard-lm: error: cannot isolate TFF's worker: this system does not "
                                          "permit network namespaces") and "\n" not in done.stderr.strip()
    allowed = subprocess.Popen(_without_namespaces(["worker", "--port", str(port), "--allow-all-interfaces"]),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = allowed.stdout.readline()
        assert "Warning: this system does not permit network namespaces" in line
        assert _listeners(port) & {"0.0.0.0", "::"}  # TFF's worker as it is: every interface
    finally:
        allowed.terminate()
        allowed.communicate(timeout=30)
    # SIGTERM ended the worker too: its process (the pid the line names), not whatever holds the port now (a
    # worker of a test running beside this one may have been given the same free port since)
    pid = int(re.search(r"\(pid (\d+)\)", line).group(1))
    assert _ended(pid, timeout=10.0), f"TFF's worker (pid {pid}) still runs after `worker` got SIGTERM"


def test_a_process_bound_to_its_parent_ends_when_the_parent_is_killed():
    """``bound_to_this_process``, how TFF's worker runs without namespaces (no relay watching over it): the
    command keeps its pid and ends when the process that started it does, even one killed with SIGKILL."""
    import os
    import signal
    import subprocess
    import sys

    from keyboard_lm.federated import worker_relay

    starter = ("import importlib.util as u, subprocess, sys, time\n"
               "s = u.spec_from_file_location('worker_relay', sys.argv[1])\n"
               "m = u.module_from_spec(s)\n"
               "s.loader.exec_module(m)\n"
               "cmd = [sys.executable, '-c', 'import time; time.sleep(600)']\n"
               "p = subprocess.Popen(m.bound_to_this_process(cmd) if sys.argv[2] == 'bound' else cmd)\n"
               "print(p.pid, flush=True)\n"
               "time.sleep(600)\n")
    for bound in (True, False):
        parent = subprocess.Popen([sys.executable, "-c", starter, worker_relay.__file__, "bound" if bound else "plain"],
                                  stdout=subprocess.PIPE, text=True)
        pid = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        try:
            assert _ended(pid, timeout=10.0 if bound else 1.0) is bound
        finally:
            if not bound:
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """Two directories from `worker --tls-init`: ``a`` (the worker's CA) and ``b`` (another CA)."""
    root = tmp_path_factory.mktemp("tls")
    try:
        for name in ("a", "b"):
            worker_tls.init_dir(str(root / name), ["worker.test"])
    except ConfigError as e:
        pytest.skip(str(e))
    return root


def _files(directory, role: str) -> worker_tls.TLSFiles:
    return worker_tls.TLSFiles(str(directory / f"{role}.pem"), str(directory / f"{role}-key.pem"),
                               str(directory / "ca.pem"))


@needs_namespaces
def test_a_round_through_a_tls_worker_equals_the_single_process_round(tmp_path, certificates):
    a = certificates / "a"
    port = worker_process.free_port()
    worker = remote.start_worker(port, wait=30.0, tls=_files(a, "server"))
    tls = ["--tls-ca", str(a / "ca.pem"), "--tls-cert", str(a / "client.pem"), "--tls-key", str(a / "client-key.pem")]
    try:
        results = _drive({"local": ["train", "--out", str(tmp_path / "local"), *SMALL],
                          "tls": ["train", "--out", str(tmp_path / "tls"), *SMALL,
                                  "--workers", f"127.0.0.1:{port}", *tls]})
    finally:
        worker.terminate()
        worker.wait(timeout=15)
    for name in ("local", "tls"):
        assert results[name][0] == 0, results[name][2][-2000:]
    assert "training on 1 TFF workers (TLS)" in results["tls"][1]
    local, remote_losses = _losses(tmp_path / "local"), _losses(tmp_path / "tls")
    assert len(local) == 2
    import numpy as np

    np.testing.assert_allclose(remote_losses, local, rtol=1e-5)
    info = json.loads((tmp_path / "tls" / "run.json").read_text(encoding="utf-8"))
    assert info["workers"] == {"addresses": [f"127.0.0.1:{port}"], "tls": True}
    assert json.loads((tmp_path / "local" / "run.json").read_text(encoding="utf-8"))["workers"] is None


@needs_namespaces
def test_clients_without_the_right_certificate_are_refused_and_the_worker_stays_up(certificates):
    import grpc

    a, b = certificates / "a", certificates / "b"
    port = worker_process.free_port()
    worker = remote.start_worker(port, wait=30.0, tls=_files(a, "server"))
    try:
        good = worker_tls.channel_credentials(_files(a, "client"))
        assert _call(port, good) == grpc.StatusCode.NOT_FOUND  # the worker's own answer to an empty request
        no_certificate = grpc.ssl_channel_credentials(root_certificates=(a / "ca.pem").read_bytes())
        other_ca = grpc.ssl_channel_credentials(root_certificates=(a / "ca.pem").read_bytes(),
                                                private_key=(b / "client-key.pem").read_bytes(),
                                                certificate_chain=(b / "client.pem").read_bytes())
        for refused in (None, no_certificate, other_ca):  # plaintext, no client certificate, another CA's
            assert _call(port, refused) == grpc.StatusCode.UNAVAILABLE
        assert worker.poll() is None
        assert _call(port, good) == grpc.StatusCode.NOT_FOUND
        assert remote.probe("127.0.0.1", port, timeout=5.0, credentials=good) == "ok"
        assert remote.probe("localhost", port, timeout=5.0, credentials=good) == "ok"  # in the certificate
        with pytest.raises(ConfigError, match="not gRPC in plaintext"):
            remote._check_channel("127.0.0.1", port, None)
    finally:
        worker.terminate()
        worker.wait(timeout=15)


@needs_namespaces
@pytest.mark.skipif(__import__("shutil").which("openssl") is None, reason="the openssl command is not installed")
def test_certificates_from_the_openssl_command_work_too(tmp_path):
    """--tls-init falls back to the openssl command where the cryptography package is missing."""
    worker_tls.init_dir(str(tmp_path), ["worker.test"], tool="openssl")
    assert oct((tmp_path / "client-key.pem").stat().st_mode & 0o777) == "0o600"
    port = worker_process.free_port()
    worker = remote.start_worker(port, wait=30.0, tls=_files(tmp_path, "server"))
    try:
        good = worker_tls.channel_credentials(_files(tmp_path, "client"))
        assert remote.probe("localhost", port, timeout=5.0, credentials=good) == "ok"
        assert remote.probe("127.0.0.1", port, timeout=5.0) == "down"
    finally:
        worker.terminate()
        worker.wait(timeout=15)


def _one_line_error(capsys, argv) -> str:
    from keyboard_lm.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("keyboard-lm: error: "), err
    return err


def test_bad_worker_and_tls_flags_are_one_line(tmp_path, capsys, certificates):
    a = certificates / "a"
    assert "--tls-cert without --tls-key and --tls-client-ca" in _one_line_error(
        capsys, ["worker", "--port", "1", "--tls-cert", str(a / "server.pem")])
    assert "--bind 10.0.0.1: plaintext" in _one_line_error(capsys, ["worker", "--port", "1", "--bind", "10.0.0.1"])
    assert "already there; refusing to overwrite" in _one_line_error(capsys, ["worker", "--tls-init", str(a)])
    assert "--port is required" in _one_line_error(capsys, ["worker"])
    (tmp_path / "notes.txt").write_text("not a certificate", encoding="utf-8")
    assert "notes.txt: not a PEM file" in _one_line_error(
        capsys, ["worker", "--port", "1", "--tls-cert", str(a / "server.pem"), "--tls-key", str(a / "server-key.pem"),
                 "--tls-client-ca", str(tmp_path / "notes.txt")])
    run = ["train", "--out", str(tmp_path / "r"), *SMALL]
    assert "give --workers" in _one_line_error(capsys, [*run, "--tls-ca", str(a / "ca.pem")])
    assert "--tls-ca without --tls-cert and --tls-key" in _one_line_error(
        capsys, [*run, "--workers", "127.0.0.1:1", "--tls-ca", str(a / "ca.pem")])
    # Nothing was overwritten by the refused --tls-init.
    assert (a / "ca.pem").read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")

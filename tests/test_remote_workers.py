"""TFF's worker binary started on 127.0.0.1 (issue 15, first piece)."""

import socket

import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated import remote


def test_parse_workers_and_refusals():
    assert remote.parse_workers("127.0.0.1:8000, h:9") == [("127.0.0.1", 8000), ("h", 9)]
    with pytest.raises(ConfigError, match="not host:port"):
        remote.parse_workers("127.0.0.1")
    with pytest.raises(ConfigError, match="--bind 10.0.0.1"):
        remote.start_worker(1, bind="10.0.0.1")


def test_worker_starts_listens_and_stops():
    port = remote.free_port()
    proc = remote.start_worker(port, wait=30.0)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0):
            pass
    finally:
        proc.kill()
        proc.wait(timeout=10)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2.0).close()

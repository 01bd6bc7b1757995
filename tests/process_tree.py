"""What a process tree runs and listens on, read from Linux /proc: the suite's own checks that a run opens no
network port and leaves no process behind."""

from __future__ import annotations

import os
import socket
import struct

from keyboard_lm.federated.local_worker import process_stat as _stat


def descendants(root: int) -> dict[int, str]:
    """pid -> comm of every live process under ``root`` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    comms: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            comms[int(entry)] = stat[0]
            parents.setdefault(stat[1], []).append(int(entry))
    found, todo = {}, [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found[child] = comms[child]
            todo.append(child)
    return found


def _address(hex_address: str, family: int) -> str:
    # The kernel prints each 32-bit word of the address in host (little-endian) order.
    raw = b"".join(struct.pack("<I", int(hex_address[i:i + 8], 16)) for i in range(0, len(hex_address), 8))
    return socket.inet_ntop(family, raw)


def _net_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _interfaces(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/net/dev", encoding="ascii") as f:
            return [row.split(":")[0].strip() for row in f.read().splitlines()[2:]]
    except OSError:
        return []


def listening(pids) -> list[dict]:
    """Every TCP socket in LISTEN state that one of ``pids`` holds: its address and port, and whether it is in
    this process's network namespace (``host``) and which interfaces its namespace has."""
    mine = _net_namespace(os.getpid())
    found = []
    for pid in pids:
        try:
            inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                      if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
        except OSError:  # ended, or not ours to read
            continue
        for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
            try:
                with open(f"/proc/{pid}/net/{table}", encoding="ascii") as f:
                    rows = [row.split() for row in f.read().splitlines()[1:]]
            except OSError:
                continue
            for row in rows:
                if row[3] == "0A" and row[9] in inodes:
                    address, port = row[1].split(":")
                    found.append({"pid": pid, "address": _address(address, family), "port": int(port, 16),
                                  "host": _net_namespace(pid) == mine, "interfaces": _interfaces(pid)})
    return found


def reachable_from_network(sockets: list[dict]) -> list[dict]:
    """The sockets of ``listening`` that another machine could reach: in the host's namespace on a non-loopback
    address, or in a namespace that has an interface other than loopback."""
    import ipaddress

    def loopback(s):
        return ipaddress.ip_address(s["address"]).is_loopback

    return [s for s in sockets if (s["host"] and not loopback(s)) or (not s["host"] and s["interfaces"] != ["lo"])]


def with_environment(name: str, value: str) -> list[int]:
    """Live processes of this user whose environment holds ``name=value`` (this process excluded)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    stat = _stat(int(entry))
                    if stat is not None:
                        found.append(int(entry))
        except OSError:
            continue
    return found

"""Hosts on one machine: network namespaces joined by a switch, for tests and benchmarks of TFF workers.

``Network(n)`` builds ``n`` hosts, each a network namespace with one address
(10.203.X.i/24) on a veth pair whose other end is a port of a Linux bridge in
a switch namespace of its own; everything is named with a prefix unique to
this process (``kblm-<pid>-``).  A link can be shaped with a tbf qdisc on
both of its ends (``rate_mbit``: each direction), read through the switch
port's byte counters, cut and restored.  Nothing touches the machine's own
namespace: the veth pairs are created inside the namespaces, and deleting a
namespace deletes its ends.

Needs root and iproute2 (``ip``, ``tc``).  Delay cannot be added where the
kernel lacks the ``netem`` qdisc; bandwidth (tbf) needs only ``sch_tbf``.

    with Network(3, rate_mbit=100) as net:   # one Network at a time in a process: the names carry its pid
        subprocess.Popen(net.command(1, ["keyboard-lm", "worker", "--bind", net.address(1), ...]))
        net.counters()  # {host: (bytes the host sent, bytes it received)}
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

#: The /16 the hosts' /24 is taken from; only namespaces made here use it.
SUBNET = "10.203"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def unavailable() -> str | None:
    """None if namespaces, veth pairs and a bridge can be made here, else one line saying why not."""
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "iproute2 (ip, tc) not installed"
    if os.geteuid() != 0:
        return "needs root (ip netns add)"
    try:
        with Network(1):
            pass
    except OSError as e:
        return f"cannot make network namespaces here ({e})"
    return None


class Network:
    """``hosts`` namespaces on one bridge; ``rate_mbit`` shapes every link (each direction), None for none."""

    def __init__(self, hosts: int, rate_mbit: float | None = None):
        self.n = hosts
        self.prefix = f"kblm-{os.getpid()}-"
        self.switch = self.prefix + "switch"
        self.hosts = [f"{self.prefix}h{i}" for i in range(hosts)]
        # Interface names (at most 15 characters) carry the pid too: the port on the switch, the host's end.
        self.ports = [f"kb{os.getpid()}p{i}" for i in range(hosts)]
        self.ifaces = [f"kb{os.getpid()}h{i}" for i in range(hosts)]
        self.net = f"{SUBNET}.{os.getpid() % 250 + 1}"
        self.rate_mbit = rate_mbit
        self._made: list[str] = []

    def address(self, i: int) -> str:
        return f"{self.net}.{i + 1}"

    def __enter__(self) -> Network:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _build(self) -> None:
        for ns in (self.switch, *self.hosts):
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, host in enumerate(self.hosts):
            _ip("-n", self.switch, "link", "add", self.ports[i], "type", "veth", "peer", "name", self.ifaces[i],
                "netns", host)
            _ip("-n", self.switch, "link", "set", self.ports[i], "master", "br0", "up")
            _ip("-n", host, "addr", "add", f"{self.address(i)}/24", "dev", self.ifaces[i])
            _ip("-n", host, "link", "set", self.ifaces[i], "up")
        if self.rate_mbit:
            self.shape(self.rate_mbit)

    def shape(self, rate_mbit: float | None) -> None:
        """Every link limited to ``rate_mbit`` in each direction (tbf on both ends); None removes the limit."""
        self.rate_mbit = rate_mbit
        for i in range(self.n):
            for ns, dev in ((self.switch, self.ports[i]), (self.hosts[i], self.ifaces[i])):
                subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
                if rate_mbit:
                    # burst: 10 ms at the rate (at least 64 KB: one segment veth may hand over whole); the
                    # queue holds 50 ms more before tbf drops, as a switch port's buffer would.
                    burst = max(int(rate_mbit * 1e6 / 8 / 100), 65536)
                    done = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                                           f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms"],
                                          capture_output=True, text=True)
                    if done.returncode != 0:
                        raise OSError(f"tc qdisc add ... tbf: {done.stderr.strip()}")

    def counters(self) -> dict[int, tuple[int, int]]:
        """Host -> (bytes the host sent, bytes it received) on its link, read at its switch port."""
        out = _ip("-n", self.switch, "-s", "-j", "link", "show").stdout
        stats = {d["ifname"]: d["stats64"] for d in json.loads(out)}
        # A port receives what its host sends and transmits what the host receives.
        return {i: (stats[p]["rx"]["bytes"], stats[p]["tx"]["bytes"]) for i, p in enumerate(self.ports)}

    def set_link(self, i: int, up: bool) -> None:
        """Cut (``up`` False) or restore host ``i``'s link at its switch port, as pulling its cable would."""
        _ip("-n", self.switch, "link", "set", self.ports[i], "up" if up else "down")

    def command(self, i: int, argv: list[str]) -> list[str]:
        """``argv`` run inside host ``i``."""
        return ["ip", "netns", "exec", self.hosts[i], *argv]

    def run(self, i: int, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(i, argv), **kwargs)

    def close(self) -> None:
        """Delete every namespace made here (their interfaces and qdiscs go with them)."""
        while self._made:
            ns = self._made.pop()
            _ip("netns", "del", ns, check=False)

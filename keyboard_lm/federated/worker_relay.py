"""Run TFF's worker in its own network namespace, reachable only through one listening socket.

TFF 0.87's ``worker_binary`` has no address flag: it listens on every
interface.  ``distributed.remote.start_worker`` therefore binds the listening socket
itself (``--bind ADDR --port P``, in the host's network namespace) and starts
this module as a process that receives that socket as an inherited file
descriptor (``command()``: this file alone, standard library only, so the
process still has one thread when it enters the namespace).  The process

1. enters a new network namespace (``unshare(CLONE_NEWNET)`` as root, else a
   user namespace mapping the caller to root around it), whose only interface
   is loopback, and brings ``lo`` up (an ioctl, no extra tool);
2. starts ``worker_binary`` there; it listens on every interface of the new
   namespace, that is, on its loopback only;
3. relays each connection accepted on the inherited socket (which stays in the
   host's namespace: a socket belongs to the namespace it was created in) to
   the worker at 127.0.0.1 inside, after terminating TLS with a verified
   client certificate if TLS files are given (``worker_tls``).

It asks the kernel to end it when its parent ends (PR_SET_PDEATHSIG) and does
the same for the worker, so nothing it started outlives ``keyboard-lm worker``.
The relay is asyncio (standard library only): one event loop, any number of
connections, backpressure through ``drain``.

Protocol with the parent: one line on stdout, ``ready`` or ``namespace: WHY``
(namespaces not permitted) or ``error: WHY``; then logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import time

CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
PR_SET_PDEATHSIG = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
#: Bytes read per step of a relayed stream (a paper-size round moves about 11 MB each way).
CHUNK = 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent(sig: int = signal.SIGTERM) -> None:
    if _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def enter_namespace() -> str:
    """Move this (single-threaded) process into a new network namespace; returns how, or raises OSError."""
    tried = []
    if os.geteuid() == 0:
        if _libc.unshare(CLONE_NEWNET) == 0:
            return "network namespace"
        tried.append(os.strerror(ctypes.get_errno()))
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        tried.append(os.strerror(err))
        raise OSError(err, f"unshare: {'; '.join(dict.fromkeys(tried))}")
    # Map the caller to root inside the user namespace, as `unshare --map-root-user` does.
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
            f.write(text)
    return "user and network namespace"


def loopback_up() -> None:
    """``ip link set lo up`` without iproute2: SIOCSIFFLAGS on a socket of this namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


#: How to run this file as a process without importing the keyboard_lm package first: the package imports
#: numpy, whose BLAS starts threads, and the kernel refuses a user namespace to a multithreaded process.
_BOOT = ("import importlib.util as u, sys; s = u.spec_from_file_location('worker_relay', sys.argv[1]); "
         "m = u.module_from_spec(s); s.loader.exec_module(m); sys.exit(m.main(sys.argv[2:]))")


def command() -> list[str]:
    """The argv prefix that starts this module's ``main`` in a new process."""
    return [sys.executable, "-c", _BOOT, os.path.abspath(__file__)]


#: Becomes argv[2:] (execv keeps the pid) once the kernel will SIGKILL it when its parent ends; ends at once if
#: the parent, pid argv[1], ended before that.
_EXEC_BOUND = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 9, 0, 0, 0) == 0 or sys.exit('prctl failed'); "
               "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execv(sys.argv[2], sys.argv[2:])")


def bound_to_this_process(cmd: list[str]) -> list[str]:
    """argv that runs ``cmd`` (same pid) so that it cannot outlive this process, even one killed with SIGKILL.

    PR_SET_PDEATHSIG as the relay sets it for itself, but without ``preexec_fn``, which is unsafe in a process
    with threads (TensorFlow's): a small Python sets it, then ``execv``s ``cmd``. As for the relay, the parent
    is the thread that starts the process: it ends when that thread ends.
    """
    return [sys.executable, "-c", _EXEC_BOUND, str(os.getpid()), *cmd]


def check() -> str | None:
    """None if a process may create a network namespace here (tried in a throwaway child), else why not."""
    done = subprocess.run([*command(), "--check"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    line = (done.stdout.strip().splitlines() or [""])[0]
    return line.partition(": ")[2] or line or f"exit code {done.returncode}"


def _start_worker(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: _die_with_parent(signal.SIGKILL))


def _wait_inner(proc: subprocess.Popen, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"TFF worker exited with code {proc.returncode} before accepting connections")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"TFF worker did not accept connections within {timeout:.0f} s") from None
            time.sleep(0.1)


def _log(text: str) -> None:
    print(f"keyboard-lm worker: {text}", file=sys.stderr, flush=True)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def relay(listener: socket.socket, inner_port: int, ssl_context=None, stop: asyncio.Event | None = None,
                handshake_timeout: float = 20.0) -> None:
    """Relay every connection accepted on ``listener`` to 127.0.0.1:``inner_port`` until ``stop`` is set.

    With ``ssl_context`` a connection is relayed only after its TLS handshake
    succeeded (the context requires and verifies a client certificate); a
    refused one never reaches the worker, and one line on stderr names it.
    """
    import ssl

    async def handle(reader, writer):
        peer = writer.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if peer else "?"
        if ssl_context is not None:
            try:
                await writer.start_tls(ssl_context, ssl_handshake_timeout=handshake_timeout)
            except (ssl.SSLError, OSError, asyncio.TimeoutError, ConnectionError) as e:
                if not isinstance(e, (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError)):
                    _log(f"refused a connection from {where}: TLS handshake failed ({getattr(e, 'reason', None) or e})")
                writer.transport.abort()
                return
        try:
            inner_reader, inner_writer = await asyncio.open_connection("127.0.0.1", inner_port, limit=CHUNK)
        except OSError as e:
            _log(f"cannot reach the TFF worker for {where}: {e}")
            writer.transport.abort()
            return
        try:
            await asyncio.gather(_pump(reader, inner_writer), _pump(inner_reader, writer))
        except asyncio.CancelledError:  # the relay stops: drop the connection, quietly
            inner_writer.transport.abort()
            writer.transport.abort()

    listener.setblocking(False)
    server = await asyncio.start_server(handle, sock=listener, limit=CHUNK)
    async with server:
        await (stop or asyncio.Event()).wait()


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """End ``proc`` if it runs: SIGTERM, then SIGKILL if it has not ended within ``timeout`` s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _watch_parent(parent: int | None, stopping: asyncio.Event, interval: float = 1.0) -> None:
    """Set ``stopping`` once this process's parent is no longer ``parent``: a second line of defence behind
    PR_SET_PDEATHSIG, which the kernel sends when the parent's starting *thread* ends, or not at all if the
    parent ended between fork and prctl."""
    while parent is not None and not stopping.is_set():
        if os.getppid() != parent:
            stopping.set()
            return
        await asyncio.sleep(interval)


def _serve(listener: socket.socket, proc: subprocess.Popen, inner_port: int, ssl_context,
           parent: int | None = None) -> int:
    async def main():
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, stopping.set)
        watch = asyncio.ensure_future(_watch_parent(parent, stopping))
        # The worker ending (crash, OOM kill) ends the relay too, so `keyboard-lm worker` returns.
        ended = loop.run_in_executor(None, proc.wait)
        ended.add_done_callback(lambda _: stopping.set())
        try:
            await relay(listener, inner_port, ssl_context, stopping)
        finally:
            watch.cancel()
            stop_process(proc)  # before asyncio.run joins the executor thread that waits for it

    try:
        asyncio.run(main())
    finally:
        stop_process(proc)
    return 0 if proc.returncode in (0, -signal.SIGTERM) else 1


def main(argv: list[str] | None = None) -> int:
    """The relay process (started by ``remote.start_worker``); see the module docstring."""
    p = argparse.ArgumentParser(prog="worker_relay")
    p.add_argument("--check", action="store_true", help="only try to enter a network namespace")
    p.add_argument("--listen-fd", type=int)
    p.add_argument("--parent", type=int, help="pid of the process that must outlive this one")
    p.add_argument("--inner-port", type=int)
    p.add_argument("--wait", type=float, default=30.0)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-client-ca")
    p.add_argument("worker", nargs=argparse.REMAINDER, help="-- worker_binary and its flags")
    args = p.parse_args(argv)

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    if not args.check:
        _die_with_parent()
        if os.getppid() != args.parent:  # the parent ended before the line above
            return 1
    try:
        enter_namespace()  # first: while this process has one thread
        loopback_up()
    except OSError as e:
        say(f"namespace: {e.strerror or e}")
        return 4
    if args.check:
        return 0
    listener = socket.socket(fileno=args.listen_fd)
    ssl_context = None
    if args.tls_cert:
        from keyboard_lm.errors import ConfigError
        from keyboard_lm.federated.distributed.worker_tls import TLSFiles, server_context

        try:
            ssl_context = server_context(TLSFiles(args.tls_cert, args.tls_key, args.tls_client_ca))
        except ConfigError as e:
            say(f"error: {e}")
            return 2
    worker = args.worker[1:] if args.worker[:1] == ["--"] else args.worker
    proc = _start_worker(worker)
    try:
        _wait_inner(proc, args.inner_port, args.wait)
    except RuntimeError as e:
        proc.kill()
        proc.wait()
        say(f"error: {e}")
        return 1
    say("ready")
    # Nobody reads stdout from here on: a later write must not block on a full pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    return _serve(listener, proc, args.inner_port, ssl_context, args.parent)


if __name__ == "__main__":
    sys.exit(main())

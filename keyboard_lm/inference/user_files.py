"""A user's own files (history, personal words): written so that nothing is lost, read within the code's bounds.

Writing (``write_atomic``): ``durable.replace_file``, as run directories are written: a temp file created
exclusively in the target's directory (O_EXCL, a random name, mode 0600), fsynced, renamed over the target
(``os.replace``, atomic on POSIX), and the directory fsynced. A reader therefore sees the old file or the
new one, never a part of one, and a crash or a full disk leaves the old file. Writers of one path serialize
on an advisory lock (``fcntl.flock`` on ``<path>.lock``, a sidecar kept for good: removing it would let two
writers lock two different files), so concurrent saves land one after the other. Readers take no lock: the
rename already makes every read whole, and a read-only directory stays readable.

A target path that is a symbolic link is refused, in one line: following it would write wherever the link
points (the attack a predictable temp name allowed), and replacing the link by a file would silently break
a link the user made and leave its target stale. A link planted between that check and the rename is
replaced, not followed: rename never writes through a link.
"""

from __future__ import annotations

import errno
import os
import stat
import time

try:
    import fcntl
except ImportError:  # not POSIX (Windows): the rename is still atomic; concurrent writers are not serialized
    fcntl = None

from keyboard_lm.durable import replace_file

#: How long a save waits for another writer of the same file before it gives up (seconds).
LOCK_TIMEOUT_S = 30.0


def write_atomic(path: str, data: bytes, what: str, error: type[Exception]) -> None:
    """Replace ``path`` by ``data`` (see the module docstring); failures raise ``error`` in one line naming
    ``path`` and saying that the previous file is unchanged."""
    path = os.fspath(path)
    if os.path.islink(path):
        raise error(f"{path}: is a symbolic link; the {what} is not written through links "
                    f"(give the real path: {os.path.realpath(path)})")
    try:
        with _locked(path, what, error):
            replace_file(path, data, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as e:
        raise error(f"{path}: cannot write the {what} ({e.strerror or e}); the previous file is unchanged") from None


class _locked:
    """``with _locked(path, ...)``: hold the exclusive advisory lock of ``path`` (``<path>.lock``)."""

    def __init__(self, path: str, what: str, error: type[Exception]):
        self.path, self.what, self.error, self.fd = path, what, error, None

    def __enter__(self):
        if fcntl is None:
            return self
        lock = f"{self.path}.lock"
        # O_NOFOLLOW: a link planted at the lock's name is refused, not opened; nothing is ever written to it.
        try:
            self.fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            why = "is a symbolic link" if e.errno == errno.ELOOP else f"cannot be opened ({e.strerror or e})"
            raise self.error(f"{lock}: the lock of the {self.what} {why}; the {self.what} is unchanged") from None
        deadline, pause = time.monotonic() + LOCK_TIMEOUT_S, 0.001
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise self.error(f"{self.path}: another process has been writing the {self.what} for "
                                     f"{LOCK_TIMEOUT_S:g} s (it holds {lock}); the file is unchanged") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock
        return False


def read_limited(path: str, max_bytes: int, what: str, error: type[Exception]) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` (the code's bound, not the file's);
    anything else raises ``error`` in one line naming the file."""
    path = os.fspath(path)
    try:
        # O_NONBLOCK: a FIFO planted at the path does not block the open (it is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise error(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise error(f"{path}: not a regular file, so not a {what}")
            if st.st_size > max_bytes:
                raise error(f"{path}: {st.st_size:,} bytes, more than the {max_bytes:,} a {what} may have")
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise error(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    if len(data) > max_bytes:  # grew while it was read
        raise error(f"{path}: more than the {max_bytes:,} bytes a {what} may have")
    return data

"""Replacing a file all at once, durably: how keyboard_lm writes every file a crash must not leave half-written.

The new bytes go to a temporary file created exclusively (``tempfile.mkstemp``: O_EXCL, a random name, mode
0600) in the target's directory, are fsynced, renamed over the target, and the directory is fsynced: after
a crash the target holds its old bytes or the new ones, and no predictable name is ever written through.
Standard library only, below every layer, so run directories (``models.run_dir``) and a user's files on the
device (``inference.user_files``) share it.
"""

from __future__ import annotations

import errno
import os
import tempfile


def fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable; a file system that cannot sync a directory is left as it is."""
    fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)


def replace_file(path: str, data: bytes, *, prefix: str = ".tmp-", suffix: str = "", mode: int | None = None) -> None:
    """Replace ``path`` by ``data`` (see the module docstring); ``mode``: the new file's permissions (default
    mkstemp's owner-only). An OSError leaves ``path`` as it was and removes the temporary file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(directory)

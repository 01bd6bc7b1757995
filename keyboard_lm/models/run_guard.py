"""What keeps a run directory safe: one run at a time, and a list of the files the run wrote.

A run holds an exclusive ``flock`` on ``run.lock`` in its directory for as long as it trains (the kernel drops
it when the process ends, however it ends), so a second ``train`` or ``--resume`` on the directory is refused at
once, naming the process that holds it. ``manifest.json`` lists every file and directory the run wrote;
``--overwrite`` removes those and nothing else (directories only when empty), so files a user keeps in a run
directory, even under ``checkpoints/`` or ``tensorboard/``, survive. A directory holding a run.json without a
manifest of the same run (one keyboard_lm did not write, or a run made before manifests existed) is refused,
not cleaned. No TensorFlow here.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import uuid

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import (CHECKPOINT_DIR, METRICS_FILE, RUN_FILE, RUN_FORMAT, VOCAB_FILE, WEIGHTS_FILE,
                                        RunWriteError, atomic_write, run_command)

LOCK_FILE, MANIFEST_FILE = "run.lock", "manifest.json"
MANIFEST_FORMAT = "keyboard_lm.manifest/1"
#: What every run may write at its top level, listed before it writes them (a run killed half-way leaves
#: nothing unlisted); what it writes under them (checkpoints, event files) is listed as it writes it.
RUN_FILES = (RUN_FILE, VOCAB_FILE, WEIGHTS_FILE, METRICS_FILE, "metrics.png")
RUN_DIRS = (CHECKPOINT_DIR, "tensorboard")
#: ``atomic_write``'s temporary files (mkstemp's ".tmp-" and 8 random characters): a process killed while writing
#: leaves one behind.
_TEMP = re.compile(r"^\.tmp-[A-Za-z0-9_]{8}$")


class RunGuard:
    """A run directory this process holds: the lock, and the manifest of what the run wrote.

    ``record`` adds paths (relative to the directory) to the manifest; a run without a manifest (resumed
    from before manifests existed) records nothing. ``release`` drops the lock; so does the end of the process.
    """

    def __init__(self, path: str, fd: int, run_id: str | None, entries: dict | None):
        self.path, self._fd, self.run_id, self._entries = path, fd, run_id, entries

    def record(self, *paths: str) -> None:
        """List ``paths`` (files or directories, relative to the run directory) in the manifest."""
        if self._entries is None or self._fd is None:
            return
        new = [p for p in paths if p not in self._entries["files"] and p not in self._entries["directories"]]
        if not new:
            return
        for p in new:
            self._entries["directories" if os.path.isdir(os.path.join(self.path, p)) else "files"].append(p)
        self._write()

    def record_tree(self, directory: str) -> None:
        """List ``directory`` (relative) and everything under it: a checkpoint the run has just written."""
        found = [directory]
        for root, dirs, files in os.walk(os.path.join(self.path, directory)):
            rel = os.path.relpath(root, self.path)
            found += [os.path.join(rel, d) for d in dirs] + [os.path.join(rel, f) for f in files]
        self.record(*found)

    def forget_missing(self) -> None:
        """Drop entries the run has removed since (pruned checkpoints), so the manifest does not grow."""
        if self._entries is None or self._fd is None:
            return
        fixed = set(RUN_FILES) | set(RUN_DIRS) | set(self._entries.get("planned", ()))
        changed = False
        for kind in ("files", "directories"):
            kept = [p for p in self._entries[kind] if p in fixed or os.path.lexists(os.path.join(self.path, p))]
            changed |= len(kept) != len(self._entries[kind])
            self._entries[kind] = kept
        if changed:
            self._write()

    def _write(self) -> None:
        doc = {"format": MANIFEST_FORMAT, "run_id": self.run_id, **self._entries}
        atomic_write(os.path.join(self.path, MANIFEST_FILE), (json.dumps(doc, indent=1) + "\n").encode("utf-8"),
                     mode=0o644)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _in_use(run_dir: str, fd: int) -> ConfigError:
    """The one line for a lock another process holds, naming it when it wrote its pid into the lock file."""
    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    who = f" (pid {holder})" if holder.isdigit() else ""
    return ConfigError(f"{run_dir}: in use by another keyboard-lm run{who}; wait for it to end, or choose "
                       "another --out")


def lock_run_dir(run_dir: str) -> int:
    """Take the run directory's lock (exclusive, not waiting); returns its descriptor.

    Refused in one line when another process holds it, naming that process when it wrote its pid.
    """
    path = os.path.join(run_dir, LOCK_FILE)
    try:
        # O_NOFOLLOW: a lock file planted as a symlink is refused, not followed; O_CLOEXEC: a program the run
        # starts (TFF's worker) does not inherit the lock and keep it after the run has ended.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise ConfigError(f"{path}: cannot open the run directory's lock ({e.strerror or e})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        error = _in_use(run_dir, fd)
        os.close(fd)
        raise error from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except OSError:
        pass  # the pid only helps the message of a refused second run; a full disk must not stop this one
    return fd


def refuse_if_held(run_dir: str) -> None:
    """Refuse at once (lock_run_dir's one line) when another process holds RUN_DIR's lock; a free lock is released
    again. For ``--resume``: a run still in its first epoch has no run.json yet to say which trainer it is, and
    "in use" is the true answer, not a complaint about the flags."""
    path = os.path.join(run_dir or "", LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # no lock file (or none readable): nothing holds it; the run's own start reports the rest
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(run_dir, fd) from None
    finally:
        os.close(fd)


def read_manifest(run_dir: str, run_id) -> tuple[dict | None, str]:
    """(the manifest's entries, "") when ``run_dir`` holds keyboard_lm's manifest of the run ``run_id``;
    (None, why not) otherwise."""
    path = os.path.join(run_dir, MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, f"no {MANIFEST_FILE} lists the files the run wrote"
    except (OSError, ValueError) as e:
        return None, f"{MANIFEST_FILE} is unreadable ({type(e).__name__})"
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        return None, f"{MANIFEST_FILE} is not keyboard_lm's"
    if not run_id or doc.get("run_id") != run_id:
        return None, f"{MANIFEST_FILE} belongs to another run than {RUN_FILE}"
    entries = {k: [p for p in doc.get(k) or () if isinstance(p, str)] for k in ("files", "directories")}
    entries["planned"] = [p for p in doc.get("planned") or () if isinstance(p, str)]
    return entries, ""


def _inside(run_dir: str, rel: str) -> str | None:
    """The path of ``rel`` in ``run_dir``, or None when it leaves the directory or passes through a symlink."""
    parts = rel.split("/")
    if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts) or rel in (LOCK_FILE, MANIFEST_FILE):
        return None
    prefix = run_dir
    for part in parts[:-1]:
        prefix = os.path.join(prefix, part)
        if os.path.islink(prefix) or not os.path.isdir(prefix):
            return None
    return os.path.join(run_dir, rel)


def remove_listed(run_dir: str, entries: dict) -> list[str]:
    """Remove the files ``entries`` lists, then its directories that are left empty (deepest first);
    returns what stays under those directories that the run did not write (relative paths)."""
    for rel in entries["files"]:
        path = _inside(run_dir, rel)
        if path is not None and os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
            os.remove(path)  # a symlink goes, never what it points to
    kept = []
    for rel in sorted(entries["directories"], key=lambda p: p.count("/"), reverse=True):
        path = _inside(run_dir, rel)
        if path is None or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            os.rmdir(path)
        except OSError:  # not empty: it holds files the run did not write
            kept += [os.path.join(rel, name) for name in sorted(os.listdir(path))
                     if os.path.join(rel, name) not in entries["directories"]]
    return kept


def _holds_only_guard_files(run_dir: str) -> bool:
    return set(os.listdir(run_dir)) <= {LOCK_FILE, MANIFEST_FILE}


def prepare_run_dir(run_dir: str, command: str, overwrite: bool = False, replace_own: bool = False,
                    planned: tuple = (), log=None) -> RunGuard:
    """Make ``run_dir`` ready for a new run of ``command`` and hold it, or refuse with one line saying why.

    A command never deletes or overwrites what it did not create: a missing or
    empty directory is used; one holding a run is replaced only with
    ``overwrite`` (or, with ``replace_own``, when that run came from the same
    command, as the demo re-runs into its own directory), and only when its
    manifest is keyboard_lm's and of that run: replacing removes the files the
    manifest lists, nothing else. A non-empty directory without a run is
    written into only with ``overwrite``. ``planned``: files beyond a run's own
    that this one writes into the directory (the demo's model file). Returns
    the held directory (its lock taken, a new manifest written); release it
    when the run ends.
    """
    if os.path.lexists(run_dir) and not os.path.isdir(run_dir):
        raise ConfigError(f"{run_dir}: exists and is not a directory; choose another --out")
    if (os.path.isdir(run_dir) and not os.path.lexists(os.path.join(run_dir, LOCK_FILE))
            and not _holds_only_guard_files(run_dir)):
        _check_replaceable(run_dir, command, overwrite, replace_own, remove=False)  # refused before writing in it
    fd = None
    try:
        os.makedirs(run_dir, exist_ok=True)
        fd = lock_run_dir(run_dir)  # a run of ours training here refuses this one before anything is read
        if not _holds_only_guard_files(run_dir):
            kept = _check_replaceable(run_dir, command, overwrite, replace_own, remove=True)
            if kept and log is not None:
                log(f"{run_dir}: kept {len(kept)} file(s) the replaced run did not write: {', '.join(kept[:5])}"
                    + (", ..." if len(kept) > 5 else ""))
        guard = RunGuard(run_dir, fd, uuid.uuid4().hex,
                         {"files": [*RUN_FILES, *planned], "directories": list(RUN_DIRS), "planned": list(planned)})
        guard._write()
        return guard
    except BaseException as e:
        if fd is not None:
            os.close(fd)
        if isinstance(e, OSError):
            raise RunWriteError(f"{run_dir}: cannot prepare the run directory ({e.strerror or e})") from None
        raise


def _check_replaceable(run_dir: str, command: str, overwrite: bool, replace_own: bool, remove: bool) -> list:
    """Refuse to write into a non-empty ``run_dir`` unless allowed; with ``remove``, clear the run of ours that
    is replaced. Returns what stays of the replaced run's directories that the run did not write."""
    run_file = os.path.join(run_dir, RUN_FILE)
    if not os.path.lexists(run_file):
        if not overwrite:
            raise ConfigError(f"{run_dir}: is not empty and holds no keyboard_lm run; refusing to write into it "
                              f"(choose a new --out, or --overwrite to write the run's files into it)")
        return []
    try:
        with open(run_file, encoding="utf-8") as f:
            info = json.load(f)
        existing = run_command(info) if isinstance(info, dict) else "unreadable"
    except (OSError, ValueError):
        info, existing = None, "unreadable"
    if not (overwrite or (replace_own and existing == command)):
        hint = " (--resume continues it)" if existing == command == "train" else ""
        raise ConfigError(f"{run_dir}: already holds a '{existing}' run{hint}; refusing to overwrite it "
                          f"(choose another --out, or --overwrite to replace it)")
    ours = isinstance(info, dict) and info.get("format") == RUN_FORMAT
    entries, why = read_manifest(run_dir, info.get("run_id") if ours else None)
    if entries is None:
        why = why if ours else f"its {RUN_FILE} is not keyboard_lm's"
        raise ConfigError(f"{run_dir}: refusing to replace the run in it: {why}, so no file in it is known to be "
                          "the run's own; delete what you no longer need yourself, or choose another --out")
    if not remove:
        return []
    _remove_stale_temps(run_dir)
    return remove_listed(run_dir, entries)


def _remove_stale_temps(run_dir: str) -> None:
    """The temporary files a killed run of ours left half-written (no other run writes here: we hold the lock)."""
    for directory in (run_dir, os.path.join(run_dir, CHECKPOINT_DIR)):
        for name in os.listdir(directory) if os.path.isdir(directory) else ():
            path = os.path.join(directory, name)
            if _TEMP.match(name) and os.path.isfile(path) and not os.path.islink(path):
                os.remove(path)


def hold_run_dir(run_dir: str) -> RunGuard:
    """Hold an existing run directory for ``--resume``: its lock, and its manifest when it has one of its own."""
    if not os.path.isdir(run_dir):
        raise ConfigError(f"{run_dir}: not a run directory (no such directory)")
    fd = lock_run_dir(run_dir)
    try:
        _remove_stale_temps(run_dir)
    except OSError:
        pass  # left for the next resume: they hold nothing the run needs
    run_id = None
    try:
        with open(os.path.join(run_dir, RUN_FILE), encoding="utf-8") as f:
            info = json.load(f)
        run_id = info.get("run_id") if isinstance(info, dict) else None
    except (OSError, ValueError):
        pass  # the trainer's load_run says what is wrong with run.json
    entries, _ = read_manifest(run_dir, run_id)
    return RunGuard(run_dir, fd, run_id, entries)

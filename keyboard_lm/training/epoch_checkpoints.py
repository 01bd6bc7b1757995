"""The epochs a centralized run can resume from, in its ``checkpoints/``.

After each epoch N: the TensorFlow checkpoint ``ckpt-N`` (weights, optimizer slots, weight average), then
``state-N.json`` beside it (epoch, learning rate, validation record, the kept epoch and its metrics), which
makes epoch N a checkpoint; ``state.json`` is the newest one's copy. Two are kept. run.json is written after
them, so it never names an epoch without its checkpoint; a run stopped in between gets run.json back from
the state on ``--resume``. Restoring goes from the newest checkpoint back and skips one that cannot be read,
saying which; a write that fails (full disk, file size limit) is one line naming what was written.

Inside an epoch (``CentralizedConfig.checkpoint_seconds``): the same variables written under ``partial-a`` or
``partial-b`` (the one ``partial.json`` does not name, so the last good one stays whole until the new one is),
then ``partial.json`` (the epoch, how many of its batches are done, their mean loss and seconds), the commit.
An epoch's checkpoint removes them. ``--resume`` goes on from the partial epoch when it is the one after the
epoch checkpoint restored, skipping the batches done; a partial checkpoint that cannot be read is reported in
one line and the epoch starts again.
"""

from __future__ import annotations

import logging
import glob
import json
import os
import re

import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.durable import fsync_directory
from keyboard_lm.models.run_dir import CHECKPOINT_DIR, RunWriteError, atomic_write, failure_reason

logger = logging.getLogger(__name__)

#: The newest checkpoint's state (runs made before per-epoch states kept only this one).
STATE_FILE = "state.json"
#: The newest partial epoch's state, and the two names its checkpoint alternates between.
PARTIAL_FILE, PARTIAL_NAMES = "partial.json", ("partial-a", "partial-b")
_STATE = re.compile(r"^state-(\d+)\.json$")


def _label(name: str, state) -> str:
    """How a checkpoint is named to the user: its epoch, else its state file."""
    m = _STATE.match(name)
    return f"epoch {m.group(1)}" if m else (f"epoch {state['epoch']}" if isinstance(state, dict) else name)


class EpochCheckpoints:
    """Save and restore a centralized run's per-epoch state: ``model``'s variables, its optimizer's and the
    weight ``average``'s (``training.centralized.WeightAverage``, or None).

    ``guard`` (``models.run_guard.RunGuard``, or None) lists what is written in the run's manifest.
    """

    def __init__(self, run_dir: str, model: tf.keras.Model, average, guard=None, keep: int = 2):
        self.dir = os.path.join(run_dir, CHECKPOINT_DIR)
        self.guard = guard
        model.optimizer.build(model.trainable_variables)
        # The model's variables rather than the model: DropConnect's cell keeps a dict keyed by variable,
        # which a checkpoint cannot name.
        self.checkpoint = tf.train.Checkpoint(weights=list(model.variables), optimizer=model.optimizer,
                                              average=average.variables if average else [])
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.dir, max_to_keep=keep)

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def _record(self, *names: str) -> None:
        if self.guard is not None:
            self.guard.record(*(f"{CHECKPOINT_DIR}/{n}" for n in names))

    def save(self, state: dict) -> None:
        """Epoch ``state["epoch"]``'s checkpoint: TensorFlow's files (synced), then its state (the commit)."""
        epoch = state["epoch"]
        try:
            path = self.manager.save(checkpoint_number=epoch)
            written = [os.path.basename(p) for p in glob.glob(f"{path}.*")] + ["checkpoint"]
            self._sync(written)
        except (OSError, tf.errors.OpError) as e:
            for leftover in glob.glob(self._path(f"ckpt-{epoch}*")):
                if os.path.isfile(leftover):
                    os.remove(leftover)
            raise RunWriteError(f"{self._path(f'ckpt-{epoch}')}: cannot write ({failure_reason(e)})") from None
        self._record(*written, f"state-{epoch}.json", STATE_FILE)
        doc = (json.dumps({**state, "checkpoint": os.path.basename(path)}, indent=2) + "\n").encode("utf-8")
        atomic_write(self._path(f"state-{epoch}.json"), doc, mode=0o644)
        atomic_write(self._path(STATE_FILE), doc, mode=0o644)
        kept = {os.path.basename(p) for p in self.manager.checkpoints}
        for name in os.listdir(self.dir):
            if _STATE.match(name) and f"ckpt-{_STATE.match(name).group(1)}" not in kept:
                os.remove(self._path(name))
        if self.guard is not None:
            self.guard.forget_missing()

    def _sync(self, names) -> None:
        """fsync the files ``names`` of the checkpoint directory, then the directory."""
        for name in names:
            fd = os.open(self._path(name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(self.dir)

    def _partial_state(self) -> dict | None:
        """partial.json's state, None when there is none; ValueError/OSError when it cannot be read."""
        path = self._path(PARTIAL_FILE)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        if not isinstance(state, dict) or state.get("checkpoint") not in PARTIAL_NAMES:
            raise ValueError("not a partial epoch's state")
        return state

    def save_partial(self, state: dict) -> None:
        """A checkpoint inside epoch ``state["epoch"]`` after ``state["batches"]`` of its batches."""
        try:
            current = self._partial_state()
        except (OSError, ValueError):
            current = None
        name = PARTIAL_NAMES[1] if current and current["checkpoint"] == PARTIAL_NAMES[0] else PARTIAL_NAMES[0]
        for leftover in glob.glob(self._path(f"{name}.*")):
            os.remove(leftover)
        try:
            os.makedirs(self.dir, exist_ok=True)
            path = self.checkpoint.write(self._path(name))
            written = [os.path.basename(p) for p in glob.glob(f"{path}.*")]
            self._sync(written)
        except (OSError, tf.errors.OpError) as e:
            for leftover in glob.glob(self._path(f"{name}.*")):
                if os.path.isfile(leftover):
                    os.remove(leftover)
            raise RunWriteError(f"{self._path(name)}: cannot write ({failure_reason(e)})") from None
        self._record(*written, PARTIAL_FILE)
        atomic_write(self._path(PARTIAL_FILE),
                     (json.dumps({**state, "checkpoint": name}, indent=2) + "\n").encode("utf-8"), mode=0o644)
        other = PARTIAL_NAMES[1 - PARTIAL_NAMES.index(name)]
        for stale in glob.glob(self._path(f"{other}.*")):
            os.remove(stale)
        if self.guard is not None:
            self.guard.forget_missing()

    def clear_partial(self) -> None:
        """Remove the partial epoch's checkpoint (its epoch has one of its own now, or is not resumed)."""
        paths = [self._path(PARTIAL_FILE)] + [p for n in PARTIAL_NAMES for p in glob.glob(self._path(f"{n}.*"))]
        removed = False
        for path in paths:
            if os.path.isfile(path):
                os.remove(path)
                removed = True
        if removed and self.guard is not None:
            self.guard.forget_missing()

    def restore_partial(self, epoch: int, fallback: str, log=None) -> dict | None:
        """Restore the checkpoint inside ``epoch`` when there is one and return its state (``batches`` done,
        their mean ``loss``, ``seconds``); None when there is none, or it belongs to another epoch, or it cannot
        be read (said in one line; the epoch starts again from ``fallback``, the epoch checkpoint before it,
        restored again). Call after ``restore_newest``."""
        log = log or logger.info
        try:
            state = self._partial_state()
            if state is None:
                return None
            if state.get("epoch") != epoch:
                self.clear_partial()  # older than the epoch checkpoint restored
                return None
            self.checkpoint.restore(self._path(state["checkpoint"])).assert_existing_objects_matched()
        except Exception as e:  # noqa: BLE001 - a damaged checkpoint raises whatever its reader meets
            log(f"resume: skipping the damaged checkpoint inside epoch {epoch} in {self.dir} "
                f"({type(e).__name__}: {failure_reason(e)}); the epoch starts again")
            self.clear_partial()
            self.checkpoint.restore(self._path(fallback)).assert_existing_objects_matched()
            return None
        return state

    def _states(self) -> list[tuple[str, dict | Exception]]:
        """(file, its state or why it is unreadable) of each checkpoint, newest first."""
        names = sorted((n for n in os.listdir(self.dir) if _STATE.match(n)) if os.path.isdir(self.dir) else (),
                       key=lambda n: int(_STATE.match(n).group(1)), reverse=True)
        if not names and os.path.exists(self._path(STATE_FILE)):
            names = [STATE_FILE]  # a run made before per-epoch states
        found = []
        for name in names:
            try:
                with open(self._path(name), encoding="utf-8") as f:
                    state = json.load(f)
                if not isinstance(state, dict) or not isinstance(state.get("checkpoint"), str):
                    raise ValueError("not a checkpoint's state")
                found.append((name, state))
            except (OSError, ValueError) as e:
                found.append((name, e))
        return found

    def restore_newest(self, run_dir: str, log=None) -> dict:
        """Restore the newest checkpoint that reads back whole and return its state; damaged newer ones are
        reported in one line and removed. ConfigError when there is none."""
        log = log or logger.info  # ``log``: deprecated, a callable taking the lines
        states = self._states()
        if not states:
            raise ConfigError(f"{run_dir}: no checkpoint to resume from ({os.path.join(CHECKPOINT_DIR, STATE_FILE)} "
                              "is missing; runs made before centralized checkpoints existed restart)")
        skipped = []
        for name, state in states:
            try:
                if isinstance(state, Exception):
                    raise state
                if "/" in state["checkpoint"] or state["checkpoint"].startswith("."):
                    raise ValueError(f"names a checkpoint outside {CHECKPOINT_DIR}/")
                self.checkpoint.restore(self._path(state["checkpoint"])).assert_existing_objects_matched()
            except Exception as e:  # noqa: BLE001 - a damaged checkpoint raises whatever its reader meets
                skipped.append((name, state, f"{type(e).__name__}: {failure_reason(e)}"))
                continue
            if skipped:
                log(f"resume: skipping the damaged checkpoint of {', '.join(_label(*s[:2]) for s in skipped)} in "
                    f"{self.dir} ({skipped[0][2]}); resuming from epoch {state['epoch']}'s, the newest intact one")
                for bad, bad_state, _ in skipped:
                    self._remove(bad, bad_state)
            return state
        raise ConfigError(f"{self.dir}: no intact checkpoint to resume from ({_label(*skipped[0][:2])}: "
                          f"{skipped[0][2]})")

    def _remove(self, name: str, state) -> None:
        m = _STATE.match(name)
        epoch = int(m.group(1)) if m else (state.get("epoch") if isinstance(state, dict) else None)
        paths = [self._path(name)] + (glob.glob(self._path(f"ckpt-{epoch}.*")) if epoch is not None else [])
        for path in paths:
            if os.path.isfile(path):
                os.remove(path)
        if self.guard is not None:
            self.guard.forget_missing()

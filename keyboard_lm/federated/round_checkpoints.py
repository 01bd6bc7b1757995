"""A federated run's saved program state: the rounds it can resume from, in its ``checkpoints/``.

:class:`ProgramState` is what a run is between rounds and all that ``--resume`` restores; it is written
(:meth:`RoundCheckpoints.save`) and read back (:meth:`RoundCheckpoints.load_newest`) here and nowhere else,
and :func:`checkpoint_due` says when.

A checkpoint of round N is three things: ``record_N.json`` (what run.json says after round N: rounds done,
the kept round, final metrics, and whether round N's weights are the kept ones), ``average_N.npz`` (the
server average, when the run keeps one) and TFF's program state ``program_state_N``, written last: its
presence is what makes round N a checkpoint. run.json is written after all three, so it never names a round
that has no checkpoint; a run stopped in between gets run.json back from the record on ``--resume``.

Loading goes from the newest checkpoint back and skips one that cannot be read (a truncated or damaged
file), saying which; a write that fails (full disk, file size limit) is one line naming what was written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import glob
import json
import logging
import os
import re
import shutil

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.server_average import ServerAverage
from keyboard_lm.durable import fsync_directory
from keyboard_lm.models.run_dir import CHECKPOINT_DIR, RunWriteError, atomic_write, failure_reason

_RECORD = re.compile(r"^record_(\d+)\.json$")
logger = logging.getLogger(__name__)


def checkpoint_due(loop, round_num: int, rounds: int, *, evaluated: bool, improved: bool,
                   since_saved: float) -> bool:
    """Save this round? Every ``loop.checkpoint_every`` rounds or ``loop.checkpoint_seconds`` seconds, and after
    an evaluation (its learning-rate decay lives in the state), a round kept as the best (the weights run.json
    keeps are of a round it can resume from) and the last round."""
    return (round_num % loop.checkpoint_every == 0 or round_num == rounds or evaluated or improved
            or 0 < loop.checkpoint_seconds <= since_saved)


def _fsync_tree(path: str) -> None:
    """fsync every file and directory under ``path``: TFF writes its program state without syncing it."""
    for root, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(root)
    fsync_directory(os.path.dirname(path))


@dataclasses.dataclass
class ProgramState:
    """A federated run between rounds, the one thing ``--resume`` restores.

    ``round``: the rounds done, which is also the client sampler's position (a round's cohort depends on
    the seed and the round alone); ``server``: TFF's server state (model, optimizer state, the client
    learning rate); ``average``: the server average (None: the run keeps none); ``record``: what run.json
    said after that round, ``{"fields": {rounds_done, best, final_metrics, differential_privacy,
    time_breakdown, participation, ...}, "weights": whether the round's weights are the kept ones}``
    (None: a checkpoint made before records were kept; run.json holds what there is).
    """

    round: int
    server: object
    average: ServerAverage | None = None
    record: dict | None = None

    @property
    def fields(self) -> dict:
        """run.json's fields as of this round ({} without a record)."""
        return (self.record or {}).get("fields") or {}


#: The name this had when it was only what a resume read back.
Restored = ProgramState


class RoundCheckpoints:
    """Save and load a federated run's checkpoints (``manager``: TFF's FileProgramStateManager on ``checkpoints/``).

    ``guard`` (``models.run_guard.RunGuard``) lists what is written in the run's manifest; ``weight_average``
    the run's average decay (0: none).
    """

    def __init__(self, run_dir: str, manager, guard, weight_average: float, log=None):
        self.dir = os.path.join(run_dir, CHECKPOINT_DIR)
        self.manager, self.guard, self.weight_average = manager, guard, weight_average
        self.log = log or logger.info  # ``log``: deprecated, the module's logger takes the lines

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def save(self, program: ProgramState) -> None:
        """``program``'s checkpoint: record, average, then TFF's program state (the commit)."""
        round_num, state, average, record = program.round, program.server, program.average, program.record
        program = f"program_state_{round_num}"
        self.guard.record(f"{CHECKPOINT_DIR}/record_{round_num}.json",
                          *([f"{CHECKPOINT_DIR}/average_{round_num}.npz"] if average is not None else []))
        if average is not None:
            average.save(self.dir, round_num)
        atomic_write(self._path(f"record_{round_num}.json"),
                     (json.dumps({"round": round_num, **record}, indent=1) + "\n").encode("utf-8"), mode=0o644)
        import tensorflow as tf

        try:
            asyncio.run(self.manager.save(state, round_num))
            _fsync_tree(self._path(program))
        except (OSError, tf.errors.OpError) as e:
            self._remove_partial(round_num)
            self._remove(round_num)  # not known to be on disk whole: round N is no checkpoint
            raise RunWriteError(f"{self._path(program)}: cannot write ({failure_reason(e)})") from None
        self.guard.record_tree(f"{CHECKPOINT_DIR}/{program}")
        kept = set(asyncio.run(self.manager.get_versions()) or ())
        if average is not None:
            ServerAverage.prune(self.dir, kept)
        for name in os.listdir(self.dir):
            m = _RECORD.match(name)
            if m and int(m.group(1)) not in kept:
                os.remove(self._path(name))
        self.guard.forget_missing()

    def _remove_partial(self, round_num: int) -> None:
        """What a failed save of ``round_num`` left: TFF's temporary directory (a random name beside the state)."""
        for path in glob.glob(self._path(f"program_state_{round_num}_temp*")):
            shutil.rmtree(path, ignore_errors=True)

    def _remove(self, round_num: int) -> None:
        shutil.rmtree(self._path(f"program_state_{round_num}"), ignore_errors=True)
        for name in (f"average_{round_num}.npz", f"record_{round_num}.json"):
            if os.path.lexists(self._path(name)):
                os.remove(self._path(name))

    def _read_record(self, round_num: int) -> dict | None:
        path = self._path(f"record_{round_num}.json")
        if not os.path.exists(path):
            return None  # a run made before records: run.json holds what there is
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        if not isinstance(record, dict) or record.get("round") != round_num or "fields" not in record:
            raise ValueError(f"{os.path.basename(path)} is not round {round_num}'s record")
        return record

    def load_newest(self, structure) -> ProgramState:
        """The newest checkpoint that reads back whole; damaged newer ones are reported in one line and
        removed (TFF would refuse to save their rounds again). ConfigError when none is intact."""
        versions = asyncio.run(self.manager.get_versions()) or []
        for path in glob.glob(self._path("program_state_*_temp*")):  # a save a kill interrupted
            shutil.rmtree(path, ignore_errors=True)
        skipped = []
        for version in reversed(versions):
            try:
                state = asyncio.run(self.manager.load(version, structure))
                average = (ServerAverage.load(self.dir, version, self.weight_average)
                           if self.weight_average else None)
                record = self._read_record(version)
            except Exception as e:  # noqa: BLE001 - a damaged SavedModel raises whatever its reader meets
                # (IndexError on a truncated file, DataLossError on a bad checksum, DecodeError, ...)
                skipped.append((version, f"{type(e).__name__}: {failure_reason(e)}"))
                continue
            if skipped:
                self.log(f"resume: skipping the damaged checkpoint of round{'s' * (len(skipped) > 1)} "
                         f"{', '.join(str(v) for v, _ in skipped)} in {self.dir} ({skipped[0][1]}); "
                         f"resuming from round {version}'s, the newest intact one")
                for v, _ in skipped:
                    self._remove(v)
                self.guard.forget_missing()
            return ProgramState(version, state, average, record)
        if skipped:
            raise ConfigError(f"{self.dir}: no intact checkpoint to resume from (round {skipped[0][0]}: "
                              f"{skipped[0][1]})")
        raise ConfigError(f"{os.path.dirname(self.dir)}: no checkpoint to resume from")

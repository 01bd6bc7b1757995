"""What a long benchmark needs of each finished run, kept in the repository.

Benchmarks that span sessions (Ro's, Hard's and Ji's tables) train their runs under ``runs/``, which git does
not keep: checkpoints and weights are megabytes each, and a new checkout of the repository has none of them. So
once a run is a result (it trained all its rounds, or it stopped on divergence and kept its best round before)
its record is written: the ``best`` and round counts of its run.json, the evaluated rows of its metrics.csv,
the round it diverged at (from its log), and, for runs a report evaluates on held-out users, the per-user
held-out figures of its kept model (users named by a hash of their id: a sender's address is not written
into the repository). Reports read runs only through their records, so a later session or a
fresh clone writes the same report from the records that are committed and trains only runs that have none.

A run under ``runs/`` has its record in ``benchmarks/records/`` at the same relative path (``.json`` added);
a run anywhere else (a test's temporary directory) keeps it beside its directory, as ``<run>.record.json``.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

from benchmarks.common.runs import completed, trained

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDS = os.path.join(ROOT, "benchmarks", "records")


def record_path(out: str) -> str:
    """Where the record of the run in ``out`` is kept."""
    rel = os.path.relpath(os.path.abspath(out), os.path.abspath("runs"))
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return os.path.abspath(out) + ".record.json"
    return os.path.join(RECORDS, rel + ".json")


def log_diverged_at(out: str) -> int | None:
    """The round at which the run stopped on divergence, as `train` says in its log (0 when the line names no
    round), or None if it did not."""
    path = out + ".log"
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "training diverged" in line:
                found = re.search(r"training diverged at round (\d+)", line)
                return int(found.group(1)) if found else 0
    return None


def resumable(out: str) -> bool:
    """Whether the run in ``out`` has a checkpoint to go on from: a federated round's program state or a
    centralized epoch's state. A run stopped before its first checkpoint has an empty ``checkpoints/`` and
    starts again (``train --resume`` would refuse it and end the benchmark)."""
    found = os.path.join(out, "checkpoints")
    return os.path.exists(os.path.join(out, "run.json")) and os.path.isdir(found) and any(
        name == "state.json" or name.startswith("program_state_") for name in os.listdir(found))


def read_curve(out: str) -> list[dict]:
    """The evaluated rows of the run's metrics.csv (round, held-out and validation figures)."""
    path = os.path.join(out, "metrics.csv")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("perplexity")]
    return [{k: (float(v) if v not in ("", None) else None) for k, v in r.items()} for r in rows]


def trained_of(work: str) -> list[dict] | None:
    """When and where the runs under ``work`` trained (``runs.trained`` of each), as their records hold it, for a
    report's `trained` line; None when no record holds it (records written before it was kept)."""
    path = record_path(work)
    pattern = (os.path.join(work, "**", "*.record.json") if path.endswith(".record.json")
               else os.path.join(path[:-len(".json")], "**", "*.json"))
    found = []
    for name in sorted(glob.glob(pattern, recursive=True)):
        with open(name, encoding="utf-8") as f:
            record = json.load(f)
        if isinstance(record, dict) and record.get("trained"):
            found.append(record["trained"])
    return found or None


def _write(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def from_run(out: str) -> dict | None:
    """The record of the run in ``out`` read from its directory, or None while it is not a result."""
    info_path = os.path.join(out, "run.json")
    if not os.path.exists(info_path):
        return None
    with open(info_path, encoding="utf-8") as f:
        info = json.load(f)
    at = log_diverged_at(out)
    if at is None and not completed(info):
        return None
    federated, curve = info.get("federated") or {}, read_curve(out)
    return {"finished": at is None, "diverged_at": at, "best": info.get("best") or _best_epoch(info, curve),
            "rounds_done": info.get("rounds_done"), "rounds": federated.get("rounds"), "curve": curve,
            "trained": trained(out)}


def _best_epoch(info: dict, curve: list[dict]) -> dict:
    """The validation figures of a centralized run's kept epoch from its curve (centralized runs made before
    run.json kept ``best``), or {}."""
    rows = [r for r in curve if r.get("epoch") == info.get("best_epoch")]
    if not rows or rows[0].get("val_recall_at_3") is None:
        return {}
    return {"epoch": info["best_epoch"], "val_recall_at_3": rows[0]["val_recall_at_3"],
            "val_loss": rows[0]["val_loss"]}


def load(out: str) -> dict | None:
    """The run's record: the kept one, or, for a run that has become a result since, one written now; None for a
    run that is not a result (not run, stopped part-way, or diverged before it kept a round)."""
    path = record_path(out)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    record = from_run(out)
    if record is not None:
        _write(path, record)
    return record


def heldout(out: str, corpus_args: list[str]) -> dict:
    """The per-user held-out figures of the run's kept model (see `heldout.heldout_by_user`), evaluated
    once while its directory exists and kept in its record."""
    from benchmarks.common.heldout import heldout_by_user

    record = load(out)
    if record is None:
        raise SystemExit(f"{out}: not a result yet (no finished or diverged run, and no record at "
                         f"{record_path(out)})")
    if record.get("heldout") is None:
        if not os.path.exists(os.path.join(out, "run.json")):
            raise SystemExit(f"{record_path(out)}: the record has no held-out figures and its run ({out}) is gone; "
                             "delete the record to train the run again")
        record["heldout"] = pseudonymous(heldout_by_user(out, corpus_args))
        _write(record_path(out), record)
    return record["heldout"]


def pseudonymous(result: dict) -> dict:
    """An evaluation's pooled figures, and its per-user ones keyed by a hash of each user's id (the same user,
    the same key, so runs on the same held-out users still pair)."""
    return {"pooled": result["pooled"],
            "clients": {"u" + hashlib.sha256(str(c).encode()).hexdigest()[:12]: v
                        for c, v in result["clients"].items()}}


def train_recorded(args: list[str], out: str) -> None:
    """Run `keyboard-lm ARGS` into ``out`` (log beside it), then write its record: a run that stopped on
    divergence is a result, any other failure ends the benchmark."""
    cmd = [sys.executable, "-m", "keyboard_lm.cli", *args]
    print("$", shlex.join(["keyboard-lm", *args]), flush=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".log", "a", encoding="utf-8") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
    # a diverged run stops with its own message and keeps its last good round: it is a result, not a failure
    if done.returncode and log_diverged_at(out) is None:
        raise SystemExit(f"{out}: train exited with {done.returncode}; see {out}.log")
    load(out)  # its record, now it is a result


def settled(out: str) -> bool:
    """Whether there is nothing left to train: the run is a result, or it diverged before it kept a round."""
    return is_result(out) or log_diverged_at(out) is not None


def diverged_at(out: str) -> int | None:
    """The round at which the run stopped on divergence (0 if not known), or None if it did not: from its
    record, or, for a run that diverged before it kept a round, from its log."""
    record = load(out)
    return record["diverged_at"] if record is not None else log_diverged_at(out)


def diverged(out: str) -> bool:
    """Whether the run stopped on divergence."""
    return diverged_at(out) is not None


def is_result(out: str) -> bool:
    """Whether the run is a result: it trained to the end, or it diverged and kept its best round before (it
    has a record)."""
    return load(out) is not None


def curve(out: str) -> list[dict]:
    """The evaluated rows of a run's metrics.csv (round, held-out and validation figures)."""
    record = load(out)
    return record["curve"] if record is not None else read_curve(out)


def kept_round(out: str) -> int | None:
    """The round of the model a run keeps (its best validation round), or None."""
    record = load(out)
    best = record["best"] if record is not None else {}
    return int(best["round"]) if best.get("round") is not None else None

"""Training runs a study launches from the base (`keyboard-lm train --init-from base`), resumed and read back."""

from __future__ import annotations

import datetime
import glob
import json
import os
import shlex
import subprocess
import sys
import time

from benchmarks.common.curves import kept_within, metrics_curve, metrics_rows
from keyboard_lm.models.run_dir import RunRecord


def slug(name: str) -> str:
    """A name made safe as one path component."""
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in name)


def finished(run_dir: str) -> bool:
    """Whether ``run_dir`` holds a run that did all its rounds or epochs."""
    path = os.path.join(run_dir, "run.json")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        return completed(json.load(f))


def completed(info: dict) -> bool:
    """Whether a run.json is of a run that did all its rounds or epochs: a federated run stopped early
    (SIGTERM, a lost worker) writes its final metrics too, at the round it reached, and so does a centralized
    run after each epoch; both are resumed rather than read as done. A centralized run that validation
    stopped (--patience) is done."""
    federated, hyper = info.get("federated"), info.get("hyperparameters") or {}
    rounds_left = federated is not None and info.get("rounds_done", 0) < federated.get("rounds", 0)
    epochs_left = (info.get("trainer") == "centralized" and not info.get("stopped_early")
                   and info.get("epochs_done", 0) < hyper.get("epochs", 0))
    return bool(info.get("final_metrics")) and not rounds_left and not epochs_left


def train_args(corpus_args, recipe_args, run_dir, rounds=None, eval_every=None, resume=False,
               init_from: str | None = "base") -> list[str]:
    """`keyboard-lm` arguments of one run from the base (``init_from`` None: from random weights), or of its
    continuation from its checkpoint.

    A recipe that sets its own ``--rounds`` (an equal-cost recipe: twice the work a round, half the rounds)
    keeps them, fresh or resumed: on resume ``--rounds`` is the round to reach."""
    if "--rounds" in recipe_args:
        at = recipe_args.index("--rounds")
        rounds, recipe_args = int(recipe_args[at + 1]), [*recipe_args[:at], *recipe_args[at + 2:]]
    args = ["train", *corpus_args, "--out", run_dir]
    args += ["--rounds", str(rounds)] if rounds is not None else []
    args += [] if "--centralized" in recipe_args else ["--no-phrases"]  # the model's recipe is measured alone
    if resume:
        # A resumed run takes its recipe and its start from its own run.json; `train` refuses --init-from there.
        return args + ["--resume"]
    args += ["--eval-every", str(eval_every)] if eval_every is not None else []
    return args + [*(["--init-from", init_from] if init_from else []), *recipe_args, "--overwrite"]


def train_from_base(corpus_args, recipe_args, run_dir, rounds=None, eval_every=None,
                    init_from: str | None = "base") -> float:
    """Train (or resume) one run from the base (``init_from`` None: from random weights); returns the wall
    seconds this call took.

    ``rounds``/``eval_every`` None leave `train`'s own defaults.
    """
    resume = os.path.isdir(os.path.join(run_dir, "checkpoints"))
    return run_keyboard_lm(train_args(corpus_args, recipe_args, run_dir, rounds, eval_every, resume, init_from),
                           run_dir)


def run_keyboard_lm(args: list[str], run_dir: str) -> float:
    """Run `keyboard-lm args` (a run into ``run_dir``), its output appended to ``run_dir``.log; the command's
    wall seconds. A failure ends the study in one line naming the log."""
    cmd = [sys.executable, "-m", "keyboard_lm.cli", *args]
    print("$", shlex.join(["keyboard-lm", *args]), flush=True)
    os.makedirs(os.path.dirname(run_dir) or ".", exist_ok=True)
    start = time.time()
    with open(run_dir + ".log", "a", encoding="utf-8") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        raise SystemExit(f"{run_dir}: train exited with {done.returncode}; see {run_dir}.log")
    return time.time() - start


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(timespec="seconds")


def trained(run_dir: str) -> dict:
    """When and where the run in ``run_dir`` trained, for result files that collect runs trained earlier (their
    own date and machine are the collection step's).

    run.json records neither, so this reads the run's files: each training session's TensorBoard event file is
    named ``events.out.tfevents.<start time>.<host>.<pid>...`` (the earliest is the start; the hosts are where
    it trained; the federated trainer writes them, the centralized one does not), and metrics.csv gets its last
    row when training ends (its modification time; later steps such as a phrase table rewrite run.json, not
    metrics.csv) with the training's elapsed seconds. Fields not found are None.
    """
    starts, hosts = [], []
    for path in glob.glob(os.path.join(run_dir, "tensorboard", "**", "events.out.tfevents.*"), recursive=True):
        parts = os.path.basename(path).split(".")
        if len(parts) > 4 and parts[3].isdigit():
            starts.append(int(parts[3]))
            hosts.append(parts[4])
    metrics = os.path.join(run_dir, "metrics.csv")
    record = RunRecord.peek(run_dir)
    rows = metrics_rows(run_dir, evaluated=False)
    return {"run_dir": run_dir, "started": _utc(min(starts)) if starts else None,
            "finished": _utc(os.path.getmtime(metrics)) if os.path.exists(metrics) else None,
            "training_seconds": float(rows[-1]["elapsed_seconds"]) if rows and rows[-1].get("elapsed_seconds") else None,
            "hosts": sorted(set(hosts)), "sessions": len(starts),
            "train_command": record.command if record is not None else None}


def seed_of(run_dir: str) -> str:
    """The training seed of the run in ``run_dir`` as its run.json holds it, for a result file's seeds line: the
    recipe's seed, else its command's --seed, else `train`'s --seed default (0) when the command gives none."""
    record = RunRecord.peek(run_dir)
    if record is None:
        return "not recorded"
    settings = record.hyperparameters if record.trainer == "centralized" else record.federated
    seed = (settings or {}).get("seed")
    if seed is not None:
        return str(seed)
    argv = shlex.split(record.command or "")
    if "--seed" in argv[:-1]:
        return argv[argv.index("--seed") + 1]
    return "0 (no --seed: train's default)"


def seeds_line(run_dirs: dict[str, str], drawn_here: str) -> str:
    """A collected result's seeds: each run's training seed (``seed_of``), and what the collection draws."""
    return (f"{drawn_here}; training seeds: "
            + "; ".join(f"{name} {seed_of(run_dir)}".strip() for name, run_dir in run_dirs.items()))


def collect_run(run_dir: str) -> dict | None:
    """A run's curve, kept evaluation and command (None before its first evaluation)."""
    curve = metrics_curve(run_dir)
    if not curve:
        return None
    kept = kept_within(curve, float("inf"))
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
        info = json.load(f)  # `completed` needs stopped_early, which RunRecord does not hold
    return {"run_dir": run_dir, "command": RunRecord.of(info).command, "curve": curve, "kept": kept,
            "finished": completed(info), "seconds": curve[-1]["seconds"], "trained": trained(run_dir)}

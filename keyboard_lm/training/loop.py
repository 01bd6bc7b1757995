"""The parts of a training loop that the centralized and the federated trainers share.

A trainer's loop (an epoch or a round at a time) is: train a step, evaluate
now and then, let the validation clients decide what the run keeps
(:class:`KeepBest`), and write what happened into the run directory
(:class:`RunWriter`: metrics.csv, TensorBoard, run.json and the kept
weights, the PNG at the end). The moving average of the weights has one
decay schedule (:func:`average_decay`) whether the driver keeps it per round
(``federated.server_average``) or the training step per batch
(``training.centralized.WeightAverage``).

Nothing here imports TFF.
"""

from __future__ import annotations

import dataclasses
import io
import os

from keyboard_lm.evaluation import validation_score
from keyboard_lm.models.run_dir import (METRICS_FILE, RunWriteError, append_metrics_row, atomic_write, failure_reason,
                                        save_run, update_run_info)


def average_decay_ramp(updates):
    """(1 + t) / (10 + t) after ``t`` updates: the decay an average starts with, rising to 1.

    An average's decay is min(decay, this), as ``tf.train.ExponentialMovingAverage`` does with
    ``num_updates``, so the first updates' average is not dominated by the initialization.
    Works on numbers and on tensors alike.
    """
    return (1.0 + updates) / (10.0 + updates)


def average_decay(decay: float, updates: int) -> float:
    """The decay of an exponential moving average after ``updates`` updates (see ``average_decay_ramp``)."""
    return min(decay, average_decay_ramp(updates))


@dataclasses.dataclass
class Verdict:
    """What one evaluation means for the run: kept as the best, the rate decayed, training stopped."""

    improved: bool
    decay: bool = False
    stop: bool = False


class KeepBest:
    """Which evaluation a run keeps, chosen by validation clients only.

    With validation, an evaluation is kept when its validation recall@3 (then
    lower validation loss) beats the best so far; one without gain decays the
    learning rate (``lr_decay`` < 1) and, after ``patience`` of them in a
    row, stops the run (``patience`` None: never). Held-out clients are
    reported beside it and never decide. Without validation there is nothing
    to choose by: the run keeps its last evaluation and never decays.

    ``best`` is the record run.json keeps (``{step_key, "val_recall_at_3",
    "val_loss", "heldout"}``, ``step_key`` "round" or "epoch"); a resumed run
    passes its own back in.
    """

    def __init__(self, validating: bool, lr_decay: float = 1.0, patience: int | None = None,
                 best: dict | None = None, step_key: str = "round"):
        self.validating = validating
        self.step_key = step_key
        self.lr_decay = lr_decay
        self.patience = patience
        self.best = best
        self.stale = 0

    def observe(self, step: int, val: dict | None, heldout: dict) -> Verdict:
        """Fold in the evaluation after ``step`` (``val`` the validation clients' pooled metrics)."""
        if not self.validating:
            return Verdict(improved=False)
        improved = self.best is None or validation_score(val) > validation_score(
            {"recall_at_3": self.best["val_recall_at_3"], "loss": self.best["val_loss"]})
        if improved:
            self.best = {self.step_key: step, "val_recall_at_3": val["recall_at_3"], "val_loss": val["loss"],
                         "heldout": heldout}
            self.stale = 0
            return Verdict(improved=True)
        self.stale += 1
        stop = self.patience is not None and self.stale >= self.patience
        return Verdict(improved=False, decay=self.lr_decay < 1.0 and not stop, stop=stop)

    @property
    def step(self) -> int | None:
        return self.best[self.step_key] if self.best is not None else None


class RunWriter:
    """What a training run writes into its directory, one place for both trainers.

    ``row`` appends to metrics.csv (and, with ``tensorboard``, writes every
    numeric field as a scalar at that step); ``save`` replaces the weights,
    vocabulary and run.json together, ``update`` merges fields into run.json
    and leaves the kept weights alone; ``close`` flushes TensorBoard and,
    with ``plot``, draws metrics.png from metrics.csv. ``guard``
    (``models.run_guard.RunGuard``) lists the TensorBoard event file it
    starts in the run's manifest.
    """

    def __init__(self, run_dir: str, model_config, vocab, info: dict, tensorboard: bool = False, guard=None):
        self.run_dir = run_dir
        self.model_config = model_config
        self.vocab = vocab
        self.info = info
        self._summary = None
        if tensorboard:
            import tensorflow as tf

            events = os.path.join(run_dir, "tensorboard")
            before = set(os.listdir(events)) if os.path.isdir(events) else set()
            self._summary = tf.summary.create_file_writer(events)  # creates its event file now
            if guard is not None:
                guard.record(*(f"tensorboard/{name}" for name in sorted(set(os.listdir(events)) - before)))

    def row(self, step_key: str, row: dict) -> None:
        if self._summary is not None:
            import tensorflow as tf

            with self._summary.as_default(step=row[step_key]):
                for k, v in row.items():
                    if v != "" and k != step_key:
                        tf.summary.scalar(k, float(v))
        append_metrics_row(self.run_dir, row)

    def save(self, weights: dict, fields: dict) -> None:
        save_run(self.run_dir, self.model_config, self.vocab, weights, {**self.info, **fields})

    def update(self, fields: dict) -> None:
        update_run_info(self.run_dir, fields)

    def close(self, plot: str | None = None) -> None:
        """Flush; ``plot`` names the step column to draw metrics.png against (None: no PNG)."""
        if self._summary is not None:
            import tensorflow as tf

            try:
                self._summary.flush()
            except tf.errors.OpError as e:
                raise RunWriteError(f"{os.path.join(self.run_dir, 'tensorboard')}: cannot write "
                                    f"({failure_reason(e)})") from None
        if plot is not None:
            plot_metrics(self.run_dir, plot)


def progress_line(step: int, steps: int, loss: float, recall3: float | None, elapsed: float, done_this_run: int,
                  unit: str = "round") -> str:
    """The progress bar of step ``step`` of ``steps``: loss, recall@3 when evaluated, time a step and ETA."""
    width = 24
    filled = int(width * step / steps)
    per_step = elapsed / max(done_this_run, 1)
    eta = int(per_step * (steps - step))
    r3 = f"{recall3:.4f}" if recall3 is not None else "  -   "
    return (f"[{'#' * filled}{'.' * (width - filled)}] {unit} {step}/{steps}  loss {loss:.3f}  "
            f"recall@3 {r3}  {per_step:.1f}s/{unit}  ETA {eta // 60}:{eta % 60:02d}")


def plot_metrics(run_dir: str, step_key: str) -> None:
    """metrics.png: held-out recall@1/@3 and the training and held-out loss against ``step_key``."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(run_dir, METRICS_FILE), encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("recall_at_3")]
    if not rows:
        return
    steps = [int(r[step_key]) for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(steps, [float(r["recall_at_1"]) for r in rows], label="recall@1")
    a1.plot(steps, [float(r["recall_at_3"]) for r in rows], label="recall@3")
    a1.set_xlabel(step_key)
    a1.set_ylabel("held-out recall")
    a1.legend()
    a2.plot(steps, [float(r["train_loss"]) for r in rows], label="train loss")
    a2.plot(steps, [float(r["loss"]) for r in rows], label="held-out loss")
    a2.set_xlabel(step_key)
    a2.legend()
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    atomic_write(os.path.join(run_dir, "metrics.png"), png.getvalue(), mode=0o644)

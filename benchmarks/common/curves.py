"""A run's learning curve from its metrics.csv, and the evaluation a run keeps within a time budget."""

from __future__ import annotations

import csv
import os


def metrics_rows(run_dir: str, evaluated: bool = True) -> list[dict]:
    """The rows of a run's metrics.csv ([] before any): the evaluated ones, or with ``evaluated`` False all."""
    path = os.path.join(run_dir, "metrics.csv")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r.get("recall_at_3") or not evaluated]


def metrics_curve(run_dir: str) -> list[dict]:
    """(elapsed seconds, examples seen, recall@3, perplexity, step) at every evaluation."""
    out = []
    for r in metrics_rows(run_dir):
        step = int(r.get("round") or r.get("epoch"))
        point = {"step": step, "seconds": float(r["elapsed_seconds"]), "examples": int(float(r["examples_seen"])),
                 "recall_at_3": float(r["recall_at_3"]), "perplexity": float(r["perplexity"])}
        if r.get("recall_at_1"):
            point["recall_at_1"] = float(r["recall_at_1"])
        if r.get("val_recall_at_3"):
            point.update(val_recall_at_3=float(r["val_recall_at_3"]), val_loss=float(r["val_loss"]))
        out.append(point)
    return out


def kept_within(curve: list[dict], budget: float) -> dict | None:
    """The evaluation a run stopped at ``budget`` seconds would keep, chosen without held-out data.

    With validation clients: the best validation recall@3 (ties: lower
    validation loss, then the earlier one), as the trainers choose; without:
    the last evaluation within the budget.
    """
    within = [c for c in curve if c["seconds"] <= budget]
    if not within:
        return None
    if all("val_recall_at_3" in c for c in within):
        return max(within, key=lambda c: (c["val_recall_at_3"], -c["val_loss"], -c["step"]))
    return within[-1]

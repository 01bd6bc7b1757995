"""The canary audit as library calls: plant canaries in a corpus, record them beside the run that trained on
it, and measure each one's exposure in that run (``keyboard-lm audit canaries`` is these three calls
around a ``train``).

    corpus, placements, controls = plant(corpus, split, canaries=10, controls=10)
    ... train a federated run into RUN_DIR on ``corpus``, tracking the canaries' clients ...
    save_canaries(RUN_DIR, placements, controls)
    report = audit(RUN_DIR)          # also written to RUN_DIR/audit.json
"""

from __future__ import annotations

import json
import os

from keyboard_lm.errors import ConfigError

#: What an audit run keeps beside run.json: the planted canaries and the never-planted controls, and the report.
CANARY_FILE, AUDIT_FILE = "canaries.json", "audit.json"


def check_counts(canaries: int, controls: int) -> None:
    if canaries < 1 or controls < 0:
        raise ConfigError(f"--canaries must be >= 1 and --controls >= 0, got {canaries}, {controls}")


def plant(corpus, split, *, canaries: int, controls: int, repeats=(1,), seed: int = 0,
          validation_fraction: float = 0.0):
    """(corpus with ``canaries`` planted, their placements, ``controls`` never planted).

    Canaries go to training clients that train (not to the validation clients ``validation_fraction``
    sets aside); the i-th canary is planted ``repeats[i % len(repeats)]`` times.
    """
    from keyboard_lm.data.split import split_clients, validation_clients
    from keyboard_lm.privacy import canaries as cn

    check_counts(canaries, controls)
    train_ids, _ = split_clients(corpus.client_ids, split)
    if validation_fraction:
        train_ids = validation_clients(train_ids, validation_fraction, split.seed)[0]
    made = cn.make_canaries(canaries + controls, seed=seed)
    planted, never = made[:canaries], made[canaries:]
    per_canary = [repeats[i % len(repeats)] for i in range(len(planted))]
    corpus, placements = cn.plant_canaries(corpus, planted, per_canary, train_ids, seed=seed)
    return corpus, placements, never


def tracked_clients(placements: dict) -> list[str]:
    """The clients holding canaries, whose rounds of participation the training run should record."""
    return [p["client"] for p in placements["canaries"]]


def save_canaries(run_dir: str, placements: dict, controls) -> None:
    with open(os.path.join(run_dir, CANARY_FILE), "w", encoding="utf-8") as f:
        json.dump({"placements": placements, "controls": [c.text for c in controls]}, f, indent=1)


def load_canaries(run_dir: str):
    """(placements, controls) of an audit run; a clear error for a run that is not one."""
    from keyboard_lm.privacy import canaries as cn

    path = os.path.join(run_dir, CANARY_FILE)
    if not os.path.exists(path):
        raise ConfigError(f"{run_dir}: no {CANARY_FILE}; --run re-audits a run made by `audit canaries`")
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    placements = saved["placements"]
    fmt = cn.CanaryFormat.from_dict(placements["format"])
    return placements, [cn.Canary(fmt, fmt.parse(t)) for t in saved["controls"]]


def audit(run_dir: str, placements: dict | None = None, controls=None) -> dict:
    """Each canary's exposure in the run (and how many rounds its client trained in), written to audit.json.

    ``placements``/``controls`` default to the run's own canaries.json.
    """
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.privacy import canaries as cn

    if placements is None:
        placements, controls = load_canaries(run_dir)
    rows = cn.audit_run(run_dir, placements, controls=controls)
    record = load_run(run_dir).record
    rounds_of = record.participation
    for row in rows:
        # Rounds in which the canary's client trained: a canary never sampled cannot be memorized.
        row["participations"] = len(rounds_of.get(row["client"], [])) if row["client"] is not None else 0
    report = {"rows": rows, "differential_privacy": record.differential_privacy, "rounds": record.rounds_done,
              "final_metrics": record.final_metrics}
    with open(os.path.join(run_dir, AUDIT_FILE), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return report

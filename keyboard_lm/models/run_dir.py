"""The run directory: everything a run needs, and all that ``eval``/``export`` read.

Layout (written by the centralized and the federated trainer alike)::

    RUN_DIR/
      run.json       format version, model config, text spec, vocabulary sha256,
                     data/split/hyper-parameters, final metrics
      vocab.txt      the vocabulary, one token per line in id order
      weights.npz    model weights by variable name (float32)
      metrics.csv    one row per evaluation (epoch or round)
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import zipfile

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.text.spec import TEXT_SPEC_VERSION
from keyboard_lm.text.vocabulary import Vocabulary

RUN_FORMAT = "keyboard_lm.run/1"
RUN_FILE, VOCAB_FILE, WEIGHTS_FILE, METRICS_FILE = "run.json", "vocab.txt", "weights.npz", "metrics.csv"
CHECKPOINT_DIR = "checkpoints"  # a trainer's state for --resume (TFF program state, or the centralized epoch's)


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What run.json says about a run, typed: the fields the library reads, with the defaults runs made
    before a field existed get (``RunRecord.of(info)``). The trainers write run.json; everything that
    reads it goes through this."""

    trainer: str | None
    command: str
    seq_len: int
    split: dict | None
    data_fingerprint: str | None
    data_source: dict
    corpus: str | None
    federated: dict | None
    hyperparameters: dict
    init_from: dict | None
    differential_privacy: dict | None
    final_metrics: dict | None
    rounds_done: int | None
    epochs_done: int | None
    participation: dict
    parameters: int | None

    @classmethod
    def of(cls, info: dict) -> "RunRecord":
        data = info.get("data") or {}
        hyper = info.get("hyperparameters") or {}
        return cls(trainer=info.get("trainer"), command=run_command(info), seq_len=int(hyper.get("seq_len", 20)),
                   split=data.get("split"), data_fingerprint=data.get("fingerprint"),
                   data_source=data.get("source") or {}, corpus=data.get("corpus"), federated=info.get("federated"),
                   hyperparameters=hyper, init_from=info.get("init_from"),
                   differential_privacy=info.get("differential_privacy"), final_metrics=info.get("final_metrics"),
                   rounds_done=info.get("rounds_done"), epochs_done=info.get("epochs_done"),
                   participation=info.get("participation") or {}, parameters=info.get("parameters"))


@dataclasses.dataclass(frozen=True)
class Run:
    """A loaded run directory: its model, vocabulary and weights, run.json as written (``info``) and
    typed (``record``)."""

    path: str
    model_config: ModelConfig
    vocab: Vocabulary
    weights: dict[str, np.ndarray]
    info: dict

    @property
    def record(self) -> RunRecord:
        return RunRecord.of(self.info)


def atomic_write(path: str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory: all of it or nothing.

    ``mode``: permissions of the new file (default: mkstemp's owner-only).
    """
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def sha256_file(path: str) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_run(run_dir: str, model_config: ModelConfig, vocab: Vocabulary,
             weights: dict[str, np.ndarray], info: dict) -> None:
    """Write (or update) the run directory; each file is replaced atomically."""
    if len(vocab) != model_config.vocab_size:
        raise ConfigError(f"vocabulary has {len(vocab)} tokens but the model expects {model_config.vocab_size}")
    os.makedirs(run_dir, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v, np.float32) for k, v in weights.items()})
    atomic_write(os.path.join(run_dir, WEIGHTS_FILE), buf.getvalue())
    atomic_write(os.path.join(run_dir, VOCAB_FILE), vocab.to_text().encode("utf-8"))
    doc = {"format": RUN_FORMAT, "model": model_config.to_dict(), "text_spec": TEXT_SPEC_VERSION,
           "vocab_sha256": vocab.fingerprint(), **info}
    atomic_write(os.path.join(run_dir, RUN_FILE), (json.dumps(doc, indent=2) + "\n").encode("utf-8"))


def update_run_info(run_dir: str, fields: dict) -> None:
    """Merge ``fields`` into an existing run.json (atomically), weights untouched."""
    path = os.path.join(run_dir, RUN_FILE)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc.update(fields)
    atomic_write(path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))


def read_json(path: str, missing: str):
    """The JSON document in ``path``; ConfigError ``missing`` when absent, or naming the file when corrupt."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ConfigError(missing) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: corrupt ({e})") from None


def load_run(run_dir: str) -> Run:
    """Load and cross-check a run directory; every inconsistency is a ConfigError."""
    if not os.path.isdir(run_dir):
        raise ConfigError(f"{run_dir}: not a run directory (no such directory)")
    run_file = os.path.join(run_dir, RUN_FILE)
    info = read_json(run_file, f"{run_dir}: not a run directory ({RUN_FILE} is missing)")
    if not isinstance(info, dict) or info.get("format") != RUN_FORMAT:
        raise ConfigError(f"{run_file}: not a keyboard_lm run (format {info.get('format') if isinstance(info, dict) else None!r}, "
                          f"expected {RUN_FORMAT!r})")
    if info.get("text_spec") != TEXT_SPEC_VERSION:
        raise ConfigError(f"{run_file}: text spec {info.get('text_spec')!r} differs from this version's {TEXT_SPEC_VERSION!r}")
    model_config = ModelConfig.from_dict(info.get("model") or {})
    vocab = Vocabulary.load(os.path.join(run_dir, VOCAB_FILE))
    if vocab.fingerprint() != info.get("vocab_sha256"):
        raise ConfigError(f"{run_dir}: {VOCAB_FILE} does not match the vocabulary the model was trained with "
                          f"(sha256 {vocab.fingerprint()[:12]} != {str(info.get('vocab_sha256'))[:12]})")
    if len(vocab) != model_config.vocab_size:
        raise ConfigError(f"{run_dir}: vocabulary has {len(vocab)} tokens, model expects {model_config.vocab_size}")
    weights_file = os.path.join(run_dir, WEIGHTS_FILE)
    try:
        with np.load(weights_file) as z:
            weights = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise ConfigError(f"{run_dir}: {WEIGHTS_FILE} is missing") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ConfigError(f"{weights_file}: corrupt ({type(e).__name__}: {e})") from None
    return Run(run_dir, model_config, vocab, weights, info)


def build_loaded_model(run: Run, config=None):
    """A Keras model of ``run``'s type with its weights (imports TensorFlow).

    ``config`` overrides the run's model config (same sizes; e.g. another quantization).
    """
    from keyboard_lm.models.language_model import assign_weights, build_model

    model = build_model(config or run.model_config)
    try:
        assign_weights(model, run.weights)
    except ConfigError as e:
        raise ConfigError(f"{run.path}: {e} (is this a checkpoint of another model type?)") from None
    return model


def append_metrics_row(run_dir: str, row: dict) -> None:
    """Append one row to metrics.csv (header written on first use)."""
    import csv

    path = os.path.join(run_dir, METRICS_FILE)
    new = not os.path.exists(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


def drop_metrics_after(run_dir: str, step_key: str, step: int) -> None:
    """Remove metrics.csv rows whose ``step_key`` ("round" or "epoch") is after ``step``: rows written after
    the checkpoint a run resumes from."""
    import csv

    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    keep = [r for r in rows if int(r[step_key]) <= step]
    if len(keep) != len(rows):
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(keep)


def totals_so_far(run_dir: str) -> tuple[int, float]:
    """(examples seen, training seconds) at metrics.csv's last row: where a resumed run's counts go on from."""
    import csv

    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        return 0, 0.0
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return 0, 0.0
    last = rows[-1]
    return int(float(last.get("examples_seen") or 0)), float(last.get("elapsed_seconds") or 0.0)


#: What a run writes into its directory; ``--overwrite`` removes these and nothing else.
RUN_ARTIFACTS = (RUN_FILE, VOCAB_FILE, WEIGHTS_FILE, METRICS_FILE, "metrics.png", "tensorboard", CHECKPOINT_DIR,
                 "model.tflite", "model.tflite.card.json")


def run_command(info: dict) -> str:
    """The command that made a run (runs before this field existed: from the trainer)."""
    return info.get("command") or {"federated": "train", "centralized": "train --centralized"}.get(
        info.get("trainer"), "unknown")


def prepare_run_dir(run_dir: str, command: str, overwrite: bool = False, replace_own: bool = False) -> None:
    """Make ``run_dir`` ready for a new run of ``command``, or refuse with one line saying why.

    A command never deletes or overwrites what it did not create: a missing or
    empty directory is used; one holding a run is replaced only with
    ``overwrite`` (or, with ``replace_own``, when that run came from the same
    command, as the demo re-runs into its own directory); a non-empty
    directory without a run is written into only with ``overwrite``.
    Replacing removes the files a run writes (``RUN_ARTIFACTS``), nothing else.
    """
    import shutil

    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ConfigError(f"{run_dir}: exists and is not a directory; choose another --out")
    if not os.path.isdir(run_dir) or not os.listdir(run_dir):
        os.makedirs(run_dir, exist_ok=True)
        return
    run_file = os.path.join(run_dir, RUN_FILE)
    if os.path.exists(run_file):
        try:
            with open(run_file, encoding="utf-8") as f:
                existing = run_command(json.load(f))
        except (OSError, ValueError):
            existing = "unreadable"
        if not (overwrite or (replace_own and existing == command)):
            hint = " (--resume continues it)" if existing == command == "train" else ""
            raise ConfigError(f"{run_dir}: already holds a '{existing}' run{hint}; refusing to overwrite it "
                              f"(choose another --out, or --overwrite to replace it)")
        for name in RUN_ARTIFACTS:
            path = os.path.join(run_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
    elif not overwrite:
        raise ConfigError(f"{run_dir}: is not empty and holds no keyboard_lm run; refusing to write into it "
                          f"(choose a new --out, or --overwrite to write the run's files into it)")

"""The run directory: everything a run needs, and all that ``eval``/``export`` read.

Layout (written by the centralized and the federated trainer alike)::

    RUN_DIR/
      run.json       format version, model config, text spec, vocabulary sha256,
                     data/split/hyper-parameters, final metrics
      vocab.txt      the vocabulary, one token per line in id order
      weights.npz    model weights by variable name (float32)
      metrics.csv    one row per evaluation (epoch or round)
      checkpoints/   a trainer's state for --resume
      run.lock, manifest.json   who holds the directory, and what the run wrote (``models.run_guard``)

Every file is written whole or not at all (``atomic_write``), and run.json only after the checkpoint it names:
after a crash or a full disk, run.json is never ahead of the checkpoints.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import os
import re
import zipfile

import numpy as np

from keyboard_lm.durable import replace_file
from keyboard_lm.errors import ConfigError, KeyboardLMError
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.text.spec import TEXT_SPEC_VERSION
from keyboard_lm.text.vocabulary import Vocabulary

RUN_FORMAT = "keyboard_lm.run/1"
RUN_FILE, VOCAB_FILE, WEIGHTS_FILE, METRICS_FILE = "run.json", "vocab.txt", "weights.npz", "metrics.csv"
CHECKPOINT_DIR = "checkpoints"  # a trainer's state for --resume (TFF program state, or the centralized epoch's)


#: What a federated run made before a field existed trained with: no dropout, no validation clients (the last
#: round kept, at a constant rate), no server-side average. The one set of back-compatible defaults.
FEDERATED_DEFAULTS = {"dropout": 0.0, "validation_fraction": 0.0, "lr_decay": 1.0, "weight_average": 0.0}


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What run.json says about a run, typed: the fields the library reads, with the defaults runs made
    before a field existed get (``RunRecord.of(info)``). The trainers write run.json; everything that
    reads it goes through this (``RunRecord.read`` when only run.json is wanted, ``Run.record`` after
    ``load_run``).

    ``federated`` is the recipe as written; ``federated_recipe`` is it over ``FEDERATED_DEFAULTS``, what
    a resumed run trains with. ``finished`` is True for runs made before it was recorded (they ended with
    their last record).
    """

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
    federated_recipe: dict | None = None
    client_data: dict = dataclasses.field(default_factory=dict)
    loop: dict = dataclasses.field(default_factory=dict)
    best: dict | None = None
    finished: bool = True
    heldout_ids_head: tuple = ()
    audit: dict | None = None
    time_breakdown: dict | None = None
    phrases: dict | None = None
    model: dict = dataclasses.field(default_factory=dict)
    weights_sha256: str | None = None

    @classmethod
    def of(cls, info: dict) -> "RunRecord":
        data = info.get("data") or {}
        hyper = info.get("hyperparameters") or {}
        federated = info.get("federated")
        return cls(trainer=info.get("trainer"), command=run_command(info), seq_len=int(hyper.get("seq_len", 20)),
                   split=data.get("split"), data_fingerprint=data.get("fingerprint"),
                   data_source=data.get("source") or {}, corpus=data.get("corpus"), federated=federated,
                   hyperparameters=hyper, init_from=info.get("init_from"),
                   differential_privacy=info.get("differential_privacy"), final_metrics=info.get("final_metrics"),
                   rounds_done=info.get("rounds_done"), epochs_done=info.get("epochs_done"),
                   participation=info.get("participation") or {}, parameters=info.get("parameters"),
                   federated_recipe={**FEDERATED_DEFAULTS, **federated} if federated else None,
                   client_data=info.get("client_data") or {}, loop=info.get("loop") or {}, best=info.get("best"),
                   finished=bool(info.get("finished", True)),
                   heldout_ids_head=tuple(data.get("heldout_ids_head") or ()), audit=info.get("audit"),
                   time_breakdown=info.get("time_breakdown"), phrases=info.get("phrases"),
                   model=info.get("model") or {}, weights_sha256=info.get("weights_sha256"))

    @classmethod
    def read(cls, run_dir: str) -> "RunRecord":
        """RUN_DIR's run.json alone (no vocabulary or weights read); ConfigError when missing or corrupt."""
        info = read_json(os.path.join(run_dir, RUN_FILE), f"{run_dir}: not a run directory ({RUN_FILE} is missing)")
        if not isinstance(info, dict):
            raise ConfigError(f"{os.path.join(run_dir, RUN_FILE)}: not a keyboard_lm run")
        return cls.of(info)

    @classmethod
    def peek(cls, run_dir: str | None) -> "RunRecord | None":
        """``read``, or None when there is no readable run.json (the caller that needs one reports that)."""
        if not run_dir:
            return None
        try:
            return cls.read(run_dir)
        except (ConfigError, OSError):
            return None


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


class RunWriteError(KeyboardLMError):
    """A run's file could not be written (a full disk, a file size limit, a read-only directory): one line
    naming the file; what was on disk before stays."""


def failure_reason(e: BaseException) -> str:
    """Why reading or writing a file failed, in a few words: the OS's reason (TensorFlow puts it after its
    op's details), else the error's first line."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    lines = str(e).strip().splitlines()
    if not lines:
        return type(e).__name__
    return re.sub(r"\s*\[Op:\w+\]$", "", lines[0]).rsplit("; ", 1)[-1][:120]


def atomic_write(path: str, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path``: all of it or nothing, durably.

    Through a temporary file created exclusively in the same directory (never a predictable name), fsynced,
    renamed over ``path``, then the directory fsynced: after a crash ``path`` holds its old bytes or the new
    ones. ``mode``: permissions of the new file (default: mkstemp's owner-only). A write that fails (full
    disk, file size limit, read-only directory) raises RunWriteError naming ``path``, which is left as it was.
    """
    try:
        replace_file(path, data, mode=mode)
    except OSError as e:
        raise RunWriteError(f"{path}: cannot write ({e.strerror or e})") from None


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
    """Append one row to metrics.csv (header written on first use), fsynced; a row that cannot be written
    whole is taken back (RunWriteError), so the file never ends in half a row."""
    path = os.path.join(run_dir, METRICS_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise RunWriteError(f"{path}: cannot write ({e.strerror or e})") from None
    try:
        size = os.fstat(fd).st_size
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(row))
        if size == 0:
            writer.writeheader()
        writer.writerow(row)
        data = memoryview(text.getvalue().encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise RunWriteError(f"{path}: cannot write ({e.strerror or e})") from None
    finally:
        os.close(fd)


def _step_of(row: dict, step_key: str) -> int | None:
    try:
        return int(row.get(step_key) or "")
    except ValueError:
        return None


def drop_metrics_after(run_dir: str, step_key: str, step: int) -> None:
    """Remove metrics.csv rows whose ``step_key`` ("round" or "epoch") is after ``step``: rows written after
    the checkpoint a run resumes from (and a row a crash left unreadable). The file is replaced atomically."""
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows, fields = list(reader), reader.fieldnames
    keep = [r for r in rows if (s := _step_of(r, step_key)) is not None and s <= step]
    if len(keep) != len(rows):
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(keep)
        atomic_write(path, text.getvalue().encode("utf-8"), mode=os.stat(path).st_mode & 0o777)


def totals_so_far(run_dir: str) -> tuple[int, float]:
    """(examples seen, training seconds) at metrics.csv's last row: where a resumed run's counts go on from."""
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        return 0, 0.0
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return 0, 0.0
    last = rows[-1]
    return int(float(last.get("examples_seen") or 0)), float(last.get("elapsed_seconds") or 0.0)


def run_command(info: dict) -> str:
    """The command that made a run (runs before this field existed: from the trainer)."""
    return info.get("command") or {"federated": "train", "centralized": "train --centralized"}.get(
        info.get("trainer"), "unknown")

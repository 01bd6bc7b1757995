"""Run directory -> self-contained int8 TFLite file (imports TensorFlow, never TFF).

The file is the TFLite flatbuffer followed by a zip archive of associated
files, the layout TFLite Support uses for model metadata: the interpreter
reads the flatbuffer and ignores what follows, and any zip reader finds the
archive from the end of the file.  The archive holds ``vocab.txt`` and
``keyboard_lm.json`` (text spec version, special-token ids, model type and
sizes, state size, signature names), so a predictor needs nothing but the
file.  Only builtin ops are allowed.  The archive's comment is the file's
checksum, ``keyboard_lm-sha256:<64 hex>``: the sha256 of every byte before it
(``keyboard_lm.inference.model_file.seal``), which the Python ``ModelFile`` and
the Java core verify before they parse anything else.

Quantization (``quantization=``; keyboard_lm.models.quantization):

* ``dynamic-range``: TF's converter option; hybrid kernels keep the weights
  int8 in memory and round each matrix input to int8 at run time.
* ``weight-only``: int8 weight tensors expanded once by DEQUANTIZE, float32
  arithmetic (keyboard_lm.export.weight_quantization); 4x the weight memory at run time.
* ``none``: float32.
* ``auto`` (default): the mode the run was trained quantization-aware for,
  else dynamic-range.  Exported in its own mode, a quantization-aware run
  computes exactly what was evaluated; any other run's weights move by up to
  half a quantization step and its near-tied candidates may reorder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import zipfile

import tensorflow as tf

from keyboard_lm.export.budget import (DEFAULT_BUDGET_BYTES, SizeBreakdown, check_budget, size_breakdown,
                                       vocab_size_that_fits)
from keyboard_lm.export.compaction import compact
from keyboard_lm.export.pruning import pruned_run
from keyboard_lm.export.step_module import StepModule
from keyboard_lm.export.weight_quantization import quantize_weights
from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import FILE_FORMAT, METADATA_FILE, PHRASES_FILE, VOCAB_FILE, seal
from keyboard_lm.inference.ranker import PhraseGate
from keyboard_lm.text.phrase_table import PhraseTable
from keyboard_lm.models.run_dir import Run, atomic_write, build_loaded_model, load_run
from keyboard_lm.models.config import QUANTIZATION
from keyboard_lm.models.quantization import rounding_error_steps
from keyboard_lm.text.spec import SPECIAL_TOKENS, TEXT_SPEC_VERSION



QUANTIZATION_MODES = ("auto", *QUANTIZATION)
SCHEMES = {"dynamic-range": "int8 weights (per-tensor symmetric), int8 matrix inputs at run time (hybrid kernels)",
           "weight-only": "int8 weights (per-tensor symmetric), DEQUANTIZE to float32 arithmetic",
           "none": "float32"}


def resolve_quantization(run: Run, quantization: str) -> str:
    if quantization not in QUANTIZATION_MODES:
        raise ConfigError(f"unknown quantization {quantization!r}; choose one of {', '.join(QUANTIZATION_MODES)}")
    if quantization == "auto":
        trained = run.model_config.quantization
        return trained if trained != "none" else "dynamic-range"
    return quantization


def convert(run: Run, k: int = 3, quantization: str = "auto") -> tuple[bytes, StepModule, dict]:
    """``run``'s step module as TFLite (builtin ops only): (flatbuffer, module, quantization summary)."""
    mode = resolve_quantization(run, quantization)
    trained = run.model_config.quantization
    # The exported graph carries the int8-rounded weights (constant-folded by the converter)
    # but no activation rounding: the hybrid kernels do that at run time.
    export_config = dataclasses.replace(run.model_config, quantization="weight-only" if trained != "none" else "none")
    module = StepModule(build_loaded_model(run, export_config), k=k)
    functions = module.concrete_functions()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(functions, module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if mode == "dynamic-range":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    try:
        flatbuffer = converter.convert()
    except Exception as e:  # the converter raises ConverterError and friends
        raise ConfigError(f"TFLite conversion of {run.path} failed: {e}") from None
    if mode == "weight-only":
        flatbuffer = quantize_weights(flatbuffer)
    flatbuffer = compact(flatbuffer)  # names and empty buffers no reader needs
    # How far the file's weights are from those the run was evaluated with, in quantization steps
    # (a quantization-aware run was evaluated with the int8 roundings themselves).
    steps = 0.0 if mode == "none" or trained != "none" else max(
        rounding_error_steps(w) for w in run.weights.values() if w.ndim == 2)
    return flatbuffer, module, {
        "mode": mode, "scheme": SCHEMES[mode], "trained_for": trained, "max_rounding_error_steps": steps,
        "exact": mode == trained,  # the file computes what was evaluated
    }


def metadata(run: Run, module: StepModule, quantization: str) -> dict:
    sp = SPECIAL_TOKENS
    return {
        "format": FILE_FORMAT, "text_spec": TEXT_SPEC_VERSION, "model": run.model_config.to_dict(),
        "quantization": quantization,
        "special_tokens": {"pad": [sp.pad, sp.pad_id], "bos": [sp.bos, sp.bos_id], "eos": [sp.eos, sp.eos_id],
                           "oov": [sp.oov, sp.oov_id]},
        "vocab_size": len(run.vocab), "vocab_sha256": run.vocab.fingerprint(), "state_size": module.state_size,
        "state_layout": module.state_sizes, "top_k": module.k,
        "signatures": {"step": ["token", "state", "top_ids", "top_log_probs"], "step_full": ["token", "state", "log_probs"],
                       "step_personal": ["token", "token_weight", "embedding", "state", "logits", "output"]},
        "embedding_dim": module.embedding_dim,
        "seq_len": run.record.seq_len,
        "split": run.record.split,
        # The corpus the model was trained on (format and fingerprint; no path of the training
        # machine), so `keyboard-lm eval MODEL.tflite` can refuse another corpus.
        "data": {"source": {"format": run.record.data_source.get("format")},
                 "fingerprint": run.record.data_fingerprint},
    }


#: A run's phrase table and its gate (``keyboard-lm phrases``), exported with the model when present.
RUN_PHRASES_FILE, RUN_GATE_FILE = "phrases.bin", "phrase_gate.json"


def run_phrases(run: Run) -> tuple[bytes, dict, int] | None:
    """(table bytes, the metadata's "phrases" object, the vocabulary size it was built for) of ``run``'s phrase
    table, or None if it has none.

    A table may be built for the run's vocabulary pruned to its most frequent words
    (``keyboard_lm.export.pruning``: the room the table takes in the file). The table is checked against that
    vocabulary and the gate against its format here, so a damaged or foreign table is refused at
    export (ConfigError naming the file), not on a phone.
    """
    table_path, gate_path = (os.path.join(run.path, f) for f in (RUN_PHRASES_FILE, RUN_GATE_FILE))
    if not os.path.exists(table_path):
        return None
    try:
        with open(table_path, "rb") as f:
            data = f.read()
        with open(gate_path, encoding="utf-8") as f:
            fitted = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{gate_path if isinstance(e, ValueError) else e.filename}: cannot read the run's "
                          f"phrase table ({e})") from None
    if not isinstance(fitted, dict):
        raise ConfigError(f"{gate_path}: not a JSON object")
    vocab_size = fitted.get("vocab_size", len(run.vocab))
    if type(vocab_size) is not int or not 4 < vocab_size <= len(run.vocab):
        raise ConfigError(f"{gate_path}: vocab_size {vocab_size!r} is not a vocabulary size of at most the run's "
                          f"{len(run.vocab)}")
    table = PhraseTable.from_bytes(data, vocab_size, table_path)
    gate = PhraseGate.from_dict(fitted.get("gate"), gate_path)
    return data, {"file": PHRASES_FILE, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                  "contexts": len(table), "entries": int(len(table.ids)), "max_order": table.max_order,
                  "gate": gate.to_dict(), "discovery": fitted.get("discovery")}, vocab_size


def associated_files(meta: dict, vocab_text: str, phrases: bytes | None = None) -> bytes:
    """The zip archive appended to the flatbuffer (without its checksum comment; ``seal`` adds it).

    The phrase table is stored uncompressed: its hashes do not deflate, and a reader maps it as it is.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(METADATA_FILE, json.dumps(meta, indent=1, sort_keys=True))
        z.writestr(VOCAB_FILE, vocab_text)
        if phrases is not None:
            z.writestr(PHRASES_FILE, phrases, compress_type=zipfile.ZIP_STORED)
    return buf.getvalue()


def _card_data(data: dict | None) -> dict | None:
    """run.json's "data" for the card: the corpus file by name only (the card travels with the model file;
    a path of the training machine means nothing elsewhere and tells its layout)."""
    if not data or not (data.get("source") or {}).get("path"):
        return data
    return {**data, "source": {**data["source"], "path": os.path.basename(data["source"]["path"])}}


def model_card(run: Run, breakdown: SizeBreakdown, sha256: str, out_path: str, quantization: dict) -> dict:
    """The card written beside the model file: what the run was, from its typed record, and the file's sizes."""
    record = run.record
    fed = record.federated
    return {
        "model_file": os.path.basename(out_path), "sha256": sha256, "size_bytes": breakdown.total,
        "size_breakdown": breakdown.as_dict(), "model": run.model_config.to_dict(),
        "parameters": run.model_config.num_parameters(), "quantization": quantization,
        # The whole "data" section (counts and split included), which RunRecord does not type.
        "text_spec": TEXT_SPEC_VERSION, "data": _card_data(run.info.get("data")),
        "training": {"trainer": record.trainer, "algorithm": fed["algorithm"] if fed else "centralized",
                     # What the run started from (warm start); None: random weights.
                     "init_from": record.init_from, "federated": fed, "rounds": record.rounds_done,
                     "epochs": record.epochs_done, "hyperparameters": record.hyperparameters},
        # Every DP setting and the final (eps, delta, rho) of the run; None: trained without DP.
        "differential_privacy": record.differential_privacy,
        "evaluation_float_model": record.final_metrics,
        "source_run": os.path.basename(os.path.normpath(run.path)),
    }


def export_run(run_dir: str, out_path: str, budget_bytes: int | None = DEFAULT_BUDGET_BYTES, k: int = 3,
               quantization: str = "auto", phrases: bool = True, vocab_size: int | None = None) -> dict:
    """Export ``run_dir`` to ``out_path`` (+ ``<out>.card.json``); returns the model card.

    ``phrases``: include the run's phrase table when it has one (``keyboard-lm phrases``), with the
    vocabulary it was built for; the budget holds for the whole file. ``vocab_size``: keep only the
    most frequent words (``keyboard_lm.export.pruning``; with a table, it must be the table's). Nothing is written
    unless conversion succeeds and the file fits the budget.
    """
    run = load_run(run_dir)
    run_words = len(run.vocab)
    specials = len(run.vocab.special.tokens)
    if vocab_size is not None and not specials < vocab_size <= run_words:
        raise ConfigError(f"{run_dir}: --vocab-size {vocab_size}: the run has {run_words:,} words, "
                          f"{specials} of them special; keep between {specials + 1} and {run_words:,}")
    table = run_phrases(run) if phrases else None
    if table is not None and run.record.differential_privacy:
        raise ConfigError(f"{run_dir}: trained under differential privacy, whose guarantee covers the model alone, "
                          f"yet it holds a phrase table ({RUN_PHRASES_FILE}) released outside it; export with "
                          "--no-phrases")
    if table is not None and vocab_size is not None and vocab_size != table[2]:
        raise ConfigError(f"{run_dir}: its phrase table is for the {table[2]:,} most frequent words, not "
                          f"{vocab_size:,}; export without the table or learn it again for that vocabulary")
    size = table[2] if table is not None else vocab_size
    if size is not None and size < len(run.vocab):
        run = pruned_run(run, size)  # the rarest words make room for the table
    flatbuffer, module, quant = convert(run, k=k, quantization=quantization)
    meta = metadata(run, module, quant["mode"])
    if table is not None:
        meta["phrases"] = table[1]
    data = seal(flatbuffer + associated_files(meta, run.vocab.to_text(), table[0] if table else None))
    extra = len(data) - len(flatbuffer)  # the archive and its checksum comment
    breakdown = size_breakdown(run, len(flatbuffer), extra, bytes_per_weight=4 if quant["mode"] == "none" else 1,
                               phrase_bytes=len(table[0]) if table else 0)
    fits = None
    if budget_bytes is not None and breakdown.total > budget_bytes and table is None:
        fits = vocab_size_that_fits(breakdown, budget_bytes, len(run.vocab), specials)
    check_budget(breakdown, budget_bytes, fits)
    sha = hashlib.sha256(data).hexdigest()
    card = model_card(run, breakdown, sha, out_path, quant)
    # Words the file keeps of the run's (the rarest dropped: for a phrase table or --vocab-size); the card's
    # evaluation is the run's, with all of them.
    card["vocabulary"] = {"run": run_words, "kept": len(run.vocab)}
    card["phrases"] = {**{k: v for k, v in table[1].items() if k != "file"}, "vocab_size": table[2]} if table else None
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    # Each through an exclusively created temporary file, fsynced and renamed: never a predictable name.
    atomic_write(os.path.abspath(out_path), data, mode=0o644)
    atomic_write(os.path.abspath(out_path + ".card.json"), json.dumps(card, indent=2).encode("utf-8"), mode=0o644)
    return card

"""Run directory -> self-contained int8 TFLite file (imports TensorFlow, never TFF).

The file is the TFLite flatbuffer followed by a zip archive of associated
files, the layout TFLite Support uses for model metadata: the interpreter
reads the flatbuffer and ignores what follows, and any zip reader finds the
archive from the end of the file.  The archive holds ``vocab.txt`` and
``keyboard_lm.json`` (text spec version, special-token ids, model type and
sizes, state size, signature names), so a predictor needs nothing but the
file.  Only builtin ops are allowed.

Quantization (``quantization=``):

* ``weight-only`` (default): int8 weight tensors expanded by DEQUANTIZE,
  float32 arithmetic (export.weight_quantization).  Exactly the model that was
  evaluated when it was trained quantization-aware
  (``weight_quantization="int8"``); otherwise each weight moves by at most half
  a quantization step.
* ``dynamic-range``: TF's converter option; hybrid kernels keep weights int8
  in memory (about 4x less RAM) but also round activations to int8 at run
  time, which changes the top-3 more often.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile

import tensorflow as tf

from export.budget import DEFAULT_BUDGET_BYTES, SizeBreakdown, check_budget, size_breakdown
from export.step_module import StepModule
from export.weight_quantization import quantize_weights, summary
from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import FILE_FORMAT, METADATA_FILE, VOCAB_FILE
from keyboard_lm.models.checkpoint import Run, build_loaded_model, load_run
from keyboard_lm.text.spec import SPECIAL_TOKENS, TEXT_SPEC_VERSION



QUANTIZATION_MODES = ("weight-only", "dynamic-range", "none")


def convert(run: Run, k: int = 3, quantization: str = "weight-only") -> tuple[bytes, StepModule, dict]:
    """``run``'s step module as TFLite (builtin ops only): (flatbuffer, module, quantization summary)."""
    if quantization not in QUANTIZATION_MODES:
        raise ConfigError(f"unknown quantization {quantization!r}; choose one of {', '.join(QUANTIZATION_MODES)}")
    module = StepModule(build_loaded_model(run), k=k)
    functions = [module.step.get_concrete_function(), module.step_full.get_concrete_function()]
    converter = tf.lite.TFLiteConverter.from_concrete_functions(functions, module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantization == "dynamic-range":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    try:
        flatbuffer = converter.convert()
    except Exception as e:  # the converter raises ConverterError and friends
        raise ConfigError(f"TFLite conversion of {run.path} failed: {e}") from None
    if quantization == "weight-only":
        flatbuffer, report = quantize_weights(flatbuffer)
        return flatbuffer, module, summary(report)
    scheme = {"dynamic-range": "int8 weights, dynamic-range (hybrid kernels, int8 activations at run time)",
              "none": "float32"}[quantization]
    return flatbuffer, module, {"scheme": scheme}


def metadata(run: Run, module: StepModule) -> dict:
    sp = SPECIAL_TOKENS
    return {
        "format": FILE_FORMAT, "text_spec": TEXT_SPEC_VERSION, "model": run.model_config.to_dict(),
        "special_tokens": {"pad": [sp.pad, sp.pad_id], "bos": [sp.bos, sp.bos_id], "eos": [sp.eos, sp.eos_id],
                           "oov": [sp.oov, sp.oov_id]},
        "vocab_size": len(run.vocab), "vocab_sha256": run.vocab.fingerprint(), "state_size": module.state_size,
        "state_layout": module.state_sizes, "top_k": module.k,
        "signatures": {"step": ["token", "state", "top_ids", "top_log_probs"], "step_full": ["token", "state", "log_probs"]},
        "seq_len": run.info.get("hyperparameters", {}).get("seq_len", 20),
        "split": run.info.get("data", {}).get("split"),
    }


def associated_files(meta: dict, vocab_text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(METADATA_FILE, json.dumps(meta, indent=1, sort_keys=True))
        z.writestr(VOCAB_FILE, vocab_text)
    return buf.getvalue()


def model_card(run: Run, breakdown: SizeBreakdown, sha256: str, out_path: str, quantization: dict) -> dict:
    info = run.info
    fed = info.get("federated")
    return {
        "model_file": os.path.basename(out_path), "sha256": sha256, "size_bytes": breakdown.total,
        "size_breakdown": breakdown.as_dict(), "model": run.model_config.to_dict(),
        "parameters": run.model_config.num_parameters(), "quantization": quantization,
        "text_spec": TEXT_SPEC_VERSION, "data": info.get("data"),
        "training": {"trainer": info.get("trainer"), "algorithm": fed["algorithm"] if fed else "centralized",
                     "federated": fed, "rounds": info.get("rounds_done"), "epochs": info.get("epochs_done"),
                     "hyperparameters": info.get("hyperparameters")},
        "differential_privacy": None,
        "evaluation_float_model": info.get("final_metrics"),
        "source_run": os.path.basename(os.path.normpath(run.path)),
    }


def export_run(run_dir: str, out_path: str, budget_bytes: int | None = DEFAULT_BUDGET_BYTES, k: int = 3,
               quantization: str = "weight-only") -> dict:
    """Export ``run_dir`` to ``out_path`` (+ ``<out>.card.json``); returns the model card.

    Nothing is written unless conversion succeeds and the file fits the budget.
    """
    run = load_run(run_dir)
    flatbuffer, module, quant = convert(run, k=k, quantization=quantization)
    extra = associated_files(metadata(run, module), run.vocab.to_text())
    data = flatbuffer + extra
    breakdown = size_breakdown(run, len(flatbuffer), len(extra), bytes_per_weight=4 if quantization == "none" else 1)
    check_budget(breakdown, budget_bytes)
    sha = hashlib.sha256(data).hexdigest()
    card = model_card(run, breakdown, sha, out_path, quant)
    out_dir = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(out_dir, exist_ok=True)
    tmp_model = tempfile.NamedTemporaryFile(dir=out_dir, prefix=".tmp-", delete=False)
    try:
        with tmp_model:
            tmp_model.write(data)
        os.chmod(tmp_model.name, 0o644)
        card_path = out_path + ".card.json"
        with open(card_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(card, f, indent=2)
        os.replace(tmp_model.name, out_path)
        os.replace(card_path + ".tmp", card_path)
    finally:
        if os.path.exists(tmp_model.name):
            os.remove(tmp_model.name)
    return card

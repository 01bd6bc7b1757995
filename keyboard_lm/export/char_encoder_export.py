"""Export the char word encoder as a second small .tflite with the model file's appended-zip layout.

A separate file rather than extra signatures in the model .tflite: the model
exporter stays unchanged, the encoder can be updated or left out (apps without
personal words ship nothing extra), and the budget check adds both files
(``keyboard_lm.export.budget.check_personal_budget``).

The archive's comment is the file's checksum, as in the model file
(``keyboard_lm.inference.model_file.seal``).

The metadata (``char_encoder.json``) holds the format, the spelling limit, the
embedding dimension, the fingerprint of the model file the encoder was trained
for, and optional training settings and held-out metrics.  Those extras must be
numbers: the file ships to every device, so no word of any client may be in it,
and a numbers-only rule makes that a property of the format rather than of the
caller's care.
"""
from __future__ import annotations

import io
import json
import math
import os
import zipfile

import numpy as np
import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import seal
from keyboard_lm.models.run_dir import atomic_write

CHAR_ENCODER_FORMAT = "keyboard_lm-char-encoder-1"
CHAR_ENCODER_META = "char_encoder.json"
#: Keys the exporter writes itself; extra metadata may not replace them.
RESERVED_KEYS = ("format", "max_bytes", "embedding_dim", "model_fingerprint")


def _numbers_only(value, where: str):
    """``value`` with NaN/Inf as None; ConfigError naming the key if anything but numbers (or dicts/lists of them)."""
    if isinstance(value, dict):
        return {str(k): _numbers_only(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numbers_only(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    raise ConfigError(f"char encoder metadata {where} is {type(value).__name__} {str(value)[:40]!r}: only numbers "
                      "may go into the shipped file (no words)")


def char_encoder_bytes(encoder: tf.keras.Model, *, max_bytes: int, model_fingerprint: str,
                       metadata: dict | None = None) -> bytes:
    """The encoder (int8 weights, float activations) + metadata as the bytes of a char encoder file.

    ``metadata``: extra numbers-only entries (training settings, held-out metrics).
    """
    if not model_fingerprint:
        raise ConfigError("the char encoder file needs the fingerprint of the model file it belongs to")
    extra = _numbers_only(metadata or {}, "metadata")
    clash = sorted(set(extra) & set(RESERVED_KEYS))
    if clash:
        raise ConfigError(f"char encoder metadata may not set {', '.join(clash)} (written by the exporter)")
    converter = tf.lite.TFLiteConverter.from_keras_model(encoder)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]  # dynamic-range: int8 weights
    flat = converter.convert()
    meta = {**extra, "format": CHAR_ENCODER_FORMAT, "max_bytes": max_bytes,
            "embedding_dim": int(encoder.output_shape[-1]), "model_fingerprint": model_fingerprint}
    buf = io.BytesIO()
    buf.write(flat)
    with zipfile.ZipFile(buf, "a") as z:
        z.writestr(CHAR_ENCODER_META, json.dumps(meta, sort_keys=True, allow_nan=False))
    return seal(buf.getvalue())


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (directories made as needed), all of it or nothing, readable by all."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    atomic_write(os.path.abspath(path), data, mode=0o644)


def export_char_encoder(encoder: tf.keras.Model, path: str, *, max_bytes: int, model_fingerprint: str,
                        metadata: dict | None = None) -> int:
    """Write ``encoder`` (int8 weights, float activations) + metadata to ``path``; returns its size in bytes."""
    data = char_encoder_bytes(encoder, max_bytes=max_bytes, model_fingerprint=model_fingerprint, metadata=metadata)
    write_atomically(path, data)
    return len(data)

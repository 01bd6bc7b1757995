"""Export the char word encoder as a second small .tflite with the model file's appended-zip layout (issue 13).

A separate file rather than extra signatures in the model .tflite: the model
exporter stays unchanged, the encoder can be updated or left out (apps without
personal words ship nothing extra), and the budget check adds both files.
"""
from __future__ import annotations

import io
import json
import zipfile

import tensorflow as tf

CHAR_ENCODER_FORMAT = "keyboard_lm-char-encoder-1"
CHAR_ENCODER_META = "char_encoder.json"


def export_char_encoder(encoder: tf.keras.Model, path: str, *, max_bytes: int, model_fingerprint: str) -> int:
    """Write ``encoder`` (int8 weights, float activations) + metadata to ``path``; returns its size in bytes."""
    converter = tf.lite.TFLiteConverter.from_keras_model(encoder)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]  # dynamic-range: int8 weights
    flat = converter.convert()
    meta = {"format": CHAR_ENCODER_FORMAT, "max_bytes": max_bytes,
            "embedding_dim": int(encoder.output_shape[-1]), "model_fingerprint": model_fingerprint}
    buf = io.BytesIO()
    buf.write(flat)
    with zipfile.ZipFile(buf, "a") as z:
        z.writestr(CHAR_ENCODER_META, json.dumps(meta, sort_keys=True))
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return len(buf.getvalue())

"""The TFLite interpreter: tflite-runtime, else ai-edge-litert (no TensorFlow)."""

from __future__ import annotations


def interpreter_class(prefer: str | None = None):
    """The Interpreter class of the first available runtime.

    ``prefer`` = "tflite-runtime" or "ai-edge-litert" picks one explicitly.
    tflite-runtime has no wheels for Python 3.12+; ai-edge-litert is its
    maintained successor.
    """
    order = ["tflite-runtime", "ai-edge-litert"]
    if prefer is not None:
        if prefer not in order:
            raise ValueError(f"unknown TFLite runtime {prefer!r}; choose one of {order}")
        order = [prefer]
    errors = []
    for name in order:
        try:
            if name == "tflite-runtime":
                from tflite_runtime.interpreter import Interpreter
            else:
                from ai_edge_litert.interpreter import Interpreter
            return Interpreter
        except ImportError as e:
            errors.append(f"{name}: {e}")
    raise ImportError("no TFLite runtime found; install tflite-runtime (Python <= 3.11) or ai-edge-litert ("
                      + "; ".join(errors) + ")")

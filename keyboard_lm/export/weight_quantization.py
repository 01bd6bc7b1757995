"""Weight-only int8 quantization of a float TFLite flatbuffer.

TF 2.14's converter offers int8 weights only as "dynamic range"
quantization, whose hybrid kernels also round every matrix input to int8 at
run time.  This is the other option: each float weight matrix of a converted
float model is replaced by an int8 tensor (per-tensor symmetric scale,
keyboard_lm.models.quantization) feeding a builtin DEQUANTIZE op.  The file
stores one byte per weight; the runtime expands the constants once
(DEQUANTIZE of a constant input is computed at the first invocation and
kept, 4 bytes per weight in memory) and computes in float32.
"""

from __future__ import annotations

import numpy as np
from tensorflow.lite.python import schema_py_generated as schema
from tensorflow.lite.tools import flatbuffer_utils

from keyboard_lm.models.quantization import quantize_int8_np

#: Float constants with fewer elements (biases, small vectors) stay float32.
MIN_ELEMENTS = 1024


def _dequantize_opcode(model) -> int:
    for i, oc in enumerate(model.operatorCodes):
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == schema.BuiltinOperator.DEQUANTIZE:
            return i
    oc = schema.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = schema.BuiltinOperator.DEQUANTIZE
    oc.version = 2  # int8 input
    model.operatorCodes.append(oc)
    return len(model.operatorCodes) - 1


def quantize_weights(flatbuffer: bytes) -> bytes:
    """Float flatbuffer -> flatbuffer with int8 weights + DEQUANTIZE ops.

    Buffers shared by several subgraphs (one per signature) stay shared.
    """
    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    deq = _dequantize_opcode(model)
    replaced: dict[int, tuple[int, float]] = {}  # float buffer -> (int8 buffer, scale)
    for sg in model.subgraphs:
        prologue = []
        for ti, t in enumerate(list(sg.tensors)):
            buf = model.buffers[t.buffer] if t.buffer else None
            if (buf is None or buf.data is None or t.type != schema.TensorType.FLOAT32
                    or t.shape is None or len(t.shape) < 2 or int(np.prod(t.shape)) < MIN_ELEMENTS):
                continue
            if t.buffer not in replaced:
                w = np.frombuffer(bytes(buf.data), np.float32).reshape(t.shape)
                q, scale = quantize_int8_np(w)
                new = schema.BufferT()
                new.data = np.frombuffer(q.tobytes(), np.uint8)
                model.buffers.append(new)
                replaced[t.buffer] = (len(model.buffers) - 1, float(scale))
            int8_buffer, scale = replaced[t.buffer]
            qt = schema.TensorT()
            qt.shape, qt.type, qt.buffer = t.shape, schema.TensorType.INT8, int8_buffer
            qt.name = t.name + b"/int8"
            qt.quantization = schema.QuantizationParametersT()
            qt.quantization.scale, qt.quantization.zeroPoint = [scale], [0]
            sg.tensors.append(qt)
            op = schema.OperatorT()
            op.opcodeIndex, op.inputs, op.outputs = deq, [len(sg.tensors) - 1], [ti]
            op.builtinOptionsType = schema.BuiltinOptions.DequantizeOptions
            op.builtinOptions = schema.DequantizeOptionsT()
            prologue.append(op)
            t.buffer = 0  # now computed by the DEQUANTIZE op
        sg.operators = prologue + (sg.operators or [])
    for old in replaced:
        model.buffers[old].data = None
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))

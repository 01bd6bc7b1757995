"""The shape and type every operator of a step module gives, worked out and checked against the file.

TFLite's kernels compute each output's shape from their inputs' when the interpreter is
prepared, and several assume what they never check: LOG_SOFTMAX of a scalar, a STRIDED_SLICE
whose bounds do not match its input's rank, a FULLY_CONNECTED whose weights do not fit its
input read or write outside their tensors (SIGSEGV). So, before any interpreter is built, each
operator's outputs are worked out here from its inputs, in file order, as the kernel would
(static shapes: constants and the subgraph inputs have fixed shapes), refusing what the kernel
does not handle, and every result must equal the shape and type the file declares; and the
work of one run is bounded. The same rules as the Java engine's (android_demo/core Interpreter
+ Kernels), for the operators an exported keyboard_lm step module uses.
"""

from __future__ import annotations

import math

import numpy as np

from keyboard_lm.inference.tflite_flatbuffer import MAX_RANK, FlatbufferError, Operator, Subgraph, TfliteModel

F32, F16, I32, U8, I64, BOOL, I16, I8 = 0, 1, 2, 3, 4, 6, 7, 9
_NUMERIC = (F32, I32)
#: Fused activations TFLite's float kernels apply: NONE, RELU, RELU_N1_TO_1, RELU6.
_ACTIVATIONS = (0, 1, 2, 3)


class _Fail(Exception):
    pass


def _need(condition: bool, what: str) -> None:
    if not condition:
        raise _Fail(what)


def _broadcast(a: tuple, b: tuple) -> tuple:
    """NumPy broadcasting, as TFLite's binary kernels do it."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    _need(all(x == y or x == 1 or y == 1 for x, y in zip(a, b)), f"shapes {list(a)} and {list(b)} do not broadcast")
    return tuple(max(x, y) for x, y in zip(a, b))


def _axis(axis: int, rank: int) -> int:
    _need(-rank <= axis < rank, f"axis {axis} is outside a rank-{rank} input")
    return axis % rank


class _Graph:
    """One subgraph's tensors with the shapes/types known so far and the constants' values."""

    def __init__(self, sub: Subgraph, model: TfliteModel, data: bytes):
        self.sub, self.model, self.data = sub, model, data

    def shape(self, t: int) -> tuple:
        return self.sub.tensors[t].shape

    def type(self, t: int) -> int:
        return self.sub.tensors[t].type

    def ints(self, t: int) -> list[int]:
        """The values of a constant INT32 tensor."""
        tensor = self.sub.tensors[t]
        _need(tensor.type == I32, f"tensor {t} is not INT32")
        start, n = self.model.buffers[tensor.buffer]
        return [int(v) for v in np.frombuffer(self.data, "<i4", n // 4, start)]

    def quantization_axis(self, t: int) -> int | None:
        return self.sub.tensors[t].quantized_dimension


def _outputs(g: _Graph, op: Operator) -> list[tuple[tuple, int]]:
    """[(shape, type)] of ``op``'s outputs, or _Fail saying what its kernel would trip over."""
    ins = op.inputs
    shape, kind = g.shape, g.type
    name = op.name
    if name in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "GREATER"):
        a, b = ins
        # Integer DIV would need a check for zero the kernel may not make (SIGFPE); the exporter divides floats.
        _need(kind(a) == kind(b) and kind(a) in (_NUMERIC if name != "DIV" else (F32,)),
              f"input types {kind(a)} and {kind(b)}")
        if name != "GREATER" and name != "MAXIMUM":
            _need(op.options[0] in _ACTIVATIONS, f"fused activation {op.options[0]}")
        out = _broadcast(shape(a), shape(b))
        return [(out, BOOL if name == "GREATER" else kind(a))]
    if name in ("ABS", "RELU", "LOGISTIC", "TANH", "LOG_SOFTMAX"):
        _need(kind(ins[0]) == F32, f"input type {kind(ins[0])}")
        _need(name != "LOG_SOFTMAX" or len(shape(ins[0])) >= 1, "a scalar input")
        return [(shape(ins[0]), F32)]
    if name == "DEQUANTIZE":
        _need(kind(ins[0]) in (I8, U8, I16, F16), f"input type {kind(ins[0])}")
        return [(shape(ins[0]), F32)]
    if name == "CONCATENATION":
        first = shape(ins[0])
        _need(len(first) >= 1 and op.options[1] in _ACTIVATIONS, "a scalar input or an unknown activation")
        axis = _axis(op.options[0], len(first))
        total = 0
        for t in ins:
            s = shape(t)
            _need(kind(t) == kind(ins[0]) and kind(t) in _NUMERIC, f"input type {kind(t)}")
            _need(len(s) == len(first) and all(x == y for i, (x, y) in enumerate(zip(s, first)) if i != axis),
                  f"input shapes {list(first)} and {list(s)} differ outside axis {axis}")
            total += s[axis]
        return [(first[:axis] + (total,) + first[axis + 1:], kind(ins[0]))]
    if name == "FULLY_CONNECTED":
        x, w = ins[0], ins[1]
        activation, weights_format, keep_dims, _, bias_type = op.options
        _need(activation in _ACTIVATIONS and weights_format == 0 and bias_type == 0, f"options {op.options}")
        _need(kind(x) == F32 and kind(w) in (F32, I8), f"input types {kind(x)} and {kind(w)}")
        _need(len(shape(w)) == 2 and len(shape(x)) >= 1, f"weights {list(shape(w))}, input {list(shape(x))}")
        units, depth = shape(w)
        _need(shape(x)[-1] == depth, f"input {list(shape(x))} against weights {list(shape(w))}")
        axis = g.quantization_axis(w)
        _need(axis in (None, 0), f"weights quantized along dimension {axis}, not per output unit")
        if len(ins) == 3 and ins[2] >= 0:
            _need(kind(ins[2]) == F32 and shape(ins[2]) == (units,), f"bias {list(shape(ins[2]))}")
        batch = math.prod(shape(x)) // depth
        return [(shape(x)[:-1] + (units,) if keep_dims else (batch, units), F32)]
    if name == "GATHER":
        params, indices = ins
        axis_option, batch_dims = op.options
        _need(batch_dims == 0 and kind(indices) in (I32, I64) and len(shape(params)) >= 1, "options or types")
        _need(kind(params) in (F32, I32, I8), f"params type {kind(params)}")
        axis = _axis(axis_option, len(shape(params)))
        return [(shape(params)[:axis] + shape(indices) + shape(params)[axis + 1:], kind(params))]
    if name == "STRIDED_SLICE":
        x = ins[0]
        begin_mask, end_mask, ellipsis, new_axis, shrink, offset = op.options
        _need(ellipsis == 0 and new_axis == 0 and not offset, f"options {op.options}")
        _need(kind(x) in (F32, I32, I8), f"input type {kind(x)}")
        rank = len(shape(x))
        begin, end, strides = (g.ints(t) for t in ins[1:])
        _need(1 <= rank and len(begin) == len(end) == len(strides) == rank, f"bounds of length {len(begin)} "
              f"for a rank-{rank} input")
        out = []
        for i, (b, e, s, d) in enumerate(zip(begin, end, strides, shape(x))):
            _need(s != 0, "a zero stride")
            if begin_mask >> i & 1:
                b = 0 if s > 0 else d - 1
            if end_mask >> i & 1:
                e = d if s > 0 else -d - 1
            b, e = b + d if b < 0 else b, e + d if e < 0 else e
            b = min(max(b, 0), d) if s > 0 else min(max(b, -1), d - 1)
            if shrink >> i & 1:
                _need(0 <= b < d, f"a shrunk axis {i} outside the input")
                continue
            e = min(max(e, 0), d) if s > 0 else min(max(e, -1), d - 1)
            out.append(max(0, -(-(e - b) // s)) if s > 0 else max(0, -(-(b - e) // -s)))
        _need(all(d >= 1 for d in out), f"an empty slice {out}")
        return [(tuple(out), kind(x))]
    if name == "TOPK_V2":
        x, k = ins
        ks = g.ints(k)
        _need(kind(x) in _NUMERIC and len(shape(x)) >= 1 and len(ks) == 1, "input or k")
        _need(1 <= ks[0] <= shape(x)[-1], f"k = {ks[0]} for {shape(x)[-1]} values")
        out = shape(x)[:-1] + (ks[0],)
        return [(out, kind(x)), (out, I32)]
    if name in ("SPLIT", "SPLIT_V"):
        x, sizes, axis_t = (ins[1], None, ins[0]) if name == "SPLIT" else ins
        axes = g.ints(axis_t)
        _need(len(axes) == 1 and kind(x) in (F32, I32), "axis or input type")
        axis = _axis(axes[0], len(shape(x)))
        dim, n = shape(x)[axis], len(op.outputs)
        _need(op.options[0] == n, f"num_splits {op.options[0]} for {n} outputs")
        if sizes is None:
            _need(dim % n == 0, f"{dim} values split {n} ways")
            parts = [dim // n] * n
        else:
            parts = g.ints(sizes)
            _need(len(parts) == n and all(p >= 1 or p == -1 for p in parts) and parts.count(-1) <= 1, f"splits {parts}")
            if -1 in parts:
                parts[parts.index(-1)] = dim - (sum(parts) + 1)
            _need(all(p >= 1 for p in parts) and sum(parts) == dim, f"splits {parts} of {dim} values")
        return [(shape(x)[:axis] + (p,) + shape(x)[axis + 1:], kind(x)) for p in parts]
    if name == "REDUCE_MAX":
        x, axes_t = ins
        rank = len(shape(x))
        _need(kind(x) in _NUMERIC and rank >= 1, "input")
        axes = {_axis(a, rank) for a in g.ints(axes_t)}
        keep = op.options[0]
        out = tuple(1 if i in axes else d for i, d in enumerate(shape(x)) if keep or i not in axes)
        return [(out, kind(x))]
    if name in ("SELECT", "SELECT_V2"):
        c, a, b = ins
        _need(kind(c) == BOOL and kind(a) == kind(b) and kind(a) in _NUMERIC, "input types")
        if name == "SELECT":
            _need(shape(a) == shape(b) and (shape(c) == shape(a) or (len(shape(c)) == 1 and shape(a)
                                                                     and shape(c)[0] == shape(a)[0])),
                  f"shapes {list(shape(c))}, {list(shape(a))}, {list(shape(b))}")
            return [(shape(a), kind(a))]
        return [(_broadcast(_broadcast(shape(c), shape(a)), shape(b)), kind(a))]
    if name == "SHAPE":
        _need(op.options[0] in (I32, I64), f"out_type {op.options[0]}")
        return [((len(shape(ins[0])),), op.options[0])]
    if name == "FILL":
        dims, value = ins
        _need(g.sub.tensors[dims].buffer and g.model.buffers[g.sub.tensors[dims].buffer] is not None,
              "dims that are not a constant")
        out = tuple(g.ints(dims))
        _need(shape(value) == () and kind(value) in _NUMERIC, "a value that is not a scalar")
        _need(len(out) <= MAX_RANK and all(d >= 1 for d in out), f"dims {list(out)}")
        return [(out, kind(value))]
    if name == "BATCH_MATMUL":
        a, b = ins
        adj_x, adj_y, _ = op.options
        _need(kind(a) == F32 and kind(b) == F32 and 2 <= len(shape(a)) and 2 <= len(shape(b)), "inputs")
        m, k = shape(a)[-2:][::-1] if adj_x else shape(a)[-2:]
        k2, n = shape(b)[-2:][::-1] if adj_y else shape(b)[-2:]
        _need(k == k2, f"inner dimensions {k} and {k2}")
        return [(_broadcast(shape(a)[:-2], shape(b)[:-2]) + (m, n), F32)]
    raise _Fail("no shape rule")  # OPERATORS and these rules are kept in step


#: Multiply-adds (or elements touched) one run of a subgraph may cost: about 60 times the paper-size CIFG's
#: step (~4 million), so a file that repeats a big matrix product thousands of times cannot make the load's
#: trial step, or any suggestion, take minutes.
MAX_STEP_WORK = 256 << 20


def _work(g: _Graph, op: Operator) -> int:
    """Multiply-adds of a matrix product, elements read and written by any other operator."""
    elements = [math.prod(g.shape(t)) for t in op.inputs if t >= 0] + [math.prod(g.shape(t)) for t in op.outputs]
    if op.name == "FULLY_CONNECTED":
        return math.prod(g.shape(op.outputs[0])) * g.shape(op.inputs[1])[1]
    if op.name == "BATCH_MATMUL":
        a = g.shape(op.inputs[0])
        return math.prod(g.shape(op.outputs[0])) * (a[-2] if op.options[0] else a[-1])
    return sum(elements)


def check_shapes(model: TfliteModel, data: bytes) -> None:
    """Raise FlatbufferError unless every operator's worked-out outputs are the shapes and types the file declares,
    and one run of each subgraph costs at most MAX_STEP_WORK."""
    for index, sub in enumerate(model.subgraphs):
        g = _Graph(sub, model, data)
        work = 0
        for k, op in enumerate(sub.operators):
            where = f"subgraph {index} operator {k} ({op.name})"
            try:
                results = _outputs(g, op)
            except _Fail as e:
                raise FlatbufferError(f"{where}: {e}") from None
            except (ValueError, TypeError, IndexError) as e:  # a constant of the wrong size for its role
                raise FlatbufferError(f"{where}: {type(e).__name__}: {e}") from None
            for t, (shape, kind) in zip(op.outputs, results):
                declared = sub.tensors[t]
                if declared.shape != tuple(shape) or declared.type != kind:
                    raise FlatbufferError(f"{where}: output {t} ({declared.name}) is declared type {declared.type} "
                                          f"shape {list(declared.shape)}, the operator gives type {kind} "
                                          f"shape {list(shape)}")
            work += _work(g, op)
            if work > MAX_STEP_WORK:
                raise FlatbufferError(f"{where}: one run of subgraph {index} would cost more than {MAX_STEP_WORK} "
                                      "multiply-adds, far more than a keyboard model's step")

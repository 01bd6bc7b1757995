"""The TFLite flatbuffer of a model file, read and checked in pure Python before any interpreter sees it.

The TFLite runtime builds its interpreter from the flatbuffer without verifying it: an offset
or vtable that points outside the file, a tensor whose buffer is shorter than its shape, or an
operator index out of range makes it read or write outside the file, and the process dies
(SIGSEGV). So every table, vtable, vector and string the runtime can reach is checked here
first, as flatbuffers' own ``Verifier`` would (tensorflow/lite/schema/schema.fbs, TF 2.14
field ids), and then what the schema cannot say:

* every tensor has a known type and a static shape, its buffer index is in range, and a
  constant's buffer holds exactly shape x type size bytes; quantization parameters fit the
  shape;
* every operator is one of the builtin operators a keyboard_lm step module uses (no custom
  ops, no control flow), with its own options table (or none), as many inputs and outputs as
  its kernel reads, input/output tensor indices in range, constants where the exporter always
  gives constants (axes, splits, slice bounds, k), and it reads only constants, subgraph inputs
  or tensors an earlier operator wrote; it never writes a constant or a tensor another
  operator writes;
* subgraph inputs/outputs and signature tensor maps name tensors of their subgraph;
* sizes are bounded: the count of tables visited, of tensors and operators, and the bytes the
  interpreter would allocate for its non-constant tensors, so a hostile file cannot make the
  load take unbounded time or memory.

Anything else is refused: sparse, variable or variant tensors, external buffers, custom
options, newer-schema fields that hold offsets. A refusal is a ``FlatbufferError`` saying what
is wrong and at which byte; ``model_file`` adds the file's name.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np

#: TensorType -> bytes per element, for the types a keyboard_lm model may hold (no strings,
#: complex, resources, variants or packed int4: their sizes are not shape x a constant).
TYPE_SIZES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1}  # FLOAT32 FLOAT16 INT32 UINT8 INT64 BOOL INT16 INT8
TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 6: "BOOL", 7: "INT16", 9: "INT8"}

#: The builtin operators an exported step module may use (keyboard_lm/export/tflite_export.py converts with builtin ops
#: only): code -> (name, its BuiltinOptions union type or 0 for none, (fewest, most) inputs, (fewest, most)
#: outputs, input positions that may be absent (-1), input positions that must be constants). TFLite's kernels
#: dereference their required inputs without looking (an absent STRIDED_SLICE begin is a SIGSEGV), and the
#: exporter's graphs always give axes, splits, slice bounds and k as constants, so shapes are static.
_MANY = 1 << 16
OPERATORS = {
    0: ("ADD", 11, (2, 2), (1, 1), (), ()), 2: ("CONCATENATION", 10, (1, _MANY), (1, 1), (), ()),
    6: ("DEQUANTIZE", 38, (1, 1), (1, 1), (), ()), 9: ("FULLY_CONNECTED", 8, (2, 3), (1, 1), (2,), ()),
    14: ("LOGISTIC", 0, (1, 1), (1, 1), (), ()), 18: ("MUL", 21, (2, 2), (1, 1), (), ()),
    19: ("RELU", 0, (1, 1), (1, 1), (), ()), 28: ("TANH", 0, (1, 1), (1, 1), (), ()),
    36: ("GATHER", 23, (2, 2), (1, 1), (), ()), 41: ("SUB", 28, (2, 2), (1, 1), (), ()),
    42: ("DIV", 29, (2, 2), (1, 1), (), ()), 45: ("STRIDED_SLICE", 32, (4, 4), (1, 1), (), (1, 2, 3)),
    48: ("TOPK_V2", 34, (2, 2), (2, 2), (), (1,)), 49: ("SPLIT", 35, (2, 2), (1, _MANY), (), (0,)),
    50: ("LOG_SOFTMAX", 36, (1, 1), (1, 1), (), ()), 55: ("MAXIMUM", 39, (2, 2), (1, 1), (), ()),
    61: ("GREATER", 44, (2, 2), (1, 1), (), ()), 64: ("SELECT", 47, (3, 3), (1, 1), (), ()),
    77: ("SHAPE", 55, (1, 1), (1, 1), (), ()), 82: ("REDUCE_MAX", 27, (2, 2), (1, 1), (), (1,)),
    94: ("FILL", 68, (2, 2), (1, 1), (), ()), 101: ("ABS", 78, (1, 1), (1, 1), (), ()),
    102: ("SPLIT_V", 79, (3, 3), (1, _MANY), (), (1, 2)), 123: ("SELECT_V2", 98, (3, 3), (1, 1), (), ()),
    126: ("BATCH_MATMUL", 101, (2, 2), (1, 1), (), ()),
}

#: Field kinds: scalars by size; "off" kinds hold a 32-bit offset to a table, vector or string.
_SCALAR = {"u8": 1, "i8": 1, "bool": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8}
_UNPACK = {kind: struct.Struct(fmt).unpack_from for kind, fmt in (
    ("u8", "<B"), ("i8", "<b"), ("bool", "<B"), ("i16", "<h"), ("u16", "<H"), ("i32", "<i"), ("u32", "<I"),
    ("f32", "<f"), ("i64", "<q"), ("u64", "<Q"))}

#: The builtin options tables of OPERATORS: union type -> (kind, schema default) of each field by id; all scalars.
_OPTIONS = {
    11: [("i8", 0), ("bool", 1)], 10: [("i32", 0), ("i8", 0)], 38: [],
    8: [("i8", 0), ("i8", 0), ("bool", 0), ("bool", 0), ("i8", 0)], 21: [("i8", 0)], 23: [("i32", 0), ("i32", 0)],
    28: [("i8", 0), ("bool", 1)], 29: [("i8", 0)], 32: [("i32", 0)] * 5 + [("bool", 0)], 34: [], 35: [("i32", 0)],
    36: [], 39: [], 44: [], 47: [], 55: [("i8", 0)], 27: [("bool", 0)], 68: [], 78: [], 79: [("i32", 0)], 98: [],
    101: [("bool", 0)] * 3,
}

#: Limits no exported keyboard model comes near (the paper-size CIFG has 3 subgraphs, ~400 tensors,
#: ~110 buffers and under 1 MB of non-constant tensors).
MAX_SUBGRAPHS = 64
MAX_TENSORS = 100_000
MAX_OPERATORS = 100_000
MAX_RANK = 5
#: Bytes of non-constant tensors the interpreter would allocate for one subgraph.
MAX_ACTIVATION_BYTES = 64 << 20


class FlatbufferError(ValueError):
    """The flatbuffer is malformed or holds something the runtime must not be given; says what and where."""


@dataclasses.dataclass(frozen=True)
class Tensor:
    name: str
    type: int
    shape: tuple[int, ...]
    buffer: int
    #: The dimension a per-channel quantization runs along; None for per-tensor or no quantization.
    quantized_dimension: int | None = None


@dataclasses.dataclass(frozen=True)
class Operator:
    code: int
    name: str
    inputs: list[int]  # -1: an absent optional input
    outputs: list[int]
    options: tuple  # the builtin options' fields by id, schema defaults where absent


@dataclasses.dataclass(frozen=True)
class Subgraph:
    name: str
    tensors: list[Tensor]
    inputs: list[int]
    outputs: list[int]
    operators: list[Operator]


@dataclasses.dataclass(frozen=True)
class Signature:
    key: str
    subgraph: int
    inputs: dict[str, int]
    outputs: dict[str, int]


@dataclasses.dataclass(frozen=True)
class TfliteModel:
    """What the checks found: enough for a caller to check its own signatures and shapes."""

    subgraphs: list[Subgraph]
    signatures: dict[str, Signature]
    #: Per buffer, (start, length) of its bytes in the file, or None for an empty buffer.
    buffers: list[tuple[int, int] | None]

    def signature_tensor(self, key: str, side: str, name: str) -> Tensor | None:
        """The tensor that signature ``key`` maps ``name`` to on ``side`` ("inputs"/"outputs"), or None."""
        sig = self.signatures.get(key)
        index = None if sig is None else getattr(sig, side).get(name)
        return None if index is None else self.subgraphs[sig.subgraph].tensors[index]


class _Reader:
    """Bounds-checked little-endian reads of ``data[:end]`` with a budget of tables visited."""

    def __init__(self, data: bytes, end: int):
        self.data, self.end = data, end
        # Work allowed, in tables visited plus elements of vectors and strings read (a buffer's bytes are not
        # read): a legitimate file reaches each table and vector once, and each takes at least a byte, so twice
        # its size is plenty; a file that points many offsets at one big table or vector (a loop or a fan-out)
        # is refused instead of being read again and again.
        self.budget = 2 * end + 1024

    def charge(self, work: int, at: int):
        self.budget -= work
        if self.budget < 0:
            self.fail("the flatbuffer references more data than it holds (offsets in a loop or a shared fan-out)", at)

    def fail(self, what: str, at: int):
        raise FlatbufferError(f"{what} (at byte {at})")

    def scalar(self, kind: str, at: int) -> int | float:
        size = _SCALAR[kind]
        if at < 0 or at + size > self.end:
            self.fail(f"a {size}-byte value runs past the flatbuffer's {self.end} bytes", at)
        return _UNPACK[kind](self.data, at)[0]

    def deref(self, at: int) -> int:
        """The absolute position an unsigned 32-bit offset stored at ``at`` points to."""
        target = at + self.scalar("u32", at)
        if target + 4 > self.end:
            self.fail("an offset points past the end of the flatbuffer", at)
        if target % 4:
            self.fail("an offset points to a misaligned object", at)
        return target

    def table(self, at: int) -> "_Table":
        self.charge(1, at)
        if at % 4:
            self.fail("a misaligned table", at)
        vt = at - self.scalar("i32", at)
        if vt < 0 or vt % 2 or vt + 4 > self.end:
            self.fail("a table's vtable lies outside the flatbuffer", at)
        vt_size, table_size = self.scalar("u16", vt), self.scalar("u16", vt + 2)
        if vt_size < 4 or vt_size % 2 or vt + vt_size > self.end:
            self.fail(f"a vtable of {vt_size} bytes does not fit the flatbuffer", vt)
        if table_size < 4 or at + table_size > self.end:
            self.fail(f"a table of {table_size} bytes runs past the end of the flatbuffer", at)
        return _Table(self, at, vt, vt_size, table_size)

    def vector(self, at: int, elem: int) -> tuple[int, int]:
        """(first element position, count) of the vector whose offset is stored at ``at``."""
        v = self.deref(at)
        n = self.scalar("u32", v)
        if n > (self.end - v - 4) // max(elem, 1):
            self.fail(f"a vector claims {n} elements of {elem} bytes, past the end of the flatbuffer", v)
        if elem > 1 and (v + 4) % min(elem, 8):
            self.fail("a misaligned vector", v)
        return v + 4, n

    def string(self, at: int) -> str:
        start, n = self.vector(at, 1)
        self.charge(n, start)
        if start + n >= self.end or self.data[start + n] != 0:
            self.fail("a string without its terminating zero byte", start)
        raw = bytes(self.data[start:start + n])
        if b"\0" in raw:
            self.fail("a string with a zero byte inside", start)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail("a string that is not UTF-8", start)


class _Table:
    """One table: typed access to its fields by id, each checked to lie inside the table."""

    def __init__(self, r: _Reader, at: int, vt: int, vt_size: int, table_size: int):
        self.r, self.at, self.vt, self.vt_size, self.size = r, at, vt, vt_size, table_size

    def _pos(self, field: int, size: int) -> int | None:
        entry = 4 + 2 * field
        if entry + 2 > self.vt_size:
            return None
        off = self.r.scalar("u16", self.vt + entry)
        if off == 0:
            return None
        if off < 4 or off + size > self.size:
            self.r.fail(f"field {field} lies outside its {self.size}-byte table", self.at)
        return self.at + off

    def only(self, known: int, what: str):
        """Refuse any present field with id >= ``known`` (a newer schema's, which the checks do not cover)."""
        for field in range(known, (self.vt_size - 4) // 2):
            if self.r.scalar("u16", self.vt + 4 + 2 * field):
                self.r.fail(f"{what} has field {field}, which this reader does not know", self.at)

    def has(self, field: int) -> bool:
        return self._pos(field, 1) is not None

    def scalar(self, field: int, kind: str, default=0):
        p = self._pos(field, _SCALAR[kind])
        return default if p is None else self.r.scalar(kind, p)

    def table(self, field: int) -> "_Table | None":
        p = self._pos(field, 4)
        return None if p is None else self.r.table(self.r.deref(p))

    def tables(self, field: int) -> list["_Table"]:
        p = self._pos(field, 4)
        if p is None:
            return []
        start, n = self.r.vector(p, 4)
        return [self.r.table(self.r.deref(start + 4 * i)) for i in range(n)]

    def array(self, field: int, dtype: str) -> np.ndarray:
        """A vector of scalars as a numpy array (empty when absent)."""
        dt = np.dtype(dtype)
        p = self._pos(field, 4)
        if p is None:
            return np.zeros(0, dt)
        start, n = self.r.vector(p, dt.itemsize)
        self.r.charge(n, start)
        return np.frombuffer(self.r.data, dt, n, start)

    def bytes_range(self, field: int) -> tuple[int, int] | None:
        """(start, length) of a [ubyte] vector, its bytes not copied."""
        p = self._pos(field, 4)
        return None if p is None else self.r.vector(p, 1)

    def string(self, field: int) -> str | None:
        p = self._pos(field, 4)
        return None if p is None else self.r.string(p)

    def strings(self, field: int) -> None:
        p = self._pos(field, 4)
        if p is not None:
            start, n = self.r.vector(p, 4)
            for i in range(n):
                self.r.string(start + 4 * i)


def _ints(table: _Table, field: int, low: int, high: int, what: str) -> list[int]:
    """An [int] field whose every value lies in [low, high)."""
    values = table.array(field, "<i4")
    if values.size and (values.min() < low or values.max() >= high):
        bad = int(values[(values < low) | (values >= high)][0])
        table.r.fail(f"{what} names tensor {bad}, outside [{low}, {high})", table.at)
    return [int(v) for v in values]


def _tensor(r: _Reader, t: _Table, where: str, buffers: list[tuple[int, int] | None]) -> Tensor:
    t.only(10, where)
    for field, what in ((5, "a variable tensor"), (6, "a sparse tensor"), (9, "a variant tensor")):
        if t.has(field) and (field != 5 or t.scalar(5, "bool")):
            r.fail(f"{where} is {what}, which a keyboard_lm model does not hold", t.at)
    name = t.string(3) or ""
    kind = t.scalar(1, "i8")
    if kind not in TYPE_SIZES:
        r.fail(f"{where} ({name}) has tensor type {kind}, not one a keyboard_lm model holds", t.at)
    shape = t.array(0, "<i4")
    if shape.size > MAX_RANK or (shape.size and shape.min() < 1):
        r.fail(f"{where} ({name}) has shape {shape.tolist()}: a dimension below 1, or more than {MAX_RANK} dimensions", t.at)
    signature = t.array(7, "<i4")
    if signature.size and (signature.size != shape.size or np.any((signature != shape) & (signature != -1))):
        r.fail(f"{where} ({name}) has shape signature {signature.tolist()} for shape {shape.tolist()}", t.at)
    t.scalar(8, "bool")
    buffer = t.scalar(2, "u32")
    if buffer >= len(buffers):
        r.fail(f"{where} ({name}) names buffer {buffer} of {len(buffers)}", t.at)
    dims = tuple(int(d) for d in shape)
    nbytes = math.prod(dims) * TYPE_SIZES[kind]
    data = buffers[buffer]
    if data is not None and data[1] != nbytes:
        r.fail(f"{where} ({name}) is {TYPE_NAMES[kind]}{list(dims)} ({nbytes} bytes) but its buffer {buffer} "
               f"holds {data[1]} bytes", t.at)
    q, channel_axis = t.table(4), None
    if q is not None:
        q.only(7, f"{where}'s quantization")
        q.array(0, "<f4"), q.array(1, "<f4")
        scale, zero = q.array(2, "<f4"), q.array(3, "<i8")
        if q.scalar(4, "u8") or q.has(5):
            r.fail(f"{where} ({name}) has custom quantization details", q.at)
        axis = q.scalar(6, "i32")
        if scale.size or zero.size:
            channels = dims[axis] if 0 <= axis < len(dims) else -1
            if scale.size != zero.size or scale.size not in (1, channels):
                r.fail(f"{where} ({name}) has {scale.size} scales and {zero.size} zero points for shape {list(dims)} "
                       f"(quantized dimension {axis})", q.at)
            channel_axis = axis if scale.size > 1 else None
    return Tensor(name, kind, dims, buffer, channel_axis)


def _subgraph(r: _Reader, sg: _Table, index: int, codes: list[int], buffers) -> Subgraph:
    sg.only(6, f"subgraph {index}")
    sg.scalar(5, "i32")
    name = sg.string(4) or ""
    where = f"subgraph {index}" + (f" ({name})" if name else "")
    tensor_tables = sg.tables(0)
    if len(tensor_tables) > MAX_TENSORS:
        r.fail(f"{where} has {len(tensor_tables)} tensors, more than {MAX_TENSORS}", sg.at)
    tensors = [_tensor(r, t, f"{where} tensor {i}", buffers) for i, t in enumerate(tensor_tables)]
    n = len(tensors)
    constant = [buffers[t.buffer] is not None for t in tensors]
    activation = sum(math.prod(t.shape) * TYPE_SIZES[t.type] for t, c in zip(tensors, constant) if not c)
    if activation > MAX_ACTIVATION_BYTES:
        r.fail(f"{where}'s non-constant tensors need {activation} bytes, more than {MAX_ACTIVATION_BYTES}", sg.at)
    inputs = _ints(sg, 1, 0, n, f"{where}'s inputs")
    outputs = _ints(sg, 2, 0, n, f"{where}'s outputs")
    written = [False] * n
    for i in inputs:
        if constant[i] or written[i]:
            r.fail(f"{where} input {i} is a constant or listed twice", sg.at)
        written[i] = True
    op_tables = sg.tables(3)
    if len(op_tables) > MAX_OPERATORS:
        r.fail(f"{where} has {len(op_tables)} operators, more than {MAX_OPERATORS}", sg.at)
    operators = []
    for k, op in enumerate(op_tables):
        what = f"{where} operator {k}"
        op.only(14, what)
        code_index = op.scalar(0, "u32")
        if code_index >= len(codes):
            r.fail(f"{what} names operator code {code_index} of {len(codes)}", op.at)
        code = codes[code_index]
        op_name, options_type, (in_low, in_high), (out_low, out_high), optional, constants = OPERATORS[code]
        for field, part in ((5, "custom options"), (7, "mutating variable inputs"), (8, "intermediates"),
                            (9, "large custom options"), (10, "large custom options"), (11, "builtin options 2"),
                            (12, "builtin options 2")):
            if op.has(field):
                r.fail(f"{what} ({op_name}) has {part}, which a keyboard_lm model does not use", op.at)
        op.scalar(6, "i8"), op.scalar(13, "i32")
        kind = op.scalar(3, "u8")
        if kind not in (0, options_type) or (kind == 0 and op.has(4)):
            r.fail(f"{what} ({op_name}) has builtin options of type {kind}, expected {options_type} or none", op.at)
        fields = _OPTIONS[options_type] if options_type else []
        options = op.table(4) if kind else None
        if options is not None:
            options.only(len(fields), f"{what}'s options")
        values = tuple(d if options is None else options.scalar(f, k, d) for f, (k, d) in enumerate(fields))
        ins = _ints(op, 1, -1, n, f"{what} ({op_name}) input")
        outs = _ints(op, 2, 0, n, f"{what} ({op_name}) output")
        if not (in_low <= len(ins) <= in_high and out_low <= len(outs) <= out_high):
            r.fail(f"{what} ({op_name}) has {len(ins)} inputs and {len(outs)} outputs", op.at)
        for position, i in enumerate(ins):
            if i < 0 and position not in optional:
                r.fail(f"{what} ({op_name}) lacks its input {position}", op.at)
            if i >= 0 and not (constant[i] or written[i]):
                r.fail(f"{what} ({op_name}) reads tensor {i} before any operator writes it", op.at)
            if position in constants and (i < 0 or not constant[i]):
                r.fail(f"{what} ({op_name}) input {position} is not a constant", op.at)
        for o in outs:
            if constant[o] or written[o]:
                r.fail(f"{what} ({op_name}) writes tensor {o}, a constant or a tensor already written", op.at)
            written[o] = True
        operators.append(Operator(code, op_name, ins, outs, values))
    for o in outputs:
        if not written[o] and not constant[o]:
            r.fail(f"{where} output {o} is never written", sg.at)
    return Subgraph(name, tensors, inputs, outputs, operators)


def read_model(data: bytes, end: int) -> TfliteModel:
    """Check the TFLite flatbuffer in ``data[:end]`` (``end``: where the appended archive starts).

    Raises FlatbufferError saying what is wrong; returns the tensors, operators and signatures it read.
    Bounded: time linear in ``end``, memory in the few tables a model has.
    """
    if end < 8 or end > len(data):
        raise FlatbufferError(f"a flatbuffer of {end} bytes")
    r = _Reader(data, end)
    model = r.table(r.deref(0))
    model.only(8, "the model")
    version = model.scalar(0, "u32")
    if version != 3:
        r.fail(f"TFLite schema version {version}, this reader reads version 3", model.at)
    model.string(3)
    codes = []
    for i, oc in enumerate(model.tables(1)):
        oc.only(4, f"operator code {i}")
        if oc.has(1):
            r.fail(f"operator code {i} is a custom operator ({oc.string(1)!r})", oc.at)
        oc.scalar(2, "i32")
        code = max(oc.scalar(0, "i8"), oc.scalar(3, "i32"))
        if code not in OPERATORS:
            r.fail(f"operator code {i} is builtin operator {code}, not one a keyboard_lm step module uses", oc.at)
        codes.append(code)
    buffers: list[tuple[int, int] | None] = []
    for i, b in enumerate(model.tables(4)):
        b.only(3, f"buffer {i}")
        if b.scalar(1, "u64") > 1 or b.scalar(2, "u64"):
            r.fail(f"buffer {i} lies outside the flatbuffer (an external buffer)", b.at)
        data_range = b.bytes_range(0)
        buffers.append(data_range if data_range is not None and data_range[1] > 0 else None)
    metadata_buffers = model.array(5, "<i4")
    if metadata_buffers.size and (metadata_buffers.min() < 0 or metadata_buffers.max() >= len(buffers)):
        r.fail("the model's metadata_buffer names a buffer out of range", model.at)
    for i, m in enumerate(model.tables(6)):
        m.only(2, f"metadata {i}")
        m.string(0)
        if m.scalar(1, "u32") >= len(buffers):
            r.fail(f"metadata {i} names buffer {m.scalar(1, 'u32')} of {len(buffers)}", m.at)
    subgraph_tables = model.tables(2)
    if not 1 <= len(subgraph_tables) <= MAX_SUBGRAPHS:
        r.fail(f"the model has {len(subgraph_tables)} subgraphs", model.at)
    subgraphs = [_subgraph(r, sg, i, codes, buffers) for i, sg in enumerate(subgraph_tables)]
    signatures = {}
    for i, s in enumerate(model.tables(7)):
        s.only(5, f"signature {i}")
        s.string(3)
        key = s.string(2) or ""
        index = s.scalar(4, "u32")
        if index >= len(subgraphs) or key in signatures:
            r.fail(f"signature {i} ({key}) names subgraph {index} of {len(subgraphs)} or repeats a key", s.at)
        sub = subgraphs[index]
        maps = []
        for field, allowed in ((0, sub.inputs), (1, sub.outputs)):
            names = {}
            for tm in s.tables(field):
                tm.only(2, f"signature {key}'s tensor map")
                name, tensor = tm.string(0) or "", tm.scalar(1, "u32")
                if tensor not in allowed or name in names:
                    r.fail(f"signature {key} maps {name!r} to tensor {tensor}, not one of its subgraph's "
                           f"{'inputs' if field == 0 else 'outputs'} {allowed}, or twice", tm.at)
                names[name] = tensor
            maps.append(names)
        signatures[key] = Signature(key, index, *maps)
    return TfliteModel(subgraphs, signatures, buffers)

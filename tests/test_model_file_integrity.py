"""A model file cannot crash the process that loads it: checksum, structural checks, bounded load, fuzz.

Real files only: the committed golden models (tests/golden/models, sealed with the checksum the exporter
writes), the real exporter, the real TFLite interpreter. Crafted files are golden models changed at the
byte level and resealed (the checksum recomputed), so what stops them is the structural check, as it
must for a file made on purpose; CRAFTED says what each did to the loader before these checks.
"""

from __future__ import annotations

import gc
import hashlib
import io
import struct
import threading
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.export import model_fuzz
from keyboard_lm.inference import Predictor
from keyboard_lm.inference import tflite_flatbuffer as fb
from keyboard_lm.inference.model_file import (CHECKSUM_PREFIX, MAX_FILE_BYTES, MAX_IDLE_INTERPRETERS, ModelFile,
                                              ModelFileError, end_record, seal)
from keyboard_lm.inference.runtime import interpreter_class
from tests.conftest import REPO

MODELS = REPO / "tests" / "golden" / "models"
CIFG = MODELS / "cifg_dynamic-range.tflite"
GOLDEN = model_fuzz.golden_models()


def _refused(path, match: str) -> str:
    with pytest.raises(ModelFileError, match=match) as e:
        ModelFile.load(str(path))
    message = str(e.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def _unsealed(data: bytes) -> bytes:
    """``data`` as the exporter wrote it before the checksum existed: no zip comment."""
    at = end_record(data)
    body = bytearray(data[:at + 22])
    struct.pack_into("<H", body, at + 20, 0)
    return bytes(body)


# -- the checksum --------------------------------------------------------------------------------------------------

def test_the_exporter_seals_the_file_with_the_sha256_of_every_byte_before_the_comment(small_tflite):
    data = open(small_tflite, "rb").read()
    at = end_record(data)
    comment = data[at + 22:]
    assert comment == CHECKSUM_PREFIX + hashlib.sha256(data[:at + 22]).hexdigest().encode()
    with zipfile.ZipFile(small_tflite) as z:  # any zip reader still reads the archive
        assert z.comment == comment and {"keyboard_lm.json", "vocab.txt"} <= set(z.namelist())
    assert seal(data) == data
    assert ModelFile.load(small_tflite).size_bytes == len(data)


def test_every_committed_golden_model_is_sealed():
    for path in sorted(MODELS.glob("*.tflite")):
        data = path.read_bytes()
        assert seal(data) == data, f"{path.name}: run tests/golden/make_fixtures.py to seal it"


@pytest.mark.parametrize("where", ["flatbuffer header", "weights", "tensor table", "zip entry", "central directory",
                                   "end record"])
def test_one_changed_byte_anywhere_the_checksum_covers_is_refused(tmp_path, where):
    # Before the checksum, a changed weight byte loaded and served suggestions without a word.
    data = bytearray(CIFG.read_bytes())
    g = next(g for g in GOLDEN if g.name == CIFG.name)
    weights = max((r for r in fb.read_model(bytes(data), g.flatbuffer_end).buffers if r), key=lambda r: r[1])
    at = {"flatbuffer header": 9, "weights": weights[0] + weights[1] // 2, "tensor table": g.structure[len(g.structure) // 2],
          "zip entry": g.flatbuffer_end + 40, "central directory": end_record(bytes(data)) - 10,
          "end record": end_record(bytes(data)) + 8}[where]
    data[at] ^= 0x01
    path = tmp_path / "changed.tflite"
    path.write_bytes(bytes(data))
    _refused(path, "checksum mismatch")


@pytest.mark.parametrize("comment", [b"keyboard_lm-sha256:" + b"0" * 63, b"keyboard_lm-sha256:" + b"G" * 64, b"hello",
                                     b"keyboard_lm-SHA256:" + b"0" * 64])
def test_a_damaged_checksum_record_is_refused(tmp_path, comment):
    data = _unsealed(CIFG.read_bytes())
    at = end_record(data)
    path = tmp_path / "comment.tflite"
    path.write_bytes(data[:at + 20] + struct.pack("<H", len(comment)) + comment)
    _refused(path, "checksum record is damaged")


def test_a_file_exported_before_the_checksum_loads_after_the_structural_checks(tmp_path):
    old = tmp_path / "old.tflite"
    old.write_bytes(_unsealed(CIFG.read_bytes()))
    assert Predictor.load(str(old)).suggest("how are") == Predictor.load(str(CIFG)).suggest("how are")
    # ... and is held to the same structural checks as a sealed file.
    data = bytearray(old.read_bytes())
    data[0:4] = struct.pack("<I", len(data) + 1000)
    old.write_bytes(bytes(data))
    _refused(old, "offset points past the end")


# -- crafted files: the checksum holds, the structure does not ------------------------------------------------------

def _ops(data: bytes, name: str = CIFG.name):
    """The structure of golden model ``name``'s bytes (unchanged so far) and where its flatbuffer ends."""
    g = next(g for g in GOLDEN if g.name == name)
    return fb.read_model(data, g.flatbuffer_end), g.flatbuffer_end


def _table(data: bytes, end: int, *path):
    """The position of a table reached from the model by (field, index) steps, and its reader."""
    r = fb._Reader(data, end)
    t = r.table(r.deref(0))
    for field, index in path:
        t = t.tables(field)[index]
    return t


def _vector(data: bytes, end: int, table, field: int) -> int:
    """Position of the first element of vector ``field`` of ``table``."""
    return table.r.vector(table._pos(field, 4), 4)[0]


def _patch(data: bytearray, at: int, value: int, fmt: str = "<i"):
    struct.pack_into(fmt, data, at, value)


def _crafted(name: str) -> tuple[bytes, str]:
    """(sealed bytes of a crafted cifg_dynamic-range model, what the refusal must say)."""
    data = bytearray(CIFG.read_bytes())
    model, end = _ops(bytes(data))
    sub = model.subgraphs[0]
    op_of = {op.name: k for k, op in reversed(list(enumerate(sub.operators)))}
    if name == "strided_slice_without_its_begin":  # TFLite dereferences the absent tensor
        op = _table(bytes(data), end, (2, 0), (3, op_of["STRIDED_SLICE"]))
        _patch(data, _vector(bytes(data), end, op, 1) + 4, -1)
        expected = "STRIDED_SLICE.* lacks its input 1"
    elif name == "log_softmax_of_a_scalar":  # the kernel reads the last dimension of a rank-0 tensor
        scalar = next(i for i, t in enumerate(sub.tensors) if t.shape == () and t.type == 0)
        op = _table(bytes(data), end, (2, 0), (3, op_of["LOG_SOFTMAX"]))
        _patch(data, _vector(bytes(data), end, op, 1), scalar)
        expected = "LOG_SOFTMAX.*a scalar input"
    elif name == "operator_input_out_of_range":
        op = _table(bytes(data), end, (2, 0), (3, op_of["FULLY_CONNECTED"]))
        _patch(data, _vector(bytes(data), end, op, 1), len(sub.tensors) + 1000)
        expected = "names tensor"
    elif name == "root_offset_past_the_end":
        _patch(data, 0, len(data) + 1000)
        expected = "offset points past the end"
    elif name == "vtable_outside_the_file":
        root = struct.unpack_from("<I", data, 0)[0]
        _patch(data, root, -len(data))
        expected = "vtable lies outside"
    elif name == "constant_larger_than_its_buffer":
        k = next(i for i, t in enumerate(sub.tensors) if model.buffers[t.buffer] and len(t.shape) == 2)
        tensor = _table(bytes(data), end, (2, 0), (0, k))
        _patch(data, _vector(bytes(data), end, tensor, 0), sub.tensors[k].shape[0] + 1)
        expected = "but its buffer .* holds"
    elif name == "huge_intermediate_tensor":
        k = next(i for i, t in enumerate(sub.tensors) if not model.buffers[t.buffer] and len(t.shape) == 2
                 and i not in sub.inputs)
        tensor = _table(bytes(data), end, (2, 0), (0, k))
        _patch(data, _vector(bytes(data), end, tensor, 0) + 4, 1 << 30)
        expected = "non-constant tensors need"
    elif name == "operator_code_not_a_step_module_op":
        code = _table(bytes(data), end, (1, 0))
        _patch(data, code._pos(3, 4), 108)  # COS
        expected = "builtin operator 108, not one a keyboard_lm step module uses"
    elif name == "operator_code_index_out_of_range":
        op = next(t for t in _table(bytes(data), end, (2, 0)).tables(3) if t._pos(0, 4) is not None)
        _patch(data, op._pos(0, 4), 99)
        expected = "names operator code 99"
    elif name == "unknown_tensor_type":
        tensor = next(t for t in _table(bytes(data), end, (2, 0)).tables(0) if t._pos(1, 1) is not None)
        _patch(data, tensor._pos(1, 1), 13, "<b")  # RESOURCE
        expected = "tensor type 13"
    elif name == "vector_longer_than_the_file":
        tensor = _table(bytes(data), end, (2, 0), (0, 0))
        _patch(data, _vector(bytes(data), end, tensor, 0) - 4, 1 << 30)
        expected = "claims 1073741824 elements"
    elif name == "signature_names_a_tensor_that_is_no_input":
        tensor_map = next(m for m in _table(bytes(data), end, (7, 0)).tables(0) if m._pos(1, 4) is not None)
        _patch(data, tensor_map._pos(1, 4), sub.outputs[0])
        expected = "not one of its subgraph's inputs"
    else:
        raise AssertionError(name)
    return seal(bytes(data)), expected


#: Each crafted file, and what the loader did with it before these checks (benchmarks/export/model_fuzz.py's worker,
#: the revision before the checksum): a SIGSEGV, an exception other than ModelFileError or a ModelFileError
#: of several lines, or a load (the interpreter ignores an intermediate tensor's declared shape).
CRAFTED = {
    "strided_slice_without_its_begin": "SIGSEGV", "log_softmax_of_a_scalar": "RuntimeError",
    "operator_input_out_of_range": "RuntimeError", "root_offset_past_the_end": "SIGSEGV",
    "vtable_outside_the_file": "ModelFileError of several lines",
    "constant_larger_than_its_buffer": "ModelFileError of several lines", "huge_intermediate_tensor": "loaded",
    "operator_code_not_a_step_module_op": "RuntimeError",
    "operator_code_index_out_of_range": "ModelFileError of several lines", "unknown_tensor_type": "RuntimeError",
    "vector_longer_than_the_file": "SIGSEGV", "signature_names_a_tensor_that_is_no_input": "ValueError",
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_a_crafted_file_with_a_valid_checksum_is_refused_in_one_line(tmp_path, name):
    data, expected = _crafted(name)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    _refused(path, expected)


def test_an_axis_a_kernel_would_check_only_at_run_time_must_be_a_constant(tmp_path):
    # SPLIT_V's axis read from the token input: the graph is well formed, and the interpreter refused
    # it only at invoke, for some tokens (a RuntimeError from a later suggestion). Such inputs must be
    # constants, as the exporter writes them, so the file is refused at load.
    data = bytearray(CIFG.read_bytes())
    model, end = _ops(bytes(data))
    sub = model.subgraphs[1]
    k = next(k for k, op in enumerate(sub.operators) if op.name == "SPLIT_V")
    op = _table(bytes(data), end, (2, 1), (3, k))
    _patch(data, _vector(bytes(data), end, op, 1) + 8, sub.inputs[1] if sub.tensors[sub.inputs[1]].type == 2
           else sub.inputs[0])
    path = tmp_path / "split_axis_from_the_token.tflite"
    path.write_bytes(seal(bytes(data)))
    _refused(path, "SPLIT_V.* input 2 is not a constant")


def test_a_token_outside_the_vocabulary_is_the_callers_error_not_the_files():
    model = ModelFile.load(str(CIFG))
    for bad in (-1, len(model.vocab)):
        with pytest.raises(ValueError, match="outside the vocabulary") as e:
            model.step_full(bad, model.initial_state())
        assert not isinstance(e.value, ModelFileError)


# -- bounded resources ----------------------------------------------------------------------------------------------

def test_a_file_larger_than_any_model_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.tflite"
    with open(path, "wb") as f:
        f.write(CIFG.read_bytes()[:64])
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk, and the loader must not read it all
    _refused(path, "larger than any keyboard model")


def test_an_archive_entry_declaring_a_huge_size_is_refused(tmp_path):
    data = _unsealed(CIFG.read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        start = min(i.header_offset for i in z.infolist())
        files = {n: z.read(n) for n in z.namelist()}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
        z.writestr("bomb.bin", b"\0" * (20 << 20))  # 20 MB of zeros deflate to about 20 KB
    path = tmp_path / "bomb.tflite"
    path.write_bytes(seal(data[:start] + buf.getvalue()))
    _refused(path, "declares more than")


def test_a_step_that_would_cost_more_than_the_work_bound_is_refused(tmp_path, monkeypatch):
    # A file can repeat one big matrix product thousands of times within its size; the bound (about 60 times
    # the paper-size step) is lowered here below the golden model's step (about 19,000 multiply-adds).
    from keyboard_lm.inference import tflite_shapes

    monkeypatch.setattr(tflite_shapes, "MAX_STEP_WORK", 10_000)
    _refused(CIFG, "would cost more than 10000 multiply-adds")


def _fan_out_file(n_subgraphs: int, n_tensors: int) -> bytes:
    """A small flatbuffer whose subgraph entries all point at one subgraph, whose tensor entries all point at one
    tensor: n_subgraphs x n_tensors tensors to read from a few kilobytes, if each reference were followed."""
    b = bytearray(b"\0\0\0\0TFL3")

    def u32(v):
        b.extend(struct.pack("<I", v))

    def point(at, target):  # a uoffset stored at ``at``
        struct.pack_into("<I", b, at, target - at)

    def table(offsets, fields):  # a vtable, then its table (soffset + fields)
        vt = len(b)
        b.extend(struct.pack(f"<HH{len(offsets)}H", 4 + 2 * len(offsets), 4 + 4 * len(fields), *offsets))
        b.extend(b"\0" * (-len(b) % 4))
        at = len(b)
        b.extend(struct.pack("<i", at - vt) + b"".join(struct.pack("<I", f) for f in fields))
        return at

    model = table([4, 0, 8, 0, 12], [3, 0, 0])  # version 3, subgraphs, buffers
    point(0, model)
    point(model + 8, len(b))
    u32(n_subgraphs)
    entries = len(b)
    b.extend(b"\0" * 4 * n_subgraphs)
    point(model + 12, len(b))
    u32(1)
    buffer_entry = len(b)
    u32(0)
    point(buffer_entry, table([], []))  # buffer 0: empty
    subgraph = table([4], [0])  # tensors
    for i in range(n_subgraphs):
        point(entries + 4 * i, subgraph)
    point(subgraph + 4, len(b))
    u32(n_tensors)
    tensor_entries = len(b)
    b.extend(b"\0" * 4 * n_tensors)
    tensor = table([4], [0])  # shape; type FLOAT32 and buffer 0 by default
    for i in range(n_tensors):
        point(tensor_entries + 4 * i, tensor)
    point(tensor + 4, len(b))
    u32(1)
    u32(1)
    return bytes(b)


def test_offsets_that_fan_out_to_one_table_are_refused_not_followed_again_and_again():
    assert len(fb.read_model(_fan_out_file(1, 100), len(_fan_out_file(1, 100))).subgraphs[0].tensors) == 100
    data = _fan_out_file(64, 2000)  # 9 KB naming 128,000 tensors
    with pytest.raises(fb.FlatbufferError, match="references more data than it holds"):
        fb.read_model(data, len(data))


# -- interpreters: a small pool, not one per thread ----------------------------------------------------------------

def _live_interpreters() -> int:
    gc.collect()
    cls = interpreter_class()
    return sum(1 for o in gc.get_objects() if isinstance(o, cls))


def test_short_lived_threads_do_not_each_build_an_interpreter():
    # One interpreter per thread (threading.local) built and freed ~3.7 KB of native memory that was
    # never returned, per thread: a keyboard that answers from a new thread each time grew without bound.
    model = ModelFile.load(str(CIFG))
    before = _live_interpreters()
    for i in range(200):
        t = threading.Thread(target=model.step, args=(4 + i % 100, model.initial_state()))
        t.start()
        t.join()
    assert model.interpreters_built == 1
    # Eight at once: at most eight interpreters, and at most MAX_IDLE_INTERPRETERS kept after.
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(20):
            model.step_full(5, model.initial_state())

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 <= model.interpreters_built <= 8
    assert _live_interpreters() - before <= MAX_IDLE_INTERPRETERS


def test_pooled_interpreters_answer_as_one_interpreter_does():
    model = ModelFile.load(str(CIFG))
    expected = model.step_full(7, model.initial_state())[0]
    results = []

    def work():
        results.append(model.step_full(7, model.initial_state())[0])

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 12 and all(np.array_equal(r, expected) for r in results)


# -- fuzz ----------------------------------------------------------------------------------------------------------

@st.composite
def corrupted(draw):
    """(label, bytes): a golden model damaged one of model_fuzz.KINDS of ways, raw or resealed."""
    g = draw(st.sampled_from(GOLDEN))
    kind = draw(st.sampled_from(model_fuzz.KINDS))
    d = bytearray(g.data)
    n = len(d)
    if kind in ("flip", "structure", "archive"):
        where = {"flip": st.integers(0, n - 1), "structure": st.sampled_from(g.structure),
                 "archive": st.integers(g.flatbuffer_end, n - 1)}[kind]
        for at, x in draw(st.lists(st.tuples(where, st.integers(1, 255)), min_size=1, max_size=8)):
            d[at] ^= x
    elif kind == "word":
        at = draw(st.sampled_from(g.structure)) & ~3
        old = struct.unpack_from("<I", d, at)[0]
        value = draw(st.one_of(st.sampled_from(model_fuzz._WORDS), st.integers(0, 2**32 - 1),
                               st.integers(-16, 16).map(lambda k: (old + k) % 2**32)))
        struct.pack_into("<I", d, at, value)
    elif kind == "truncate":
        del d[draw(st.integers(0, n - 1)):]
    elif kind == "splice":
        src = draw(st.sampled_from(GOLDEN)).data
        size = draw(st.integers(1, 256))
        a, b = draw(st.integers(0, len(src) - size)), draw(st.integers(0, n - size))
        d[b:b + size] = src[a:a + size]
    elif kind == "insert":
        at = draw(st.integers(0, n))
        d[at:at] = draw(st.binary(min_size=1, max_size=16))
    else:
        at = draw(st.integers(0, n - 1))
        del d[at:at + draw(st.integers(1, 16))]
    resealed = draw(st.booleans())
    data = model_fuzz.reseal(bytes(d)) if resealed else bytes(d)
    return f"{g.name} {kind} {'resealed' if resealed else 'raw'}", data


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=corrupted())
def test_fuzz_corrupted_models_load_or_raise_model_file_error(tmp_path, case):
    """In this process: the subprocess batch below shows no variant kills a process, so this one can shrink."""
    label, data = case
    path = tmp_path / "fuzzed.tflite"
    path.write_bytes(data)
    try:
        model = ModelFile.load(str(path))
    except ModelFileError as e:
        assert str(e).startswith(f"{path}: ") and "\n" not in str(e), (label, str(e))
        return
    # A file that loads serves: a step of each signature, from a fresh state.
    model.step(4, model.initial_state())
    model.step_full(4, model.initial_state())
    if "raw" in label:
        assert any(data == g.data for g in GOLDEN), f"{label}: a changed file loaded although its checksum differs"


@pytest.mark.heavy
def test_fuzz_batch_in_a_subprocess_never_crashes_or_hangs(tmp_path):
    """1,000 variants (raw and resealed: 2,000 loads) in a worker process: a SIGSEGV or a hang would be seen."""
    worker = model_fuzz.python_worker(REPO, timeout=60)
    outcomes, bad = {}, []
    try:
        for i, (name, kind, data) in enumerate(model_fuzz.variants(GOLDEN, 1000, seed=70)):
            for mode, blob in (("raw", data), ("resealed", model_fuzz.reseal(data))):
                path = tmp_path / f"{i}-{kind}-{mode}.tflite"
                path.write_bytes(blob)
                outcome, detail = worker.load(str(path))
                path.unlink()
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if outcome not in ("loaded", "refused") or (mode == "raw" and outcome == "loaded"):
                    bad.append((i, name, kind, mode, outcome, detail))
    finally:
        worker.close()
    assert not bad, bad[:10]
    assert outcomes.get("refused", 0) >= 1000, outcomes
    print(f"model fuzz batch: {outcomes}")

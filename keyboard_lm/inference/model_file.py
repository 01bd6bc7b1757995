"""A keyboard_lm .tflite file: checksum, structure, interpreters, signatures, vocabulary and metadata.

The file is a TFLite flatbuffer followed by a zip archive of associated files
(``keyboard_lm.json``, ``vocab.txt``); see ``keyboard_lm/export/tflite_export.py``. The
archive's end-of-central-directory comment holds ``keyboard_lm-sha256:<64 hex>``,
the sha256 of every byte before that comment (flatbuffer, zip entries, central
directory and the end record itself), written by the exporter.

Loading checks, in this order, before any TFLite interpreter sees the bytes: the
size (at most MAX_FILE_BYTES), the TFL3 identifier, the checksum, the archive and
its metadata, then every offset, table, tensor and operator of the flatbuffer
(``tflite_flatbuffer.read_model``), every operator's output shapes and types
(``tflite_shapes.check_shapes``) and the step signatures against the metadata;
last, an interpreter is built and runs one step of each signature. Every problem is one
ModelFileError naming the file. A file without a checksum comment (exported
before the checksum existed) is accepted after the same structural checks; any
other comment, or a digest that differs, is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import struct
import threading
import zipfile
import zlib

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.ranker import PhraseGate
from keyboard_lm.inference.runtime import interpreter_class
from keyboard_lm.inference.tflite_flatbuffer import FlatbufferError, read_model
from keyboard_lm.inference.tflite_shapes import check_shapes
from keyboard_lm.text.phrase_table import PhraseTable
from keyboard_lm.text.spec import SPECIAL_TOKENS, TEXT_SPEC_VERSION
from keyboard_lm.text.vocabulary import Vocabulary

FILE_FORMAT = "keyboard_lm.tflite/1"
METADATA_FILE = "keyboard_lm.json"
VOCAB_FILE = "vocab.txt"
#: The phrase table (``keyboard_lm.text.phrase_table``), present when the metadata has a "phrases" object.
PHRASES_FILE = "phrases.bin"
#: The zip comment that holds the checksum: this prefix, then 64 lowercase hex digits.
CHECKSUM_PREFIX = b"keyboard_lm-sha256:"
CHECKSUM_LENGTH = len(CHECKSUM_PREFIX) + 64
#: Larger than any keyboard model (the paper-size CIFG is 1.4 MB; the budget defaults to 1.4 MiB).
MAX_FILE_BYTES = 256 << 20
#: The archive's entries, uncompressed (a 10,000-word vocabulary is about 80 KB).
MAX_ENTRY_BYTES = 16 << 20
#: Interpreters kept for the next call once a call returns its own; more may run at once, and are
#: dropped after. Interpreters are built from the same bytes, so any of them gives the same answers.
MAX_IDLE_INTERPRETERS = 4

_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_CHECKSUM = re.compile(re.escape(CHECKSUM_PREFIX) + b"[0-9a-f]{64}")
#: What Python's zipfile, zlib and json raise on a damaged archive.
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, KeyError, ValueError, EOFError, NotImplementedError,
                   RuntimeError, OverflowError, struct.error, RecursionError, OSError)


class ModelFileError(ConfigError):
    """A .tflite file that is missing, corrupt, foreign or lacks its vocabulary."""


def end_record(data: bytes) -> int | None:
    """Position of the zip end-of-central-directory record whose comment ends exactly at the end of ``data``."""
    low = max(0, len(data) - _EOCD_SIZE - 0xFFFF)
    at = data.rfind(_EOCD, low)
    while at >= 0:
        if at + _EOCD_SIZE <= len(data) and at + _EOCD_SIZE + struct.unpack_from("<H", data, at + 20)[0] == len(data):
            return at
        at = data.rfind(_EOCD, low, at)
    return None


def seal(data: bytes) -> bytes:
    """``data`` (flatbuffer + zip) with its zip comment set to the checksum of every byte before the comment.

    What the exporter writes last; a file sealed again gets the same bytes.
    """
    at = end_record(data)
    if at is None:
        raise ValueError("no zip end-of-central-directory record at the end of the data")
    body = bytearray(data[:at + _EOCD_SIZE])
    struct.pack_into("<H", body, at + 20, CHECKSUM_LENGTH)
    return bytes(body) + CHECKSUM_PREFIX + hashlib.sha256(body).hexdigest().encode("ascii")


def check_checksum(path: str, data: bytes) -> bool:
    """Verify the checksum comment of ``data``; True if it has one, False for a file exported without one.

    Raises ModelFileError naming ``path`` when the archive's end record is missing, the comment is not
    a checksum, or the digest differs.
    """
    at = end_record(data)
    if at is None:
        raise ModelFileError(f"{path}: the model has no readable embedded vocabulary/metadata (no zip end record); "
                             "the file is truncated or was not exported by keyboard-lm export")
    comment = data[at + _EOCD_SIZE:]
    if not comment:
        return False
    if not _CHECKSUM.fullmatch(comment):
        raise ModelFileError(f"{path}: the model's checksum record is damaged ({comment[:40]!r}); "
                             "the file is corrupt: export or copy it again")
    expected = comment[len(CHECKSUM_PREFIX):].decode("ascii")
    actual = hashlib.sha256(memoryview(data)[:at + _EOCD_SIZE]).hexdigest()
    if actual != expected:
        raise ModelFileError(f"{path}: checksum mismatch (sha256 {actual[:12]}..., the file says {expected[:12]}...): "
                             "the file was damaged or modified after export; export or copy it again")
    return True


def _one_line(e: Exception) -> str:
    """TFLite's error text (several lines, one per failing node) as one line."""
    return " ".join(str(e).split())[:400]


def _int_field(path: str, meta: dict, key: str, low: int = 1, high: int = 1 << 31):
    value = meta.get(key)
    if type(value) is not int or not low <= value < high:
        raise ModelFileError(f"{path}: the model's metadata has {key} = {str(value)[:40]!r}, not an integer in "
                             f"[{low}, {high})")
    return value


def _read_archive(path: str, data: bytes) -> tuple[dict, str, int, bytes | None]:
    """(metadata, vocabulary text, where the archive starts, the phrase table's bytes or None) of the zip
    appended to the flatbuffer."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            names = {i.filename for i in infos}
            if METADATA_FILE not in names or VOCAB_FILE not in names:
                raise ModelFileError(f"{path}: the model has no embedded vocabulary/metadata "
                                     f"(not exported by keyboard-lm export)")
            too_big = [i.filename for i in infos if i.file_size > MAX_ENTRY_BYTES]
            if too_big:
                raise ModelFileError(f"{path}: the embedded {too_big[0]} declares more than {MAX_ENTRY_BYTES} bytes")
            meta = json.loads(z.read(METADATA_FILE).decode("utf-8"))
            vocab_text = z.read(VOCAB_FILE).decode("utf-8")
            phrases = None
            if isinstance(meta, dict) and meta.get("phrases") is not None:
                if PHRASES_FILE not in names:
                    raise ModelFileError(f"{path}: the metadata describes a phrase table but the file has no "
                                         f"{PHRASES_FILE}")
                phrases = z.read(PHRASES_FILE)
            start = min(i.header_offset for i in infos)
    except ModelFileError:
        raise
    except _ARCHIVE_ERRORS as e:
        raise ModelFileError(f"{path}: the model has no readable embedded vocabulary/metadata "
                             f"({type(e).__name__}: {str(e)[:80]}); the file is truncated or was not exported "
                             f"by keyboard-lm export") from None
    if not isinstance(meta, dict):
        raise ModelFileError(f"{path}: the model's metadata is not a JSON object")
    if not 8 <= start <= len(data):
        raise ModelFileError(f"{path}: the embedded archive starts at byte {start}, outside the file")
    return meta, vocab_text, start, phrases


def _read_phrases(path: str, meta: dict, data: bytes | None, vocab_size: int):
    """(PhraseTable, PhraseGate) of the file, or (None, None) without a table; ModelFileError naming the file."""
    info = meta.get("phrases")
    if info is None or data is None:
        return None, None
    where = f"{path}!{PHRASES_FILE}"
    if not isinstance(info, dict) or info.get("sha256") != hashlib.sha256(data).hexdigest():
        raise ModelFileError(f"{where}: the phrase table does not match the metadata's sha256; the file is damaged")
    try:
        return PhraseTable.from_bytes(data, vocab_size, where), PhraseGate.from_dict(info.get("gate"), where)
    except ConfigError as e:
        raise ModelFileError(str(e)) from None


def _check_metadata(path: str, meta: dict) -> None:
    """The metadata fields this module and the predictor read, with the types they need."""
    if meta.get("format") != FILE_FORMAT:
        raise ModelFileError(f"{path}: unknown model file format {str(meta.get('format'))[:40]!r} "
                             f"(expected {FILE_FORMAT!r})")
    if meta.get("text_spec") != TEXT_SPEC_VERSION:
        raise ModelFileError(f"{path}: text spec {str(meta.get('text_spec'))[:40]!r}, this version reads "
                             f"{TEXT_SPEC_VERSION!r}")
    for key in ("state_size", "top_k", "vocab_size"):
        _int_field(path, meta, key)
    if "seq_len" in meta:
        _int_field(path, meta, "seq_len")
    model = meta.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("model_type"), str):
        raise ModelFileError(f"{path}: the model's metadata has no model description")
    _int_field(path, meta if meta.get("embedding_dim") else model, "embedding_dim")
    for key in ("signatures", "special_tokens"):
        if not isinstance(meta.get(key), dict):
            raise ModelFileError(f"{path}: the model's metadata has no {key} object")
    for key in ("split", "data"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise ModelFileError(f"{path}: the model's metadata {key} is not an object")


#: The signatures a keyboard_lm model file has: name -> ({input: (type, shape)}, {output: (type, shape)}),
#: shapes in terms of S (state size), K (top_k), V (vocabulary size) and D (embedding size). 0 = FLOAT32, 2 = INT32.
SIGNATURES = {
    "step": ({"token": (2, ("1",)), "state": (0, ("1", "S"))},
             {"top_ids": (2, ("1", "K")), "top_log_probs": (0, ("1", "K")), "state": (0, ("1", "S"))}),
    "step_full": ({"token": (2, ("1",)), "state": (0, ("1", "S"))},
                  {"log_probs": (0, ("1", "V")), "state": (0, ("1", "S"))}),
    "step_personal": ({"token": (2, ("1",)), "token_weight": (0, ("1", "1")), "embedding": (0, ("1", "D")),
                       "state": (0, ("1", "S"))},
                      {"logits": (0, ("1", "V")), "output": (0, ("1", "D")), "state": (0, ("1", "S"))}),
}


def _check_signatures(path: str, data: bytes, flatbuffer_end: int, sizes: dict, personal: bool) -> None:
    """Check the flatbuffer's structure and shapes, then that each signature has the tensors, types and shapes of a step."""
    try:
        model = read_model(data, flatbuffer_end)
        check_shapes(model, data)
    except FlatbufferError as e:
        raise ModelFileError(f"{path}: the TFLite flatbuffer is malformed: {e}") from None
    for key in ("step", "step_full", "step_personal") if personal else ("step", "step_full"):
        sig = model.signatures.get(key)
        if sig is None:
            raise ModelFileError(f"{path}: the model has no {key} signature (not exported by keyboard-lm export)")
        inputs, outputs = SIGNATURES[key]
        if set(sig.inputs) != set(inputs) or set(sig.outputs) != set(outputs):
            raise ModelFileError(f"{path}: signature {key} has inputs {sorted(sig.inputs)} and outputs "
                                 f"{sorted(sig.outputs)}, expected {sorted(inputs)} and {sorted(outputs)}")
        for side, expected in (("inputs", inputs), ("outputs", outputs)):
            for name, (kind, shape) in expected.items():
                want = tuple(int(sizes.get(d, d)) for d in shape)
                t = model.signature_tensor(key, side, name)
                if t.type != kind or t.shape != want:
                    raise ModelFileError(f"{path}: signature {key} {name} is type {t.type} shape {list(t.shape)}, "
                                         f"expected type {kind} shape {list(want)} (from the model's metadata)")


class ModelFile:
    """A loaded model: ``step``/``step_full`` over an explicit state vector.

    Interpreters are not thread-safe, so each call takes one from a small pool and gives it
    back (they share the file's bytes); a ``ModelFile`` may be used from many threads, and
    short-lived threads cost no interpreter each.
    """

    def __init__(self, path: str, data: bytes, meta: dict, vocab: Vocabulary, runtime: str | None, *,
                 flatbuffer_end: int | None = None, phrases_data: bytes | None = None):
        _check_metadata(path, meta)
        self.path = path
        self.meta = meta
        self.vocab = vocab
        self.state_size = int(meta["state_size"])
        self.top_k = int(meta["top_k"])
        #: Inputs per training chunk; sessions restart the state after this many (see predictor.py).
        self.seq_len = int(meta.get("seq_len", 20))
        self._data = data
        #: sha256 of the file's bytes: what a char encoder and a personal state file are tied to.
        self.fingerprint = hashlib.sha256(data).hexdigest()
        #: D, the tied embedding size (an input embedding for step_embedding has this many floats).
        self.embedding_dim = int(meta.get("embedding_dim") or meta["model"]["embedding_dim"])
        #: Files exported before personal words existed have no step_personal signature.
        self.has_personal_signatures = "step_personal" in meta["signatures"]
        if flatbuffer_end is None:
            _, _, flatbuffer_end, phrases_data = _read_archive(path, data)
        #: The phrase table and its mixture gate (``keyboard_lm.inference.ranker``), or None: the model alone.
        self.phrases, self.phrase_gate = _read_phrases(path, meta, phrases_data, len(vocab))
        sizes = {"S": self.state_size, "K": self.top_k, "V": len(vocab), "D": self.embedding_dim}
        _check_signatures(path, data, flatbuffer_end, sizes, self.has_personal_signatures)
        self._one, self._zero = np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32)
        self._zeros = np.zeros((1, self.embedding_dim), np.float32)
        self._runtime = runtime
        self._idle: list[list] = []
        self._lock = threading.Lock()
        #: How many TFLite interpreters this model has built (bounded by the calls running at once, not by threads).
        self.interpreters_built = 0
        self._trial()  # fail now, naming the file, if the interpreter cannot build or run it

    @classmethod
    def load(cls, path: str, runtime: str | None = None) -> "ModelFile":
        """Read and check ``path``; every problem is a ModelFileError naming the file."""
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size > MAX_FILE_BYTES:
                    raise ModelFileError(f"{path}: {size} bytes, larger than any keyboard model "
                                         f"({MAX_FILE_BYTES} at most); not a model file")
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise ModelFileError(f"{path}: cannot read the model file: {e.strerror}") from None
        if len(data) > MAX_FILE_BYTES:
            raise ModelFileError(f"{path}: larger than any keyboard model ({MAX_FILE_BYTES} bytes at most)")
        if len(data) < 8 or data[4:8] != b"TFL3":
            raise ModelFileError(f"{path}: not a TFLite model (no TFL3 identifier); truncated or foreign file")
        check_checksum(path, data)
        meta, vocab_text, flatbuffer_end, phrases_data = _read_archive(path, data)
        _check_metadata(path, meta)
        try:
            vocab = Vocabulary.from_text(vocab_text, source=f"{path}!vocab.txt")
        except ConfigError as e:
            raise ModelFileError(str(e)) from None
        if len(vocab) != meta.get("vocab_size") or vocab.fingerprint() != meta.get("vocab_sha256"):
            raise ModelFileError(f"{path}: the embedded vocabulary does not match the model's metadata")
        sp = SPECIAL_TOKENS
        if meta["special_tokens"].get("oov") != [sp.oov, sp.oov_id]:
            raise ModelFileError(f"{path}: special tokens differ from this version's")
        return cls(path, data, meta, vocab, runtime, flatbuffer_end=flatbuffer_end, phrases_data=phrases_data)

    def _build(self) -> list:
        """A new interpreter's signature runners: [step, step_full(, step_personal)]."""
        try:
            # One thread per interpreter: a keyboard serves one suggestion at a time.
            interpreter = interpreter_class(self._runtime)(model_content=self._data, num_threads=1)
            runners = [interpreter.get_signature_runner("step"), interpreter.get_signature_runner("step_full")]
            if self.has_personal_signatures:
                runners.append(interpreter.get_signature_runner("step_personal"))
        except (ValueError, RuntimeError) as e:
            raise ModelFileError(f"{self.path}: the TFLite interpreter cannot load the model: {_one_line(e)}") from None
        with self._lock:
            self.interpreters_built += 1
        return runners

    @contextlib.contextmanager
    def _runners(self):
        """An interpreter's runners for the length of one call, taken from the pool and given back.

        The interpreter checks what the flatbuffer cannot say (kernel preconditions such as an
        axis in range); a failure there is the file's, so it is a ModelFileError naming it.
        """
        with self._lock:
            runners = self._idle.pop() if self._idle else None
        if runners is None:
            runners = self._build()
        try:
            yield runners
        except RuntimeError as e:
            raise ModelFileError(f"{self.path}: the TFLite interpreter cannot run the model: {_one_line(e)}") from None
        finally:
            with self._lock:
                if len(self._idle) < MAX_IDLE_INTERPRETERS:
                    self._idle.append(runners)

    def _trial(self) -> None:
        """One step through every signature from the initial state; the outputs must have the metadata's shapes."""
        token, state = np.array([SPECIAL_TOKENS.bos_id], np.int32), self.initial_state()
        s, k, v, d = self.state_size, self.top_k, len(self.vocab), self.embedding_dim
        with self._runners() as runners:
            try:
                outs = [runners[0](token=token, state=state), runners[1](token=token, state=state)]
                expected = [{"top_ids": (np.int32, (1, k)), "top_log_probs": (np.float32, (1, k)),
                             "state": (np.float32, (1, s))},
                            {"log_probs": (np.float32, (1, v)), "state": (np.float32, (1, s))}]
                if self.has_personal_signatures:
                    outs.append(runners[2](token=token, token_weight=self._one, embedding=self._zeros, state=state))
                    expected.append({"logits": (np.float32, (1, v)), "output": (np.float32, (1, d)),
                                     "state": (np.float32, (1, s))})
            except ValueError as e:
                raise ModelFileError(f"{self.path}: the TFLite interpreter cannot run the model: {_one_line(e)}") from None
        for out, want in zip(outs, expected):
            for name, (dtype, shape) in want.items():
                got = out.get(name)
                if got is None or got.dtype != dtype or got.shape != shape:
                    raise ModelFileError(f"{self.path}: the model computes {name} as "
                                         f"{None if got is None else (str(got.dtype), got.shape)}, "
                                         f"expected {(np.dtype(dtype).name, shape)} from its metadata")

    def initial_state(self) -> np.ndarray:
        return np.zeros((1, self.state_size), np.float32)

    def _token(self, token: int) -> np.ndarray:
        """``token`` as the signatures' input; ValueError (the caller's error, not the file's) outside the vocabulary."""
        if not 0 <= token < len(self.vocab):
            raise ValueError(f"token id {token} is outside the vocabulary [0, {len(self.vocab)})")
        return np.array([token], np.int32)

    def step(self, token: int, state: np.ndarray):
        """(top ids [K], top log-probs [K], new state) after ``token``; specials excluded.

        Ranked in the graph (TFLite's TOPK_V2): log-prob descending, ties by id ascending. The
        state and log-probs are the ones ``step_full`` returns for the same input, bit for bit.
        """
        with self._runners() as runners:
            out = runners[0](token=self._token(token), state=state)
        return out["top_ids"][0], out["top_log_probs"][0], out["state"]

    def step_full(self, token: int, state: np.ndarray):
        """(log-probs [V], new state) after ``token``."""
        with self._runners() as runners:
            out = runners[1](token=self._token(token), state=state)
        return out["log_probs"][0], out["state"]

    def require_personal_signatures(self) -> None:
        """Raise ModelFileError naming the file unless it has the ``step_personal`` signature personal words need."""
        if not self.has_personal_signatures:
            raise ModelFileError(f"{self.path}: the model has no step_personal signature (exported before personal "
                                 "words existed); re-export the run with this version's keyboard-lm export")

    def _step_personal(self, **inputs):
        self.require_personal_signatures()
        with self._runners() as runners:
            return runners[2](**inputs)

    def step_hidden(self, token: int, state: np.ndarray):
        """(vocabulary logits [V], output [D], new state) after ``token`` (personal words)."""
        out = self._step_personal(token=self._token(token), token_weight=self._one, embedding=self._zeros,
                                  state=state)
        return out["logits"][0], out["output"][0], out["state"]

    def step_embedding(self, embedding: np.ndarray, state: np.ndarray):
        """As ``step_hidden``, with an input embedding [D] in place of a token's row (a personal word)."""
        x = np.asarray(embedding, np.float32).reshape(1, self.embedding_dim)
        out = self._step_personal(token=np.zeros(1, np.int32), token_weight=self._zero, embedding=x, state=state)
        return out["logits"][0], out["output"][0], out["state"]

    def predict_log_probs(self, x: np.ndarray) -> np.ndarray:
        """[B, T] ids -> [B, T, V] log-probs, each row from a fresh state (for evaluation)."""
        x = np.asarray(x)
        out = np.empty((*x.shape, len(self.vocab)), np.float32)
        for b in range(x.shape[0]):
            state = self.initial_state()
            for t in range(x.shape[1]):
                out[b, t], state = self.step_full(int(x[b, t]), state)
        return out

    @property
    def size_bytes(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ModelFile({os.path.basename(self.path)!r}, {self.meta['model']['model_type']}, V={len(self.vocab)})"

"""A keyboard_lm .tflite file: interpreter, signatures, vocabulary and metadata.

The file is a TFLite flatbuffer followed by a zip archive of associated files
(``keyboard_lm.json``, ``vocab.txt``); see ``export/tflite_export.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import zipfile

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.runtime import interpreter_class
from keyboard_lm.text.spec import SPECIAL_TOKENS, TEXT_SPEC_VERSION
from keyboard_lm.text.vocabulary import Vocabulary

FILE_FORMAT = "keyboard_lm.tflite/1"
METADATA_FILE = "keyboard_lm.json"
VOCAB_FILE = "vocab.txt"


class ModelFileError(ConfigError):
    """A .tflite file that is missing, corrupt, foreign or lacks its vocabulary."""


class ModelFile:
    """A loaded model: ``step``/``step_full`` over an explicit state vector.

    Interpreters are not thread-safe, so each thread gets its own (they share
    the file's bytes); a ``ModelFile`` may be used from many threads.
    """

    def __init__(self, path: str, data: bytes, meta: dict, vocab: Vocabulary, runtime: str | None):
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
        self.has_personal_signatures = "step_personal" in meta.get("signatures", {})
        self._one, self._zero = np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32)
        self._zeros = np.zeros((1, self.embedding_dim), np.float32)
        self._runtime = runtime
        self._local = threading.local()
        self._runners()  # fail now, naming the file, if the interpreter cannot run it

    @classmethod
    def load(cls, path: str, runtime: str | None = None) -> "ModelFile":
        """Read and check ``path``; every problem is a ModelFileError naming the file."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelFileError(f"{path}: cannot read the model file: {e.strerror}") from None
        if len(data) < 8 or data[4:8] != b"TFL3":
            raise ModelFileError(f"{path}: not a TFLite model (no TFL3 identifier); truncated or foreign file")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                names = set(z.namelist())
                if METADATA_FILE not in names or VOCAB_FILE not in names:
                    raise ModelFileError(f"{path}: the model has no embedded vocabulary/metadata "
                                         f"(not exported by keyboard-lm export)")
                meta = json.loads(z.read(METADATA_FILE).decode("utf-8"))
                vocab_text = z.read(VOCAB_FILE).decode("utf-8")
        except (zipfile.BadZipFile, KeyError, ValueError, EOFError) as e:
            raise ModelFileError(f"{path}: the model has no readable embedded vocabulary/metadata ({e}); "
                                 f"the file is truncated or was not exported by keyboard-lm export") from None
        if meta.get("format") != FILE_FORMAT:
            raise ModelFileError(f"{path}: unknown model file format {meta.get('format')!r} (expected {FILE_FORMAT!r})")
        if meta.get("text_spec") != TEXT_SPEC_VERSION:
            raise ModelFileError(f"{path}: text spec {meta.get('text_spec')!r}, this version reads {TEXT_SPEC_VERSION!r}")
        try:
            vocab = Vocabulary.from_text(vocab_text, source=f"{path}!vocab.txt")
        except ConfigError as e:
            raise ModelFileError(str(e)) from None
        if len(vocab) != meta.get("vocab_size") or vocab.fingerprint() != meta.get("vocab_sha256"):
            raise ModelFileError(f"{path}: the embedded vocabulary does not match the model's metadata")
        sp = SPECIAL_TOKENS
        if meta.get("special_tokens", {}).get("oov") != [sp.oov, sp.oov_id]:
            raise ModelFileError(f"{path}: special tokens differ from this version's")
        return cls(path, data, meta, vocab, runtime)

    def _runners(self):
        runners = getattr(self._local, "runners", None)
        if runners is None:
            try:
                # One thread per interpreter: a keyboard serves one suggestion at a time.
                interpreter = interpreter_class(self._runtime)(model_content=self._data, num_threads=1)
                runners = [interpreter.get_signature_runner("step"), interpreter.get_signature_runner("step_full")]
                if self.has_personal_signatures:
                    runners.append(interpreter.get_signature_runner("step_personal"))
            except (ValueError, RuntimeError) as e:
                raise ModelFileError(f"{self.path}: the TFLite interpreter cannot load the model: {e}") from None
            self._local.runners = runners
        return runners

    def initial_state(self) -> np.ndarray:
        return np.zeros((1, self.state_size), np.float32)

    def step(self, token: int, state: np.ndarray):
        """(top ids [K], top log-probs [K], new state) after ``token``; specials excluded.

        Ranked in the graph (TFLite's TOPK_V2): log-prob descending, ties by id ascending. The
        state and log-probs are the ones ``step_full`` returns for the same input, bit for bit.
        """
        out = self._runners()[0](token=np.array([token], np.int32), state=state)
        return out["top_ids"][0], out["top_log_probs"][0], out["state"]

    def step_full(self, token: int, state: np.ndarray):
        """(log-probs [V], new state) after ``token``."""
        out = self._runners()[1](token=np.array([token], np.int32), state=state)
        return out["log_probs"][0], out["state"]

    def require_personal_signatures(self) -> None:
        """Raise ModelFileError naming the file unless it has the ``step_personal`` signature personal words need."""
        if not self.has_personal_signatures:
            raise ModelFileError(f"{self.path}: the model has no step_personal signature (exported before personal "
                                 "words existed); re-export the run with this version's keyboard-lm export")

    def _personal_runner(self):
        self.require_personal_signatures()
        return self._runners()[2]

    def step_hidden(self, token: int, state: np.ndarray):
        """(vocabulary logits [V], output [D], new state) after ``token`` (personal words)."""
        out = self._personal_runner()(token=np.array([token], np.int32), token_weight=self._one,
                                      embedding=self._zeros, state=state)
        return out["logits"][0], out["output"][0], out["state"]

    def step_embedding(self, embedding: np.ndarray, state: np.ndarray):
        """As ``step_hidden``, with an input embedding [D] in place of a token's row (a personal word)."""
        x = np.asarray(embedding, np.float32).reshape(1, self.embedding_dim)
        out = self._personal_runner()(token=np.zeros(1, np.int32), token_weight=self._zero, embedding=x, state=state)
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

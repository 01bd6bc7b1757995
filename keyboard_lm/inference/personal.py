"""Per-user personal vocabulary and OOV adapter, on device only (Shenoy & Nguyen). No TensorFlow.

Shenoy & Nguyen: the user's top-n OOV words (n <= 1000) are embedded by the
char encoder, passed through a residual MLP adapter trained only on that
user's text with the global model frozen, and their logits (adapted
embedding . model output) are concatenated with the vocabulary logits before
the softmax. This state lives in the user's Session and its own file; nothing
here sends it anywhere.
"""
from __future__ import annotations

import io
import os

import numpy as np

from keyboard_lm.errors import ConfigError

MAX_PERSONAL_WORDS = 1000
STATE_FORMAT = "keyboard_lm-personal-1"


class PersonalState:
    """Personal words, their char-encoder embeddings and a residual adapter d -> hidden -> d.

    The adapter's output layer starts at zero, so an untrained adapter returns
    the zero-shot char-encoder embeddings unchanged.
    """

    def __init__(self, fingerprint: str, embedding_dim: int, hidden: int = 128, seed: int = 0,
                 per_word: bool = False):
        if not fingerprint:
            raise ConfigError("personal state needs the model fingerprint it belongs to")
        self.fingerprint = fingerprint
        self.words: list[str] = []
        self.base = np.zeros((0, embedding_dim), np.float32)  # [n, d] char-encoder embeddings
        rng = np.random.default_rng(seed)
        self.w1 = (rng.standard_normal((embedding_dim, hidden)) / np.sqrt(embedding_dim)).astype(np.float32)
        self.b1 = np.zeros(hidden, np.float32)
        self.w2 = np.zeros((hidden, embedding_dim), np.float32)
        self.b2 = np.zeros(embedding_dim, np.float32)
        #: per_word: besides the shared MLP, each personal word gets its own embedding offset and
        #: logit bias (zero until trained), for words whose spelling says little about their use.
        self.per_word = per_word
        self.offset = np.zeros((0, embedding_dim), np.float32)  # [n, d]
        self.bias = np.zeros(0, np.float32)  # [n]

    def add_words(self, words, embeddings: np.ndarray) -> None:
        """Add words with their char-encoder embeddings [len(words), d]; refuses above MAX_PERSONAL_WORDS."""
        words = list(words)
        embeddings = np.asarray(embeddings, np.float32)
        if embeddings.shape != (len(words), self.base.shape[1]):
            raise ConfigError(f"personal embeddings have shape {embeddings.shape}, expected ({len(words)}, {self.base.shape[1]})")
        new = [(w, e) for w, e in zip(words, embeddings) if w not in self.words]
        for i, (w, _) in enumerate(new):
            if not isinstance(w, str) or not w.strip():
                raise ConfigError(f"personal word {i} is empty or whitespace: {w!r}")
        if len(self.words) + len(new) > MAX_PERSONAL_WORDS:
            raise ConfigError(f"{len(self.words)} + {len(new)} personal words exceed the cap of {MAX_PERSONAL_WORDS}; "
                              "nothing was added (pass the user's most frequent words first)")
        if new:
            self.words += [w for w, _ in new]
            self.base = np.concatenate([self.base, np.stack([e for _, e in new])])
            self.offset = np.concatenate([self.offset, np.zeros((len(new), self.base.shape[1]), np.float32)])
            self.bias = np.concatenate([self.bias, np.zeros(len(new), np.float32)])
            self._adapted_cache = None

    def adapted(self) -> np.ndarray:
        """Adapted embeddings [n, d] = base + relu(base W1 + b1) W2 + b2 (+ each word's offset)."""
        hid = np.maximum(self.base @ self.w1 + self.b1, 0.0)
        return self.base + hid @ self.w2 + self.b2 + self.offset

    def adapted_embedding(self, index: int) -> np.ndarray:
        """The adapted embedding [d] of personal word ``index`` (its input when typed as context)."""
        self._refresh()
        return self._adapted_cache[index]

    def _refresh(self) -> None:
        if getattr(self, "_adapted_cache", None) is None or self._adapted_cache.shape[0] != len(self.words):
            self._adapted_cache = self.adapted()

    def logits(self, output: np.ndarray, vocab_logits: np.ndarray) -> np.ndarray:
        """[..., V + n]: vocabulary logits followed by adapted embeddings . model output."""
        self._refresh()  # adapted embeddings change only in add_words/train/load: computed once per change
        # einsum, not BLAS: a [n, d] x [d] product per keystroke costs ~10 us, while a multi-threaded
        # BLAS waits ~0.5 ms for a busy second core (measured on 2 cores)
        personal = np.einsum("...d,nd->...n", output, self._adapted_cache) + self.bias
        return np.concatenate([vocab_logits, personal], axis=-1)

    @property
    def _PARAMS(self) -> tuple:
        return ("w1", "b1", "w2", "b2", "offset", "bias") if self.per_word else ("w1", "b1", "w2", "b2")

    def index_of(self, word: str) -> int | None:
        """The personal index of ``word`` (its joint id is V + index), or None."""
        if getattr(self, "_index", None) is None or len(self._index) != len(self.words):
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index.get(word)

    @staticmethod
    def _frozen_part(vocab_logits: np.ndarray, targets: np.ndarray):
        """What the frozen model fixes once: log-sum-exp of the vocabulary logits and each vocabulary target's logit.

        The vocabulary logits never change while the adapter trains, so an epoch costs
        O(N * n * d) instead of O(N * V).
        """
        vocab_logits = np.asarray(vocab_logits, np.float32)
        m = vocab_logits.max(1)
        lse = m + np.log(np.exp(vocab_logits - m[:, None]).sum(1))
        n_vocab = vocab_logits.shape[1]
        in_vocab = targets < n_vocab
        target_logit = np.zeros(len(targets), np.float32)
        target_logit[in_vocab] = vocab_logits[np.flatnonzero(in_vocab), targets[in_vocab]]
        return n_vocab, lse, in_vocab, target_logit

    def _loss_and_grads(self, outputs, frozen, targets, grads: bool = True):
        n_vocab, lse_vocab, in_vocab, target_logit = frozen
        pre = self.base @ self.w1 + self.b1
        hid = np.maximum(pre, 0.0)
        emb = self.base + hid @ self.w2 + self.b2 + self.offset  # [n, d]
        z = outputs @ emb.T + self.bias  # [N, n] personal logits
        m = np.maximum(z.max(1), lse_vocab)
        lse = m + np.log(np.exp(lse_vocab - m) + np.exp(z - m[:, None]).sum(1))  # joint normalizer
        rows = np.arange(len(targets))
        personal_rows = np.flatnonzero(~in_vocab)
        score = target_logit.copy()
        score[personal_rows] = z[personal_rows, targets[personal_rows] - n_vocab]
        loss = float(np.mean(lse - score))
        if not grads:
            return loss, None
        g = np.exp(z - lse[:, None])  # d loss / d personal logits
        g[personal_rows, targets[personal_rows] - n_vocab] -= 1.0
        g /= len(rows)
        g_emb = g.T @ outputs  # [n, d]
        g_pre = (g_emb @ self.w2.T) * (pre > 0)
        return loss, {"w1": self.base.T @ g_pre, "b1": g_pre.sum(0), "w2": hid.T @ g_emb, "b2": g_emb.sum(0),
                      "offset": g_emb, "bias": g.sum(0)}

    def _check_targets(self, vocab_logits, targets, what: str) -> np.ndarray:
        targets = np.asarray(targets)
        if targets.size == 0:
            raise ConfigError(f"no {what} examples")
        if targets.max() >= vocab_logits.shape[1] + len(self.words) or targets.min() < 0:
            raise ConfigError(f"{what} target outside the vocabulary + personal words")
        return targets

    def train(self, outputs: np.ndarray, vocab_logits: np.ndarray, targets: np.ndarray, *,
              epochs: int = 50, learning_rate: float = 0.05, optimizer: str = "sgd",
              validation: tuple | None = None, patience: int = 5, weight_decay: float = 0.0) -> list[float]:
        """Full-batch training of the adapter only (global model frozen).

        Args:
          outputs: [N, d] model outputs h at each personalisation position.
          vocab_logits: [N, V] the frozen model's vocabulary logits there.
          targets: [N] ids in the joint space (V + personal index).
          optimizer: "sgd" (plain gradient descent) or "adam" (Kingma & Ba, default betas).
          validation: optional (outputs, vocab_logits, targets) of held-out positions: after each
            epoch their loss is measured, the adapter with the lowest one is kept, and training
            stops after ``patience`` epochs without a gain (Shenoy's early-stop split).
          weight_decay: decoupled decay of the per-word offsets and biases (``per_word``).
        Returns: training cross-entropy per epoch (``self.last_training`` has the validation curve
        and the kept epoch).
        """
        if optimizer not in ("sgd", "adam"):
            raise ConfigError(f"unknown adapter optimizer {optimizer!r}; choose sgd or adam")
        targets = self._check_targets(vocab_logits, targets, "personalisation")
        outputs = np.asarray(outputs, np.float32)
        frozen = self._frozen_part(vocab_logits, targets)
        if validation is not None:
            val_targets = self._check_targets(validation[1], validation[2], "validation")
            val = (np.asarray(validation[0], np.float32), self._frozen_part(validation[1], val_targets), val_targets)
            initial_val = self._loss_and_grads(*val, grads=False)[0]
            best = (initial_val, 0, {k: getattr(self, k).copy() for k in self._PARAMS})
        moments = {k: (np.zeros_like(getattr(self, k)), np.zeros_like(getattr(self, k))) for k in self._PARAMS}
        losses, val_losses = [], []
        for epoch in range(1, epochs + 1):
            loss, grads = self._loss_and_grads(outputs, frozen, targets)
            losses.append(loss)
            for k in self._PARAMS:
                g = grads[k]
                if optimizer == "adam":
                    m, v = moments[k]
                    m[...] = 0.9 * m + 0.1 * g
                    v[...] = 0.999 * v + 0.001 * g * g
                    step = (m / (1 - 0.9 ** epoch)) / (np.sqrt(v / (1 - 0.999 ** epoch)) + 1e-8)
                else:
                    step = g
                if weight_decay and k in ("offset", "bias"):  # decoupled, on the per-word parameters only
                    step = step + weight_decay * getattr(self, k)
                setattr(self, k, (getattr(self, k) - learning_rate * step).astype(np.float32))
            if validation is not None:
                val_loss = self._loss_and_grads(*val, grads=False)[0]
                val_losses.append(val_loss)
                if val_loss < best[0]:
                    best = (val_loss, epoch, {k: getattr(self, k).copy() for k in self._PARAMS})
                elif epoch - best[1] >= patience:
                    break
        if validation is not None:
            for k, value in best[2].items():
                setattr(self, k, value)
        self.last_training = {"train_loss": losses, "validation_loss": val_losses,
                              "initial_validation_loss": initial_val if validation is not None else None,
                              "kept_epoch": best[1] if validation is not None else len(losses)}
        self._adapted_cache = None
        return losses

    def save(self, path: str) -> None:
        """Write the whole state to one file (atomically)."""
        buf = io.BytesIO()
        # words as one UTF-8 blob (a token holds no whitespace); per-word parameters only when used
        extra = {"offset": self.offset, "bias": self.bias} if self.per_word else {}
        np.savez(buf, format=np.array(STATE_FORMAT), fingerprint=np.array(self.fingerprint),
                 words=np.frombuffer("\n".join(self.words).encode("utf-8"), np.uint8),
                 base=self.base, w1=self.w1, b1=self.b1, w2=self.w2, b2=self.b2, per_word=np.array(self.per_word),
                 **extra)
        tmp = f"{path}.tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str, fingerprint: str) -> "PersonalState":
        """Read a state file; refuses one written for another model (nothing is changed)."""
        try:
            data = np.load(path, allow_pickle=False)
            fmt, fp = str(data["format"]), str(data["fingerprint"])
        except (OSError, ValueError, KeyError) as e:
            raise ConfigError(f"{path}: not a keyboard_lm personal state file ({e})") from None
        if fmt != STATE_FORMAT:
            raise ConfigError(f"{path}: personal state format {fmt!r}, expected {STATE_FORMAT!r}")
        if fp != fingerprint:
            raise ConfigError(f"{path}: personal state belongs to model {fp[:12]}, not this model {fingerprint[:12]}")
        try:
            state = cls(fp, data["base"].shape[1], hidden=data["w1"].shape[1], per_word=bool(data["per_word"]))
            text = data["words"].tobytes().decode("utf-8")
            state.words = text.split("\n") if text else []
            for k in ("base", "w1", "b1", "w2", "b2", *(("offset", "bias") if state.per_word else ())):
                setattr(state, k, data[k].astype(np.float32))
            if not state.per_word:
                state.offset = np.zeros_like(state.base)
                state.bias = np.zeros(len(state.words), np.float32)
        except (KeyError, ValueError, IndexError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: damaged personal state file ({e})") from None
        n, d = len(state.words), state.base.shape[1]
        if state.base.shape != (n, d) or state.offset.shape != (n, d) or state.bias.shape != (n,):
            raise ConfigError(f"{path}: damaged personal state file ({n} words but embeddings {state.base.shape})")
        return state


CHAR_ENCODER_FORMAT = "keyboard_lm-char-encoder-1"


class CharEncoderFile:
    """The exported char encoder (second .tflite, appended-zip metadata), run with the TFLite runtime only."""

    def __init__(self, path: str, runtime: str | None = None):
        import json
        import zipfile

        from keyboard_lm.inference.runtime import interpreter_class

        try:
            with open(path, "rb") as f:
                data = f.read()
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                self.meta = json.loads(z.read("char_encoder.json").decode("utf-8"))
        except (OSError, zipfile.BadZipFile, KeyError, ValueError) as e:
            raise ConfigError(f"{path}: not a keyboard_lm char encoder file ({e})") from None
        if self.meta.get("format") != CHAR_ENCODER_FORMAT:
            raise ConfigError(f"{path}: char encoder format {self.meta.get('format')!r}, expected {CHAR_ENCODER_FORMAT!r}")
        self.path, self.max_bytes = path, int(self.meta["max_bytes"])
        self._interp = interpreter_class(runtime)(model_content=data, num_threads=1)
        self._in = self._interp.get_input_details()[0]
        self._out = self._interp.get_output_details()[0]

    def encode(self, words) -> np.ndarray:
        """[len(words), d] zero-shot embeddings; empty/whitespace or over-long words raise ConfigError."""
        ids = _byte_ids(list(words), self.max_bytes)
        self._interp.resize_tensor_input(self._in["index"], ids.shape)
        self._interp.allocate_tensors()
        self._interp.set_tensor(self._in["index"], ids)
        self._interp.invoke()
        return self._interp.get_tensor(self._out["index"]).copy()


def _byte_ids(words, max_bytes: int) -> np.ndarray:
    # the same spelling encoding as keyboard_lm.personal.char_encoder.encode_spellings (tested equal)
    out = np.zeros((len(words), max_bytes + 2), np.int32)
    for i, word in enumerate(words):
        if not isinstance(word, str) or not word.strip():
            raise ConfigError(f"word {i} is empty or whitespace: {word!r}")
        raw = word.encode("utf-8")
        if len(raw) > max_bytes:
            raise ConfigError(f"word {i} {word[:40]!r} is {len(raw)} UTF-8 bytes, above the encoder's limit of {max_bytes}")
        out[i, : len(raw) + 2] = [1] + [b + 3 for b in raw] + [2]
    return out

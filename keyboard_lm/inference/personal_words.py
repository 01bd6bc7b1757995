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
import threading
import zipfile

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.user_files import read_limited, write_atomic
from keyboard_lm.text.spelling import encode_spellings

MAX_PERSONAL_WORDS = 1000
STATE_FORMAT = "keyboard_lm-personal-1"
#: The largest personal-state file ``load`` reads, and the most its arrays may hold once unpacked: 1,000
#: words at the paper's size take about 0.5 MB, so this leaves room for far larger models.
MAX_STATE_BYTES = 64 * 1024 * 1024

class PersonalState:
    """Personal words, their char-encoder embeddings and a residual adapter d -> hidden... -> d.

    The project's adapter: one hidden layer of 128 (``hidden``), the output layer at zero, so an
    untrained adapter returns the zero-shot char-encoder embeddings. The variants measured against
    it (Shenoy & Nguyen's LayerNorm and grid, per-word offsets, a vocabulary bias) are built by the
    experimental ``keyboard_lm.inference.adapter_research.ResearchAdapter``; a state file of one
    loads here all the same.
    """

    def __init__(self, fingerprint: str, embedding_dim: int, hidden=128, seed: int = 0):
        self._build(fingerprint, embedding_dim, hidden, seed)

    def _build(self, fingerprint: str, embedding_dim: int, hidden, seed: int, *, per_word: bool = False,
               layer_norm: bool = False, init_scale: float = 0.0, vocab_bias: bool = False) -> None:
        """The adapter's parameters; the keyword options are the research variants' (``adapter_research``)."""
        if not fingerprint:
            raise ConfigError("personal state needs the model fingerprint it belongs to")
        hidden = (int(hidden),) if np.isscalar(hidden) else tuple(int(h) for h in hidden)
        if not hidden or min(hidden) < 1:
            raise ConfigError(f"adapter hidden sizes must be positive, got {hidden}")
        if init_scale < 0:
            raise ConfigError(f"adapter init_scale must be >= 0, got {init_scale}")
        self.fingerprint = fingerprint
        self.words: list[str] = []
        self.base = np.zeros((0, embedding_dim), np.float32)  # [n, d] char-encoder embeddings
        self.hidden, self.layer_norm, self.init_scale = hidden, bool(layer_norm), float(init_scale)
        rng = np.random.default_rng(seed)
        sizes = (embedding_dim, *hidden, embedding_dim)
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
            scale = 1.0 if i < len(sizes) - 1 else self.init_scale  # the output layer: zero by default
            setattr(self, f"w{i}", (scale * rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
            setattr(self, f"b{i}", np.zeros(fan_out, np.float32))
        self.ln_g = np.ones(embedding_dim, np.float32)
        self.ln_b = np.zeros(embedding_dim, np.float32)
        #: per_word: besides the shared MLP, each personal word gets its own embedding offset and
        #: logit bias (zero until trained), for words whose spelling says little about their use.
        self.per_word = per_word
        self.offset = np.zeros((0, embedding_dim), np.float32)  # [n, d]
        self.bias = np.zeros(0, np.float32)  # [n]
        self.use_vocab_bias = bool(vocab_bias)
        self.vocab_bias = np.zeros(0, np.float32)  # [V] once trained (the vocabulary size is known then)

    @property
    def _layers(self) -> int:
        return len(self.hidden) + 1

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
            if not w.isascii():
                try:
                    w.encode("utf-8")  # the state file stores the words as UTF-8
                except UnicodeEncodeError:
                    raise ConfigError(f"personal word {i} {w!r:.40} is not Unicode text (a lone surrogate)") from None
        if len(self.words) + len(new) > MAX_PERSONAL_WORDS:
            raise ConfigError(f"{len(self.words)} + {len(new)} personal words exceed the cap of {MAX_PERSONAL_WORDS}; "
                              "nothing was added (pass the user's most frequent words first)")
        if new:
            self.words += [w for w, _ in new]
            self.base = np.concatenate([self.base, np.stack([e for _, e in new])])
            self.offset = np.concatenate([self.offset, np.zeros((len(new), self.base.shape[1]), np.float32)])
            self.bias = np.concatenate([self.bias, np.zeros(len(new), np.float32)])
            self._adapted_cache = None

    def _forward(self):
        """(adapted embeddings [n, d], what the backward pass needs)."""
        x = self.base
        if self.layer_norm:
            mu = x.mean(1, keepdims=True)
            xhat = (x - mu) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
            u = xhat * self.ln_g + self.ln_b
        else:
            xhat, u = None, x
        acts, pres = [u], []
        for i in range(1, self._layers):
            pres.append(acts[-1] @ getattr(self, f"w{i}") + getattr(self, f"b{i}"))
            acts.append(np.maximum(pres[-1], 0.0))
        last = self._layers
        out = x + acts[-1] @ getattr(self, f"w{last}") + getattr(self, f"b{last}") + self.offset
        return out, (acts, pres, xhat)

    def adapted(self) -> np.ndarray:
        """Adapted embeddings [n, d] = base + MLP(LN(base) or base) (+ each word's offset)."""
        return self._forward()[0]

    def adapted_embedding(self, index: int) -> np.ndarray:
        """The adapted embedding [d] of personal word ``index`` (its input when typed as context)."""
        self._refresh()
        return self._adapted_cache[index]

    def _refresh(self) -> None:
        if getattr(self, "_adapted_cache", None) is None or self._adapted_cache.shape[0] != len(self.words):
            self._adapted_cache = self.adapted()

    @property
    def has_vocab_bias(self) -> bool:
        return self.vocab_bias.size > 0

    def logits(self, output: np.ndarray, vocab_logits: np.ndarray) -> np.ndarray:
        """[..., V + n]: vocabulary logits (+ the trained vocabulary bias) followed by adapted embeddings . output."""
        self._refresh()  # adapted embeddings change only in add_words/train/load: computed once per change
        # einsum, not BLAS: a [n, d] x [d] product per keystroke costs ~10 us, while a multi-threaded
        # BLAS waits ~0.5 ms for a busy second core (measured on 2 cores)
        personal = np.einsum("...d,nd->...n", output, self._adapted_cache) + self.bias
        if self.has_vocab_bias:
            vocab_logits = vocab_logits + self.vocab_bias
        return np.concatenate([vocab_logits, personal], axis=-1)

    @property
    def _PARAMS(self) -> tuple:
        names = [f"{p}{i}" for i in range(1, self._layers + 1) for p in ("w", "b")]
        if self.layer_norm:
            names += ["ln_g", "ln_b"]
        if self.per_word:
            names += ["offset", "bias"]
        if self.use_vocab_bias:
            names.append("vocab_bias")
        return tuple(names)

    def index_of(self, word: str) -> int | None:
        """The personal index of ``word`` (its joint id is V + index), or None."""
        if getattr(self, "_index", None) is None or len(self._index) != len(self.words):
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index.get(word)

    @staticmethod
    def _frozen_part(vocab_logits: np.ndarray, targets: np.ndarray):
        """What the frozen model fixes once: log-sum-exp of the vocabulary logits and each vocabulary target's logit.

        The vocabulary logits never change while the adapter trains, so an epoch costs
        O(N * n * d) instead of O(N * V) (unless the vocabulary bias is trained).
        """
        vocab_logits = np.asarray(vocab_logits)
        if vocab_logits.dtype != np.float64:  # float64 stays (gradient checks); anything else is float32
            vocab_logits = vocab_logits.astype(np.float32)
        m = vocab_logits.max(1)
        lse = m + np.log(np.exp(vocab_logits - m[:, None]).sum(1))
        n_vocab = vocab_logits.shape[1]
        in_vocab = targets < n_vocab
        target_logit = np.zeros(len(targets), vocab_logits.dtype)
        target_logit[in_vocab] = vocab_logits[np.flatnonzero(in_vocab), targets[in_vocab]]
        return n_vocab, lse, in_vocab, target_logit, vocab_logits

    def _vocab_lse(self, frozen) -> np.ndarray:
        """Log-sum-exp [N] of the vocabulary logits plus the trained vocabulary bias (if any)."""
        _, lse, _, _, vocab_logits = frozen
        if not self.has_vocab_bias:
            return lse
        lse = np.empty(len(vocab_logits), vocab_logits.dtype)
        for s in range(0, len(vocab_logits), 2048):  # chunks: the [N, V] temporaries stay small
            z = vocab_logits[s:s + 2048] + self.vocab_bias
            m = z.max(1)
            lse[s:s + 2048] = m + np.log(np.exp(z - m[:, None]).sum(1))
        return lse

    def _loss_and_grads(self, outputs, frozen, targets, grads: bool = True):
        n_vocab, _, in_vocab, target_logit, vocab_logits = frozen
        lse_vocab = self._vocab_lse(frozen)
        if self.has_vocab_bias:
            rows_in = np.flatnonzero(in_vocab)
            target_logit = target_logit.copy()
            target_logit[rows_in] += self.vocab_bias[targets[rows_in]]
        emb, (acts, pres, xhat) = self._forward()  # [n, d]
        z = outputs @ emb.T + self.bias  # [N, n] personal logits
        m = np.maximum(z.max(1, initial=-np.inf), lse_vocab)
        lse = m + np.log(np.exp(lse_vocab - m) + np.exp(z - m[:, None]).sum(1))  # joint normalizer
        personal_rows = np.flatnonzero(~in_vocab)
        score = target_logit.copy()
        score[personal_rows] = z[personal_rows, targets[personal_rows] - n_vocab]
        loss = float(np.mean(lse - score))
        if not grads:
            return loss, None
        n_rows = len(targets)
        g = np.exp(z - lse[:, None])  # d loss / d personal logits
        g[personal_rows, targets[personal_rows] - n_vocab] -= 1.0
        g /= n_rows
        g_emb = g.T @ outputs  # [n, d]
        out = {"offset": g_emb, "bias": g.sum(0)}
        last = self._layers
        out[f"w{last}"], out[f"b{last}"] = acts[-1].T @ g_emb, g_emb.sum(0)
        g_act = g_emb @ getattr(self, f"w{last}").T
        for i in range(last - 1, 0, -1):
            g_pre = g_act * (pres[i - 1] > 0)
            out[f"w{i}"], out[f"b{i}"] = acts[i - 1].T @ g_pre, g_pre.sum(0)
            g_act = g_pre @ getattr(self, f"w{i}").T
        if self.layer_norm:  # the base embeddings are fixed: only LayerNorm's gain and shift learn
            out["ln_g"], out["ln_b"] = (g_act * xhat).sum(0), g_act.sum(0)
        if self.use_vocab_bias:
            gv = np.zeros(n_vocab, np.float64)
            for s in range(0, n_rows, 2048):
                zv = vocab_logits[s:s + 2048] + (self.vocab_bias if self.has_vocab_bias else 0.0)
                gv += np.exp(zv - lse[s:s + 2048, None]).sum(0)
            np.subtract.at(gv, targets[in_vocab], 1.0)
            out["vocab_bias"] = (gv / n_rows).astype(np.float32)
        return loss, out

    def _check_targets(self, vocab_logits, targets, what: str) -> np.ndarray:
        targets = np.asarray(targets)
        if targets.size == 0:
            raise ConfigError(f"no {what} examples")
        if targets.max() >= vocab_logits.shape[1] + len(self.words) or targets.min() < 0:
            raise ConfigError(f"{what} target outside the vocabulary + personal words")
        return targets

    def train(self, outputs: np.ndarray, vocab_logits: np.ndarray, targets: np.ndarray, *,
              epochs: int = 50, learning_rate: float = 0.05, optimizer: str = "sgd",
              validation: tuple | None = None, patience: int = 5, weight_decay: float = 0.0,
              stop_on: str = "loss", never: np.ndarray | None = None) -> list[float]:
        """Full-batch training of the adapter only (global model frozen).

        Args:
          outputs: [N, d] model outputs h at each personalisation position.
          vocab_logits: [N, V] the frozen model's vocabulary logits there.
          targets: [N] ids in the joint space (V + personal index).
          optimizer: "sgd" (plain gradient descent) or "adam" (Kingma & Ba, default betas).
          validation: optional (outputs, vocab_logits, targets) of held-out positions: after each
            epoch their loss is measured, the adapter with the lowest one is kept, and training
            stops after ``patience`` epochs without a gain (Shenoy's early-stop split).
          weight_decay: decoupled decay of the per-word offsets and biases (``per_word``) and of
            the vocabulary bias.
          stop_on: what the validation positions choose the epoch by: "loss" (cross-entropy,
            lower is better) or "emr3" (Shenoy's: the share of targets among the top 3, higher is
            better; ``never`` [V] marks vocabulary ids that are never suggested).
        Returns: training cross-entropy per epoch (``self.last_training`` has the validation curve
        and the kept epoch).
        """
        if optimizer not in ("sgd", "adam"):
            raise ConfigError(f"unknown adapter optimizer {optimizer!r}; choose sgd or adam")
        if stop_on not in ("loss", "emr3"):
            raise ConfigError(f"unknown adapter stopping criterion {stop_on!r}; choose loss or emr3")
        targets = self._check_targets(vocab_logits, targets, "personalisation")
        outputs = np.asarray(outputs, np.float32)
        frozen = self._frozen_part(vocab_logits, targets)
        if self.use_vocab_bias and not self.has_vocab_bias:
            self.vocab_bias = np.zeros(frozen[0], np.float32)
        if validation is not None:
            val_targets = self._check_targets(validation[1], validation[2], "validation")
            val = (np.asarray(validation[0], np.float32), self._frozen_part(validation[1], val_targets), val_targets)

            def score():  # lower is better; EMR3 is a step function: equal EMR3 goes by the loss
                loss = self._loss_and_grads(*val, grads=False)[0]
                if stop_on == "emr3":
                    return (-self.emr3(val[0], val[1][4], val[2], never), loss)
                return (loss,)

            initial = score()
            best = (initial, 0, {k: getattr(self, k).copy() for k in self._PARAMS})
        moments = {k: (np.zeros_like(getattr(self, k)), np.zeros_like(getattr(self, k))) for k in self._PARAMS}
        losses, val_losses, val_emr3 = [], [], []
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
                if weight_decay and k in ("offset", "bias", "vocab_bias"):  # decoupled, per-word and bias only
                    step = step + weight_decay * getattr(self, k)
                setattr(self, k, (getattr(self, k) - learning_rate * step).astype(np.float32))
            if validation is not None:
                self._adapted_cache = None
                now = score()
                val_losses.append(now[-1])
                if stop_on == "emr3":
                    val_emr3.append(-now[0])
                if now < best[0]:
                    best = (now, epoch, {k: getattr(self, k).copy() for k in self._PARAMS})
                elif epoch - best[1] >= patience:
                    break
        if validation is not None:
            for k, value in best[2].items():
                setattr(self, k, value)
        self.last_training = {"train_loss": losses, "validation_loss": val_losses, "stop_on": stop_on,
                              "initial_validation_loss": initial[-1] if validation is not None else None,
                              "kept_epoch": best[1] if validation is not None else len(losses)}
        if stop_on == "emr3" and validation is not None:
            self.last_training.update(validation_emr3=val_emr3, initial_validation_emr3=-initial[0])
        self._adapted_cache = None
        return losses

    def emr3(self, outputs: np.ndarray, vocab_logits: np.ndarray, targets: np.ndarray,
             never: np.ndarray | None = None) -> float:
        """Share of ``targets`` (joint ids) among the 3 best joint scores at each position.

        ``never`` [V]: vocabulary ids never suggested (special tokens, blocklisted words); a target
        that is one of them (``<oov>``: a word neither known nor personal) is always a miss.
        """
        self._refresh()
        targets = np.asarray(targets)
        n_vocab = vocab_logits.shape[1]
        hits = 0
        for s in range(0, len(targets), 2048):
            zv = np.array(vocab_logits[s:s + 2048], np.float32, copy=True)
            if self.has_vocab_bias:
                zv += self.vocab_bias
            if never is not None:
                zv[:, never] = -np.inf
            top_v = np.argpartition(-zv, 2, axis=1)[:, :3]  # the vocabulary's 3 best per row
            cand = np.concatenate([top_v, n_vocab + np.broadcast_to(np.arange(len(self.words)),
                                                                    (len(top_v), len(self.words)))], axis=1)
            score = np.concatenate([np.take_along_axis(zv, top_v, 1),
                                    np.einsum("nd,wd->nw", outputs[s:s + 2048], self._adapted_cache) + self.bias],
                                   axis=1)
            best = np.take_along_axis(cand, np.argpartition(-score, 2, axis=1)[:, :3], 1)
            t = targets[s:s + 2048]
            ok = (best == t[:, None]).any(1) & ~((t < n_vocab) & (never[np.minimum(t, n_vocab - 1)] if never is not None
                                                                  else False))
            hits += int(ok.sum())
        return hits / max(len(targets), 1)

    def save(self, path: str) -> None:
        """Write the whole state to one file, atomically and durably (``keyboard_lm.inference.user_files``:
        readers see the old file or the new one, concurrent savers serialize, a symbolic link is refused)."""
        buf = io.BytesIO()
        # words as one UTF-8 blob (a token holds no whitespace); optional parameters only when used
        params = {k: getattr(self, k) for k in self._PARAMS if k != "vocab_bias" or self.has_vocab_bias}
        np.savez(buf, format=np.array(STATE_FORMAT), fingerprint=np.array(self.fingerprint),
                 words=np.frombuffer("\n".join(self.words).encode("utf-8"), np.uint8),
                 base=self.base, per_word=np.array(self.per_word), hidden=np.array(self.hidden, np.int64),
                 layer_norm=np.array(self.layer_norm), vocab_bias_used=np.array(self.use_vocab_bias), **params)
        write_atomic(path, buf.getvalue(), "personal state", ConfigError)

    @classmethod
    def load(cls, path: str, fingerprint: str) -> "PersonalState":
        """Read a state file; refuses one written for another model, or damaged, or beyond the code's bounds
        (MAX_STATE_BYTES, MAX_PERSONAL_WORDS, finite parameters), in one line naming it (nothing is changed)."""
        raw = read_limited(path, MAX_STATE_BYTES, "personal state file", ConfigError)
        try:
            _check_arrays(raw)
            data = np.load(io.BytesIO(raw), allow_pickle=False)
            fmt, fp = str(data["format"]), str(data["fingerprint"])
        except (OSError, ValueError, KeyError, EOFError, NotImplementedError, RuntimeError,
                zipfile.BadZipFile) as e:  # what zipfile and numpy raise for a damaged archive
            raise ConfigError(f"{path}: not a keyboard_lm personal state file ({e})") from None
        if fmt != STATE_FORMAT:
            raise ConfigError(f"{path}: personal state format {fmt!r}, expected {STATE_FORMAT!r}")
        if fp != fingerprint:
            raise ConfigError(f"{path}: personal state belongs to model {fp[:12]}, not this model {fingerprint[:12]}")
        try:
            # files written before the adapter had options hold one hidden layer and no flags
            hidden = tuple(data["hidden"].tolist()) if "hidden" in data else (data["w1"].shape[1],)
            sizes = (data["base"].shape[1], *hidden, data["base"].shape[1])
            for i, layer in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
                # the adapter is built at the file's sizes: they must be those of the arrays it holds
                # (bounded above), not numbers that would make _build allocate without limit
                if data[f"w{i}"].shape != layer:
                    raise ValueError(f"w{i} has shape {data[f'w{i}'].shape}, expected {layer}")
            state = cls.__new__(cls)
            state._build(fp, data["base"].shape[1], hidden, 0, per_word=bool(data["per_word"]),
                         layer_norm=bool(data["layer_norm"]) if "layer_norm" in data else False,
                         vocab_bias=bool(data["vocab_bias_used"]) if "vocab_bias_used" in data else False)
            text = data["words"].tobytes().decode("utf-8")
            state.words = text.split("\n") if text else []
            state.base = data["base"].astype(np.float32)
            for k in state._PARAMS:
                if k != "vocab_bias" or k in data:
                    expected = getattr(state, k).shape
                    value = data[k].astype(np.float32)
                    if k not in ("offset", "bias", "vocab_bias") and value.shape != expected:
                        raise ValueError(f"{k} has shape {value.shape}, expected {expected}")
                    setattr(state, k, value)
            if not state.per_word:
                state.offset = np.zeros_like(state.base)
                state.bias = np.zeros(len(state.words), np.float32)
        except (KeyError, ValueError, IndexError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: damaged personal state file ({e})") from None
        n, d = len(state.words), state.base.shape[1]
        if state.base.shape != (n, d) or state.offset.shape != (n, d) or state.bias.shape != (n,):
            raise ConfigError(f"{path}: damaged personal state file ({n} words but embeddings {state.base.shape})")
        if n > MAX_PERSONAL_WORDS:
            raise ConfigError(f"{path}: damaged personal state file ({n:,} words, more than the cap of "
                              f"{MAX_PERSONAL_WORDS:,})")
        for k in ("base", *state._PARAMS):
            if not np.isfinite(getattr(state, k)).all():  # NaN or inf would turn every suggestion into NaN
                raise ConfigError(f"{path}: damaged personal state file ({k} holds a NaN or infinite value)")
        return state


def _check_arrays(raw: bytes) -> None:
    """Refuse an .npz whose arrays would unpack to more than MAX_STATE_BYTES, or whose array headers
    declare more data than their entries hold, before numpy allocates anything (ValueError)."""
    from numpy.lib import format as npy

    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        infos = z.infolist()
        if sum(i.file_size for i in infos) > MAX_STATE_BYTES:
            raise ValueError(f"its arrays unpack to more than {MAX_STATE_BYTES:,} bytes")
        for info in infos:
            with z.open(info) as f:
                version = npy.read_magic(f)
                readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
                if version not in readers:
                    raise ValueError(f"array {info.filename} is .npy version {version}")
                shape, _, dtype = readers[version](f)
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if dtype.hasobject or declared != info.file_size - f.tell():
                    raise ValueError(f"array {info.filename} declares {shape} {dtype}, which its "
                                     f"{info.file_size:,} bytes do not hold")


CHAR_ENCODER_FORMAT = "keyboard_lm-char-encoder-1"


#: A char encoder is a few hundred KB; a file many times that is not one (and is not read whole).
MAX_CHAR_ENCODER_BYTES = 64 << 20


class CharEncoderFile:
    """The exported char encoder (second .tflite, appended-zip metadata), run with the TFLite runtime only.

    Safe to share between threads (a predictor serves many): one interpreter, and a lock around each
    ``encode``, whose resize, set, invoke and read must not interleave with another thread's.
    """

    def __init__(self, path: str, runtime: str | None = None):
        import json
        import zipfile

        from keyboard_lm.inference.model_file import check_checksum
        from keyboard_lm.inference.runtime import interpreter_class

        try:
            if os.path.getsize(path) > MAX_CHAR_ENCODER_BYTES:
                raise ConfigError(f"{path}: {os.path.getsize(path):,} bytes, more than a char encoder file holds "
                                  f"({MAX_CHAR_ENCODER_BYTES:,})")
            with open(path, "rb") as f:
                data = f.read(MAX_CHAR_ENCODER_BYTES + 1)
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                self.meta = json.loads(z.read("char_encoder.json").decode("utf-8"))
        except (OSError, zipfile.BadZipFile, KeyError, ValueError) as e:
            raise ConfigError(f"{path}: not a keyboard_lm char encoder file ({e})") from None
        if self.meta.get("format") != CHAR_ENCODER_FORMAT:
            raise ConfigError(f"{path}: char encoder format {self.meta.get('format')!r}, expected {CHAR_ENCODER_FORMAT!r}")
        # Damage anywhere (a byte flipped in storage or transfer) is refused before TFLite parses the file.
        check_checksum(path, data)
        self.path, self.max_bytes = path, int(self.meta["max_bytes"])
        self._interp = interpreter_class(runtime)(model_content=data, num_threads=1)
        self._in = self._interp.get_input_details()[0]
        self._out = self._interp.get_output_details()[0]
        self._lock = threading.Lock()

    def encode(self, words) -> np.ndarray:
        """[len(words), d] zero-shot embeddings; empty/whitespace or over-long words raise ConfigError."""
        ids = encode_spellings(list(words), self.max_bytes)
        with self._lock:
            self._interp.resize_tensor_input(self._in["index"], ids.shape)
            self._interp.allocate_tensors()
            self._interp.set_tensor(self._in["index"], ids)
            self._interp.invoke()
            return self._interp.get_tensor(self._out["index"]).copy()

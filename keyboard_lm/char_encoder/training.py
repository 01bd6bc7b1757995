"""Train the char encoder against a run's frozen model and ship it next to the run's exported file.

The encoder is trained on the run's own training text: the contexts are the
model outputs h at positions of the examples the trainer used (same clients,
same chunking), so the in-context term sees the situation the encoder meets on
the device.  The encoder file carries the sha256 of the model file it was
trained for (``ModelFile`` computes the same fingerprint), and the budget
covers both files since both ship.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile

import numpy as np

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.examples import corpus_examples
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.export.budget import DEFAULT_PERSONAL_BUDGET_BYTES, check_personal_budget
from keyboard_lm.inference.model_file import METADATA_FILE
from keyboard_lm.models.run_dir import Run, build_loaded_model, load_run
from keyboard_lm.char_encoder.fit import fit_char_encoder
from keyboard_lm.char_encoder.model import N_SPECIAL, CharEncoderConfig, ContextExamples, vocabulary_word_ids

#: Metric keys copied into the encoder file (numbers describing held-out words, never the words).
_SHIPPED_METRICS = ("heldout_mse", "heldout_mse_mean_row", "heldout_context_ce", "heldout_context_ce_true_row", "heldout_recall_at_3",
                    "heldout_recall_at_3_true_row", "heldout_false_top3_rate", "heldout_false_top3_rate_true_row",
                    "heldout_joint_ce", "heldout_joint_ce_true_row", "heldout_joint_recall_at_3",
                    "heldout_joint_recall_at_3_true_row", "heldout_joint_recall_at_3_removed",
                    "heldout_joint_word_recall_at_3", "heldout_joint_word_recall_at_3_true_row", "train_words_mse")


def _as_run(run: str | Run) -> Run:
    return run if isinstance(run, Run) else load_run(run)


def _check_corpus(run: Run, corpus: Corpus) -> None:
    """Refuse a corpus other than the run's: its split would name other clients."""
    expected = run.record.data_fingerprint
    if expected and expected != corpus.fingerprint():
        raise ConfigError(f"{corpus.name} is not the corpus {run.path} was trained on (fingerprint "
                          f"{corpus.fingerprint()[:12]} != {expected[:12]}); load the run's corpus "
                          "(run.json data.source) to train its char encoder")


def run_training_clients(run: str | Run, corpus: Corpus) -> list[str]:
    """The clients whose examples trained the run's weights.

    The training side of the run's recorded split; for a centralized run with a
    validation share, without the validation clients (the trainer never fitted
    on them).  Held-out clients are never among them.
    """
    run = _as_run(run)
    _check_corpus(run, corpus)
    split = run.record.split
    if not split:
        raise ConfigError(f"{run.path}: run.json records no data split; pass the training client ids explicitly")
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig(**split))
    fraction = run.record.hyperparameters.get("validation_fraction")
    if run.record.trainer == "centralized" and fraction:
        train_ids, _ = validation_clients(train_ids, fraction, split["seed"])
    return train_ids


def _check_clients(run: Run, corpus: Corpus, client_ids) -> list[str]:
    client_ids = list(client_ids)
    if not client_ids:
        raise ConfigError("no client ids to take contexts from")
    missing = [c for c in client_ids if c not in corpus.clients]
    if missing:
        raise ConfigError(f"{corpus.name}: unknown client ids {missing[:5]}")
    split = run.record.split
    if split:
        _check_corpus(run, corpus)
        heldout = set(split_clients(corpus.client_ids, SplitConfig(**split))[1])
        leaked = [c for c in client_ids if c in heldout]
        if leaked:
            raise ConfigError(f"{len(leaked)} of the client ids are held-out clients of {run.path} "
                              f"(e.g. {leaked[:3]}); the char encoder trains on training clients only")
    return client_ids


def model_contexts(run: str | Run, corpus: Corpus, client_ids, *, max_positions: int = 100_000, seed: int = 0,
                   model=None, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(h [N, D] float32, target ids [N] int64) at up to ``max_positions`` positions of the run's examples.

    The examples are the trainer's: the clients' sentences chunked at the run's
    sequence length (``keyboard_lm.data.examples``, which the tf.data pipeline
    is tested equal to).  Positions whose target is a special token (pad, bos,
    eos, oov) are left out, and a seeded subsample of the rest is kept, in
    corpus order.  h is the input of the tied output layer, computed with
    dropout inactive as at inference.  ``model``: the run's Keras model if
    already built.
    """
    import tensorflow as tf

    run = _as_run(run)
    if max_positions < 1:
        raise ConfigError(f"max_positions must be >= 1, got {max_positions}")
    client_ids = _check_clients(run, corpus, client_ids)
    seq_len = run.record.seq_len
    ys, xs = [], []
    for x, y in corpus_examples(corpus.sentences(client_ids), run.vocab, seq_len):
        xs.append(x)
        ys.append(y)
    x_all = np.asarray(xs, np.int32).reshape(-1, seq_len)
    y_all = np.asarray(ys, np.int64).reshape(-1, seq_len)
    candidates = np.flatnonzero(y_all.reshape(-1) >= N_SPECIAL)
    if not len(candidates):
        raise ConfigError(f"the {len(client_ids)} clients have no position with a word target")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(candidates, min(max_positions, len(candidates)), replace=False))
    rows, cols = chosen // seq_len, chosen % seq_len
    if model is None:
        model = build_loaded_model(run)
    # one traced function per model and sequence length (as keyboard_lm.evaluation.evaluate_model)
    cache = model.__dict__.setdefault("_kblm_context_fns", {})
    if seq_len not in cache:
        features = tf.keras.Model(model.inputs, model.get_layer("tied_output").input)
        cache[seq_len] = tf.function(lambda t: features(t, training=False),
                                     input_signature=[tf.TensorSpec([None, seq_len], tf.int32)])
    fn = cache[seq_len]
    used = np.unique(rows)
    h = np.empty((len(chosen), run.model_config.embedding_dim), np.float32)
    for a in range(0, len(used), batch_size):
        batch = used[a:a + batch_size]
        out = fn(x_all[batch]).numpy()  # [b, T, D]
        sel = (rows >= batch[0]) & (rows <= batch[-1])  # rows are sorted, so this is the batch's share
        h[sel] = out[np.searchsorted(batch, rows[sel]), cols[sel]]
    return h, y_all[rows, cols]


def read_model_file(model_path: str) -> tuple[bytes, dict]:
    """(bytes, keyboard_lm.json) of an exported model file; ConfigError naming the file otherwise."""
    try:
        with open(model_path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"{model_path}: cannot read the model file: {e.strerror}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            meta = json.loads(z.read(METADATA_FILE).decode("utf-8"))
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError) as e:
        raise ConfigError(f"{model_path}: not a keyboard_lm model file (no readable {METADATA_FILE}: {e})") from None
    if not isinstance(meta, dict):
        raise ConfigError(f"{model_path}: {METADATA_FILE} is not a JSON object")
    return data, meta


def check_model_matches_run(run: Run, model_path: str, meta: dict) -> None:
    """Refuse a model file exported from another run: the encoder maps into the run's embedding space.

    Compared: vocabulary (size and sha256) and model sizes from the file's
    keyboard_lm.json.  A file from another run with the same vocabulary and
    sizes is not told apart (its weights are not compared).
    """
    problems = []
    if meta.get("vocab_size") != len(run.vocab):
        problems.append(f"vocabulary size {meta.get('vocab_size')} != {len(run.vocab)}")
    model = meta.get("model") or {}
    if model.get("embedding_dim") != run.model_config.embedding_dim:
        problems.append(f"embedding dim {model.get('embedding_dim')} != {run.model_config.embedding_dim}")
    for key in ("model_type", "units"):  # not needed by the encoder, but a sign of another run
        if model.get(key) != getattr(run.model_config, key):
            problems.append(f"{key} {model.get(key)!r} != {getattr(run.model_config, key)!r}")
    if meta.get("vocab_sha256") != run.vocab.fingerprint():
        problems.append(f"vocabulary sha256 {str(meta.get('vocab_sha256'))[:12]} != {run.vocab.fingerprint()[:12]}")
    if problems:
        raise ConfigError(f"{model_path} does not match the run {run.path}: {'; '.join(problems)} "
                          "(export the run with `keyboard-lm export` and pass that file)")


def build_char_encoder_file(
    run_dir: str,
    model_path: str,
    out_path: str,
    *,
    corpus: Corpus,
    client_ids=None,
    config: CharEncoderConfig | None = None,
    epochs: int = 10,
    max_positions: int = 100_000,
    seed: int = 0,
    budget_bytes: int | None = DEFAULT_PERSONAL_BUDGET_BYTES,
    context_weight: float = 0.0,
    context_loss: str = "shared",
    learning_rate: float = 3e-3,
) -> dict:
    """Train the char encoder for ``run_dir`` and write it to ``out_path``.

    ``context_weight`` 0 (default): the embedding regression (MSE) only, the contexts serving
    the held-out metrics and the choice of epoch; > 0 adds the in-context loss
    (``context_loss``). On Tiny Shakespeare the regression alone scored best, both on held-out
    joint cross-entropy and in the personalization benchmark (docs/personalization.md).

    ``model_path`` is the run's exported .tflite: its vocabulary and embedding
    dimension must be the run's, and the sha256 of its bytes becomes the
    encoder file's ``model_fingerprint``.  ``client_ids``: the run's training
    clients of ``corpus`` (default: ``run_training_clients``).  The held-out
    metrics and the training settings go into the file's metadata, as numbers
    only.  Nothing is written unless everything succeeds and both files
    together fit ``budget_bytes`` (None or 0: no budget).

    Returns a report: sizes, fingerprint, settings, the kept epoch's metrics,
    the per-epoch history and timings. Each epoch's line goes to logging
    (``keyboard_lm.char_encoder.fit``, INFO).
    """
    from keyboard_lm.export.char_encoder_export import char_encoder_bytes, write_atomically

    run = load_run(run_dir)
    model_data, meta = read_model_file(model_path)
    check_model_matches_run(run, model_path, meta)
    if os.path.abspath(out_path) == os.path.abspath(model_path):
        raise ConfigError(f"{out_path}: the char encoder file would overwrite the model file; choose another path")
    if budget_bytes:
        check_personal_budget(len(model_data), 0, budget_bytes)  # the model alone already too big: fail before training
    dim = run.model_config.embedding_dim
    config = config or CharEncoderConfig(embedding_dim=dim)
    if config.embedding_dim != dim:
        raise ConfigError(f"char encoder embedding_dim {config.embedding_dim} != the embedding dim {dim} of {run_dir}")
    fingerprint = hashlib.sha256(model_data).hexdigest()
    if client_ids is None:
        client_ids = run_training_clients(run, corpus)

    started = time.time()
    model = build_loaded_model(run)
    table = model.get_layer("embedding").table().numpy()
    h, targets = model_contexts(run, corpus, client_ids, max_positions=max_positions, seed=seed, model=model)
    contexts = ContextExamples(table, h, targets)
    words, ids, too_long = vocabulary_word_ids(run.vocab.tokens, config.max_bytes)
    context_seconds = time.time() - started

    started = time.time()
    fit = fit_char_encoder(words, table[ids], word_ids=ids, contexts=contexts, config=config, epochs=epochs,
                           learning_rate=learning_rate, context_weight=context_weight, context_loss=context_loss,
                           seed=seed)
    train_seconds = time.time() - started

    started = time.time()
    metrics = {k: fit.metrics[k] for k in _SHIPPED_METRICS if k in fit.metrics}
    settings = {**fit.settings, "words_too_long": too_long, "clients": len(client_ids)}
    data = char_encoder_bytes(fit.encoder, max_bytes=config.max_bytes, model_fingerprint=fingerprint,
                              metadata={"training": settings, "heldout": metrics})
    check_personal_budget(len(model_data), len(data), budget_bytes)
    write_atomically(out_path, data)
    return {"out_path": out_path, "model_path": model_path, "model_fingerprint": fingerprint,
            "model_bytes": len(model_data), "encoder_bytes": len(data), "total_bytes": len(model_data) + len(data),
            "budget_bytes": budget_bytes or None, "settings": settings, "metrics": metrics,
            "history": fit.history, "untrained": fit.history[0],
            "seconds": {"contexts": round(context_seconds, 2), "training": round(train_seconds, 2),
                        "export": round(time.time() - started, 2)}}

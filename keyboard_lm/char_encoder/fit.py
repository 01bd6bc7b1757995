"""Fitting the char encoder: MSE to the tied rows and, given contexts, in-context cross-entropy.

``fit_char_encoder`` holds out a seeded share of the words, trains, evaluates every epoch on what was held out
(MSE, in-context cross-entropy and recall@3, false suggestions, and the joint softmax with the vocabulary: see
``heldout``) and keeps the best epoch; ``train_char_encoder`` is its short form. The encoder itself is in
``model``.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import tensorflow as tf

from keyboard_lm.char_encoder.heldout import (
    ContextPositions, Evaluator, HeldoutSplit, heldout_split, mean_row_reference, resolve_select_by)
from keyboard_lm.char_encoder.model import CharEncoderConfig, CharEncoderFit, ContextExamples, build_char_encoder
from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spelling import encode_spellings

#: One line per epoch at INFO; the command line shows them (keyboard_lm.log), a library caller chooses.
_LOG = logging.getLogger(__name__)


def fit_char_encoder(
    words,
    embeddings: np.ndarray,
    *,
    word_ids=None,
    contexts: ContextExamples | None = None,
    config: CharEncoderConfig = CharEncoderConfig(),
    epochs: int = 30,
    batch_size: int = 128,
    context_batch_size: int = 512,
    learning_rate: float = 3e-3,
    mse_weight: float = 1.0,
    context_weight: float = 1.0,
    context_loss: str = "shared",
    personal_share: float = 0.1,
    heldout_fraction: float = 0.1,
    select_by: str | None = None,
    seed: int = 0,
) -> CharEncoderFit:
    """Train the encoder on MSE to the tied rows and, given ``contexts``, on in-context cross-entropy.

    Args:
      words: spellings (special tokens excluded by the caller; see ``vocabulary_word_ids``).
      embeddings: float [len(words), embedding_dim], the MSE targets: rows of the frozen tied table.
      word_ids: vocabulary id of each word (needed with ``contexts``).
      contexts: frozen-model outputs and next-word ids; positions whose target is a
        special token, or not among ``words``, are skipped.
      mse_weight, context_weight: loss = mse_weight * MSE + context_weight * in-context CE
        (context_weight 0 with contexts: MSE-only training, in-context metrics still reported).
      context_loss: which vocabulary columns the encoder's logits replace in the in-context softmax.
        ``"target"``: at each position only the target's own column, h_t . enc(w_t) against
        the other V - 1 true logits.  Nothing in it asks a word's encoding to *lose* where
        another word follows, and it is won by giving every word one large generic vector
        (measured: held-out words then enter the top 3 at most positions where they are not
        the next word).  ``"shared"`` (default): the targets of a
        ``personal_share`` of each batch's positions are its personal words; their columns
        are replaced at every position of the batch and the cross-entropy is taken at all of
        them, so an encoding must win where its word follows and lose where ordinary text
        goes on -- the device's situation, where personal words compete at every position
        and most next words are not personal.  ``personal_share`` 1 makes every target of
        the batch personal, and inflating all encodings together then pays again
        (measured), so keep it near the share of personal words in a user's text.
      heldout_fraction: seeded share of ``words`` held out: never an MSE target nor an
        in-context target; their positions measure zero-shot quality.
      select_by: which epoch is kept: ``"joint"`` (lowest held-out joint cross-entropy, see
        ``heldout.JointEvaluation``; the default with contexts), ``"context"`` (lowest held-out
        in-context cross-entropy with only the target's column replaced), ``"mse"`` (lowest
        held-out MSE; the default without contexts) or ``"last"``.
      seed: seed of the held-out choice, initialization and shuffling.

    One line per epoch goes to this module's logger (INFO).
    """
    words = list(words)
    embeddings = np.asarray(embeddings, np.float32)
    _check_fit_arguments(words, embeddings, contexts, config, epochs=epochs, batch_size=batch_size,
                         context_batch_size=context_batch_size, learning_rate=learning_rate, mse_weight=mse_weight,
                         context_weight=context_weight, heldout_fraction=heldout_fraction, context_loss=context_loss,
                         personal_share=personal_share)
    use_context = contexts is not None and context_weight > 0
    x = encode_spellings(words, config.max_bytes)
    split = heldout_split(len(words), heldout_fraction, seed)
    positions = ContextPositions(contexts, word_ids, split, config.embedding_dim, use_context, seed)
    references = {**mean_row_reference(embeddings, split), **positions.references}
    select_by = resolve_select_by(select_by, positions, split.n_held)
    evaluate = Evaluator(x, embeddings, split, positions, references)

    tf.keras.utils.set_random_seed(seed)
    rng = np.random.default_rng([seed, 2])
    encoder = build_char_encoder(config)
    optimizer = tf.keras.optimizers.Adam(learning_rate)
    optimizer.build(encoder.trainable_variables)
    train_step = _train_step(encoder, optimizer, contexts, config, use_context=use_context, context_loss=context_loss,
                             mse_weight=mse_weight, context_weight=context_weight)
    batches = _Batches(x, embeddings, split.train_index, positions, rng, use_context=use_context,
                       context_loss=context_loss, personal_share=personal_share, batch_size=batch_size,
                       context_batch_size=context_batch_size)
    history, best_epoch = _train_epochs(encoder, train_step, batches, evaluate, epochs=epochs, select_by=select_by,
                                        use_context=use_context)
    settings = _fit_settings(config, contexts, split, positions, epochs=epochs, best_epoch=best_epoch,
                             batch_size=batch_size, context_batch_size=context_batch_size,
                             learning_rate=learning_rate, mse_weight=mse_weight, context_weight=context_weight,
                             context_loss=context_loss, personal_share=personal_share,
                             heldout_fraction=heldout_fraction, seed=seed, select_by=select_by)
    return CharEncoderFit(encoder, history, best_epoch, split.train_index, split.heldout_index, settings)


def _check_fit_arguments(words: list, embeddings: np.ndarray, contexts: ContextExamples | None,
                         config: CharEncoderConfig, *, epochs: int, batch_size: int, context_batch_size: int,
                         learning_rate: float, mse_weight: float, context_weight: float, heldout_fraction: float,
                         context_loss: str, personal_share: float) -> None:
    """Raise ConfigError on the first of ``fit_char_encoder``'s arguments that is wrong on its own."""
    if len(words) != len(embeddings):
        raise ConfigError(f"{len(words)} words but {len(embeddings)} embedding rows")
    if embeddings.ndim != 2 or embeddings.shape[1] != config.embedding_dim:
        raise ConfigError(f"embeddings are {embeddings.shape[1] if embeddings.ndim == 2 else embeddings.shape}-dim, "
                          f"char encoder expects {config.embedding_dim}")
    for name, value in (("epochs", epochs), ("batch_size", batch_size), ("context_batch_size", context_batch_size)):
        if value < 1:
            raise ConfigError(f"char encoder {name} must be >= 1, got {value}")
    if not learning_rate > 0:
        raise ConfigError(f"char encoder learning_rate must be > 0, got {learning_rate}")
    if not (mse_weight >= 0 and context_weight >= 0):
        raise ConfigError(f"loss weights must be >= 0, got mse_weight {mse_weight}, context_weight {context_weight}")
    if not 0.0 <= heldout_fraction < 1.0:
        raise ConfigError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    if context_loss not in ("target", "shared"):
        raise ConfigError(f"context_loss must be 'target' or 'shared', got {context_loss!r}")
    if not 0.0 < personal_share <= 1.0:
        raise ConfigError(f"personal_share must be in (0, 1], got {personal_share}")
    use_context = contexts is not None and context_weight > 0
    if not (mse_weight > 0 or use_context):
        raise ConfigError("nothing to train: mse_weight is 0 and there is no in-context term "
                          "(give contexts and a context_weight > 0)")
    if not words:
        raise ConfigError("no words to train the char encoder on")


def _train_step(encoder: tf.keras.Model, optimizer, contexts: ContextExamples | None, config: CharEncoderConfig, *,
                use_context: bool, context_loss: str, mse_weight: float, context_weight: float):
    """The compiled step (word batch, context batch) -> (loss, mse, ce) that applies one optimizer update.

    Its arguments are those ``_Batches.epoch`` yields; the context ones are empty without the in-context term.
    """
    length, dim = config.max_bytes + 2, config.embedding_dim
    vocab_size = contexts.table.shape[0] if contexts is not None else 0
    table_t = tf.constant(contexts.table) if use_context and context_loss == "shared" else None

    def context_term(xc, hc, mc, uids, labels):
        if context_loss == "target":
            # only the target's column is the encoder's: softplus(logsumexp(others) - h . enc(target))
            s = tf.reduce_sum(hc * encoder(xc, training=True), axis=-1)
            return tf.reduce_mean(tf.nn.softplus(mc - s))
        # the personal words' columns are their encodings at every position of the batch
        frozen = tf.matmul(hc, table_t, transpose_b=True)  # [B, V]
        frozen += -1e9 * tf.scatter_nd(uids[:, None], tf.ones_like(uids, tf.float32), [vocab_size])
        personal = tf.matmul(hc, encoder(xc, training=True), transpose_b=True)  # [B, personal words]
        logits = tf.concat([frozen, personal], axis=1)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))

    @tf.function(input_signature=[tf.TensorSpec([None, length], tf.int32), tf.TensorSpec([None, dim], tf.float32),
                                  tf.TensorSpec([None, length], tf.int32), tf.TensorSpec([None, dim], tf.float32),
                                  tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None], tf.int32)])
    def train_step(xw, yw, xc, hc, mc, uids, labels):
        with tf.GradientTape() as tape:
            mse = tf.reduce_mean(tf.square(encoder(xw, training=True) - yw))
            ce = context_term(xc, hc, mc, uids, labels) if use_context else tf.constant(0.0)
            loss = mse_weight * mse + context_weight * ce
        grads = tape.gradient(loss, encoder.trainable_variables)
        optimizer.apply_gradients(zip(grads, encoder.trainable_variables))
        return loss, mse, ce

    return train_step


class _Batches:
    """The train step's arguments, batch by batch: MSE word batches and, with the in-context term, position batches.

    In context an epoch is one pass over the shuffled training positions, with word batches drawn from an endless
    stream reshuffled each pass; MSE only, an epoch is exactly one pass over the training words.
    """

    def __init__(self, spellings: np.ndarray, embeddings: np.ndarray, train_index: np.ndarray,
                 positions: ContextPositions, rng: np.random.Generator, *, use_context: bool, context_loss: str,
                 personal_share: float, batch_size: int, context_batch_size: int):
        self.spellings, self.embeddings, self.train_index = spellings, embeddings, train_index
        self.positions, self.rng, self.use_context = positions, rng, use_context
        self.context_loss, self.personal_share = context_loss, personal_share
        self.batch_size, self.context_batch_size = batch_size, context_batch_size
        contexts = positions.contexts
        self.vocab_size = contexts.table.shape[0] if contexts is not None else 0
        self.steps = (math.ceil(len(positions.train_pos) / context_batch_size) if use_context
                      else math.ceil(len(train_index) / batch_size))
        self.empty_x = np.zeros((0, spellings.shape[1]), np.int32)
        self.empty_h = np.zeros((0, embeddings.shape[1]), np.float32)
        self.empty_i, self.empty_f = np.zeros(0, np.int32), np.zeros(0, np.float32)
        self.words = self._word_stream()

    def _word_stream(self):
        while True:  # reshuffled each pass, so every training word is drawn equally often
            yield from self.rng.permutation(self.train_index)

    def epoch(self):
        """Yield the train-step arguments of each of the epoch's ``steps`` batches."""
        order = self.rng.permutation(self.positions.train_pos) if self.use_context else None
        for i in range(self.steps):
            if self.use_context:
                wb = np.fromiter(self.words, np.int64, count=self.batch_size)
                batch = self._context_batch(order[i * self.context_batch_size:(i + 1) * self.context_batch_size])
            else:
                wb = np.fromiter(self.words, np.int64,
                                 count=min(self.batch_size, len(self.train_index) - i * self.batch_size))
                batch = (self.empty_x, self.empty_h, self.empty_f, self.empty_i, self.empty_i)
            yield (self.spellings[wb], self.embeddings[wb], *batch)
        if not self.use_context:
            self.words = self._word_stream()  # MSE only: the next epoch starts a fresh pass

    def _context_batch(self, pos: np.ndarray) -> tuple:
        """(spellings, outputs, others' logsumexp, personal word ids, labels) of the positions ``pos``."""
        p, contexts = self.positions, self.positions.contexts
        hc = contexts.outputs[pos]
        if self.context_loss == "target":
            return self.spellings[p.pos_word[pos]], hc, p.stats["others_lse"][p.row_of[pos]], self.empty_i, self.empty_i
        # the batch's personal words: the targets of its first personal_share of positions (the order is shuffled)
        personal = np.unique(p.pos_word[pos[:max(1, round(self.personal_share * len(pos)))]])
        local = np.searchsorted(personal, p.pos_word[pos])
        is_personal = personal[np.minimum(local, len(personal) - 1)] == p.pos_word[pos]
        labels = np.where(is_personal, self.vocab_size + local, contexts.targets[pos]).astype(np.int32)
        return self.spellings[personal], hc, self.empty_f, p.word_ids[personal].astype(np.int32), labels


def _train_epochs(encoder: tf.keras.Model, train_step, batches: _Batches, evaluate: Evaluator, *, epochs: int,
                  select_by: str, use_context: bool) -> tuple[list[dict], int]:
    """Train and evaluate epoch by epoch, then restore the kept epoch's weights: (history, kept epoch)."""
    history = [{"epoch": 0, **evaluate(encoder)}]
    best, best_weights = None, None
    for epoch in range(1, epochs + 1):
        started = time.time()
        sums = np.zeros(3)
        for batch in batches.epoch():
            sums += [float(v) for v in train_step(*batch)]
        loss, mse, ce = sums / batches.steps
        if not math.isfinite(loss):
            raise ConfigError(f"char encoder training diverged at epoch {epoch} (loss {loss}); "
                              "lower the learning rate")
        row = {"epoch": epoch, "train_loss": loss, "train_mse": mse,
               **({"train_context_ce": ce} if use_context else {}), **evaluate(encoder),
               "seconds": round(time.time() - started, 2)}
        history.append(row)
        score = {"joint": row.get("heldout_joint_ce"), "context": row.get("heldout_context_ce"),
                 "mse": row.get("heldout_mse"), "last": -epoch}[select_by]
        improved = best is None or score < best[0]
        if improved:
            best = (score, epoch)
            best_weights = [w.copy() for w in encoder.get_weights()]
        _LOG.info(_epoch_line(row, epochs, improved and select_by != "last"))
    encoder.set_weights(best_weights)
    return history, best[1]


def _fit_settings(config: CharEncoderConfig, contexts: ContextExamples | None, split: HeldoutSplit,
                  positions: ContextPositions, *, epochs: int, best_epoch: int, batch_size: int,
                  context_batch_size: int, learning_rate: float, mse_weight: float, context_weight: float,
                  context_loss: str, personal_share: float, heldout_fraction: float, seed: int,
                  select_by: str) -> dict:
    """The fit's settings and sizes, numbers only (they ship in the encoder file)."""
    return {"epochs": epochs, "best_epoch": best_epoch, "batch_size": batch_size,
            "context_batch_size": context_batch_size, "learning_rate": learning_rate, "mse_weight": mse_weight,
            "context_weight": context_weight if contexts is not None else 0.0,
            "context_loss_shared": int(context_loss == "shared"), "personal_share": personal_share,
            "heldout_fraction": heldout_fraction, "seed": seed, "words": len(split.is_held),
            "train_words": len(split.train_index), "heldout_words": split.n_held,
            "positions": int(len(contexts.targets)) if contexts is not None else 0,
            "train_positions": int(len(positions.train_pos)), "heldout_positions": int(len(positions.held_pos)),
            "skipped_positions": int(len(contexts.targets) - len(positions.usable)) if contexts is not None else 0,
            # numbers only (the settings ship in the encoder file): 0 last, 1 mse, 2 context, 3 joint
            "selected_by": ["last", "mse", "context", "joint"].index(select_by),
            **{k: getattr(config, k) for k in ("byte_dim", "channels", "kernel", "max_bytes", "embedding_dim")}}


def _epoch_line(row: dict, epochs: int, best: bool) -> str:
    parts = [f"char encoder epoch {row['epoch']}/{epochs}  train loss {row['train_loss']:.4f}"]
    if "heldout_mse" in row:
        parts.append(f"held-out mse {row['heldout_mse']:.5f} (mean row {row['heldout_mse_mean_row']:.5f})")
    if "heldout_context_ce" in row:
        parts.append(f"in-context ce {row['heldout_context_ce']:.3f} "
                     f"(true rows {row['heldout_context_ce_true_row']:.3f})")
        parts.append(f"zero-shot recall@3 {row['heldout_recall_at_3']:.4f} (true rows "
                     f"{row['heldout_recall_at_3_true_row']:.4f})")
    if "heldout_false_top3_rate" in row:
        parts.append(f"false top-3 {row['heldout_false_top3_rate']:.5f} "
                     f"(true rows {row['heldout_false_top3_rate_true_row']:.5f})")
    if "heldout_joint_ce" in row:
        parts.append(f"joint ce {row['heldout_joint_ce']:.3f} (true rows {row['heldout_joint_ce_true_row']:.3f})  "
                     f"joint recall@3 {row['heldout_joint_recall_at_3']:.4f} (true rows "
                     f"{row['heldout_joint_recall_at_3_true_row']:.4f}, removed "
                     f"{row['heldout_joint_recall_at_3_removed']:.4f})")
    return "  ".join(parts) + f"  ({row['seconds'] if 'seconds' in row else 0:.0f}s){'  *best' if best else ''}"


def train_char_encoder(
    words,
    embeddings: np.ndarray,
    *,
    config: CharEncoderConfig = CharEncoderConfig(),
    epochs: int = 30,
    batch_size: int = 128,
    learning_rate: float = 3e-3,
    seed: int = 0,
    word_ids=None,
    contexts: ContextExamples | None = None,
    context_weight: float = 1.0,
    context_loss: str = "shared",
    heldout_fraction: float = 0.0,
) -> tuple[tf.keras.Model, list[float]]:
    """Fit the encoder so encoder(spelling of w) ~= E[w] for in-vocabulary words (and, with ``contexts``,
    so that it predicts them in context); ``fit_char_encoder`` has the options and the full report.

    Args:
      words: spellings (special tokens excluded by the caller).
      embeddings: float [len(words), embedding_dim], rows of the frozen tied table.
    Returns:
      (encoder, per-epoch mean training loss).
    """
    fit = fit_char_encoder(words, embeddings, word_ids=word_ids, contexts=contexts, config=config, epochs=epochs,
                           batch_size=batch_size, learning_rate=learning_rate, context_weight=context_weight,
                           context_loss=context_loss, heldout_fraction=heldout_fraction, seed=seed)
    return fit.encoder, fit.train_losses

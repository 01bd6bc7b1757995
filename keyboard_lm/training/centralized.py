"""Centralized ("server-trained") baseline: the same model trained with SGD on
the pooled training clients (Hard et al. 2018, sec. 4)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from typing import Callable

import numpy as np
import tensorflow as tf

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.length_batches import example_lengths, length_batches, packed, trimmed
from keyboard_lm.data.preprocessing import encode_clients
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError, TrainingDivergedError
from keyboard_lm.evaluation import evaluate_model, summarize
from keyboard_lm.models.run_dir import RunWriteError, drop_metrics_after, load_run, totals_so_far
from keyboard_lm.models.run_guard import hold_run_dir, prepare_run_dir
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import assign_weights, build_model, weights_dict
from keyboard_lm.models.metrics import loss_fn, mixed_target_loss
from keyboard_lm.models.warm_start import describe
from keyboard_lm.text.vocabulary import Vocabulary
from keyboard_lm.training.config import CentralizedConfig, TrainOptions, default_config
from keyboard_lm.training.epoch_checkpoints import EpochCheckpoints
from keyboard_lm.training.loop import KeepBest, RunWriter, average_decay_ramp
from keyboard_lm.training.ngram_teacher import cross_fitted_examples, mixed_targets
from keyboard_lm.training.packed import use_packed_batches
from keyboard_lm.training.sampled_softmax import use_sampled_softmax
from keyboard_lm.log import lines_to

logger = logging.getLogger(__name__)


def make_optimizer(config: CentralizedConfig) -> tf.keras.optimizers.Optimizer:
    """The Keras optimizer ``config`` names, with its rate, clip and (adamw) decoupled weight decay."""
    if config.optimizer == "adamw":
        return tf.keras.optimizers.AdamW(learning_rate=config.learning_rate, weight_decay=config.weight_decay,
                                         clipnorm=config.clipnorm)
    cls = tf.keras.optimizers.SGD if config.optimizer == "sgd" else tf.keras.optimizers.Adam
    return cls(learning_rate=config.learning_rate, clipnorm=config.clipnorm)


class WeightAverage:
    """Exponential moving average of a model's trainable weights, updated after
    every training step (Polyak & Juditsky 1992; the averaged iterate of Merity et
    al. 2018's NT-ASGD).  The decay ramps up as min(decay, (1 + t) / (10 + t)), as
    in ``tf.train.ExponentialMovingAverage`` with ``num_updates``, so the first
    epoch's average is not dominated by the initialization.

    The update runs inside the model's compiled training step (``train_step`` is
    wrapped when the average is made, before the first ``fit``), not in a
    per-batch callback: a callback's separate graph call cost as much CPU as a
    small model's whole step."""

    def __init__(self, model: tf.keras.Model, decay: float):
        self.decay = decay
        self._vars = list(model.trainable_variables)
        self._shadow = [tf.Variable(v, trainable=False) for v in self._vars]
        self._steps = tf.Variable(0.0, trainable=False)
        step = model.train_step

        def train_step(data):
            logs = step(data)
            self._update()
            return logs

        model.train_step = train_step
        model.train_function = None  # the next fit builds its step with the update inside

    @property
    def variables(self) -> list:
        """What a checkpoint keeps of the average: the shadow weights and the step count."""
        return [*self._shadow, self._steps]

    def _update(self):
        self._steps.assign_add(1.0)
        d = tf.minimum(self.decay, average_decay_ramp(self._steps))
        for shadow, var in zip(self._shadow, self._vars):
            shadow.assign(d * shadow + (1.0 - d) * var)

    @contextlib.contextmanager
    def averaged(self):
        """The model computes with the averaged weights inside the block; training's return after."""
        current = [v.numpy() for v in self._vars]
        for var, shadow in zip(self._vars, self._shadow):
            var.assign(shadow)
        try:
            yield
        finally:
            for var, value in zip(self._vars, current):
                var.assign(value)


def train_centralized(corpus: Corpus, run_dir: str, model_config: ModelConfig | None = None,
                      config: CentralizedConfig | None = None, split: SplitConfig = SplitConfig(),
                      options: TrainOptions = TrainOptions()) -> dict:
    """Train on the pooled training clients, evaluate held-out clients each epoch.

    With ``config.validation_fraction`` > 0 a share of the training clients
    is set aside (never trained on); after each epoch their recall@3 decides
    whether the epoch is the best so far (its weights are what the run
    keeps), whether to decay the learning rate, and when to stop.  The
    vocabulary is built on all training clients either way, so runs with and
    without validation share it.  Held-out clients are reported every epoch
    but never used for a decision.

    Writes the run directory (see ``keyboard_lm.models.run_dir``) after
    every epoch, holding its lock meanwhile, and returns the held-out
    evaluation of the kept weights. ``model_config`` None is ``ModelConfig()``;
    its ``quantization`` makes the training quantization-aware, and its
    ``vocab_size`` is replaced by the vocabulary's (``options.vocab_size`` words,
    plus a base's). ``options`` (``training.config.TrainOptions``, the same
    fields ``train_federated``'s ``RunOptions`` starts with): ``run_dir`` must be
    new or empty unless ``overwrite`` (see ``models.run_guard.prepare_run_dir``);
    ``data_source`` (path and format) is recorded with the corpus fingerprint so
    ``eval`` scores the same corpus by default; ``init`` starts from another
    run's weights (``models.warm_start``): the model type and sizes must be the
    base's, and run.json records the start in ``init_from``. ``config`` None is
    ``training.config.default_config``: the from-scratch recipe, or its
    fine-tuning variant when ``init`` is given. Progress lines go to ``logging``
    (``options.log``: deprecated, a callable that takes them instead).
    A federated ``RunOptions`` is refused when it sets a federated run's own fields.
    """
    _refuse_federated_options(options)
    with lines_to(options.log):
        return _train(corpus, run_dir, model_config or ModelConfig(), config, split, options)


def _refuse_federated_options(options: TrainOptions) -> None:
    """A ``RunOptions`` (a ``TrainOptions`` too) whose federated fields are set would have them silently unused."""
    shared = {f.name for f in dataclasses.fields(TrainOptions)}
    set_here = [f.name for f in dataclasses.fields(options)
                if f.name not in shared and getattr(options, f.name) != f.default]
    if set_here:
        raise ConfigError(f"train_centralized: option(s) {', '.join(set_here)} apply only to federated training")


def _train(corpus, run_dir, sizes: ModelConfig, config, split, options: TrainOptions) -> dict:
    init = options.init
    if config is None:
        config = default_config(warm_start=init is not None)
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    if config.validation_fraction:
        fit_ids, val_ids = validation_clients(train_ids, config.validation_fraction, split.seed)
    else:
        fit_ids, val_ids = train_ids, []
    if init is not None:
        init.check_model(sizes.model_type, sizes.embedding_dim, sizes.units)
    if config.batching == "packed" and sizes.model_type == "gru":
        raise ConfigError("--batching packed needs the CIFG, SI-CIFG or LSTM cell (its state is reset inside a row)")
    guard = prepare_run_dir(run_dir, "train --centralized", overwrite=options.overwrite, log=logger.info)
    try:
        vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), options.vocab_size)
        if init is not None:
            vocab = init.vocabulary(vocab, options.vocab_size)
        model_config = dataclasses.replace(sizes, vocab_size=len(vocab))
        model = _compiled_model(model_config, config)
        if init is not None:
            assign_weights(model, init.initial_weights(vocab, config.seed))
            logger.info(describe(init.record(vocab)))
        teacher = config.teacher()
        data, n_examples = _training_data(corpus, fit_ids, vocab, config, teacher)
        info = {
            "trainer": "centralized", "command": "train --centralized", "run_id": guard.run_id,
            "data": {"corpus": corpus.name, "source": options.data_source or {},
                     "fingerprint": corpus.fingerprint(),
                     "train_clients": len(train_ids), "validation_clients": len(val_ids),
                     "heldout_clients": len(heldout_ids),
                     "train_examples": n_examples, "split": dataclasses.asdict(split)},
            "hyperparameters": dataclasses.asdict(config),
            "ngram_teacher": dataclasses.asdict(teacher) if teacher.weight else None,
            "parameters": model.count_params(),
            "init_from": init.record(vocab) if init is not None else None,
        }
        qat = f"quantization-aware ({sizes.quantization}), " if sizes.quantization != "none" else ""
        val_note = f", {len(val_ids)} more for validation" if val_ids else ""
        logger.info(f"centralized {sizes.model_type}: {model.count_params():,} parameters, V={len(vocab):,}, {qat}"
            f"{n_examples:,} examples from {len(fit_ids)} training clients{val_note}")
        writer = RunWriter(run_dir, model_config, vocab, info)
        average = WeightAverage(model, config.weight_average) if config.weight_average else None
        checkpoints = EpochCheckpoints(run_dir, model, average, guard)
        return _epochs(model, average, checkpoints, data, n_examples, corpus, heldout_ids, val_ids, vocab, config,
                       writer)
    finally:
        guard.release()


def resume_centralized(corpus: Corpus, run_dir: str, epochs: int | None = None, log=None,
                       batching: str | None = None) -> dict:
    """Continue a centralized run from the checkpoint of its last finished epoch.

    Everything comes from the run: its recipe (run.json's hyperparameters), split, vocabulary and model,
    and from its checkpoint the weights, the optimizer's state, the weight average, the learning rate,
    the validation record (best epoch, epochs without gain) and where the shuffled data order stands, so
    the epochs go on as they would have without the stop (with dropout, its masks are drawn anew).
    ``epochs`` (None: the run's own) is the epoch to reach. ``corpus`` must be the one the run trained
    on. ``batching`` may swap ``padded`` and ``packed`` (the same steps on fewer positions) from here on; any
    other change of the run's settings is refused. A damaged newest checkpoint is skipped for the newest
    intact one; a run stopped after its last epoch's checkpoint and before its end is finished. Returns the
    held-out evaluation of the weights the run keeps.
    """
    with lines_to(log):
        guard = hold_run_dir(run_dir)  # refused at once while another run trains here
        try:
            return _resume(corpus, run_dir, epochs, guard, batching)
        finally:
            guard.release()


#: Batchings that train the same steps, so a resumed run may go on with either.
SAME_STEPS = {"padded", "packed"}


def _resume(corpus: Corpus, run_dir: str, epochs: int | None, guard, batching: str | None = None) -> dict:
    run = load_run(run_dir)
    record = run.record
    # run.json as it is, rewritten by the writer; what is read of it is read through the record.
    info = {k: v for k, v in run.info.items() if k not in ("format", "model", "text_spec", "vocab_sha256")}
    if record.trainer != "centralized":
        raise ConfigError(f"{run_dir}: --centralized --resume needs a centralized run, this one is "
                          f"{record.trainer!r}")
    # A run recorded before ``batching`` existed trained on padded batches, and resumes on them.
    config = CentralizedConfig(**{"batching": "padded", **record.hyperparameters,
                                  **({"epochs": epochs} if epochs else {})})
    if batching is not None and batching != config.batching:
        if {batching, config.batching} != SAME_STEPS:
            raise ConfigError(f"{run_dir}: the run trained with --batching {config.batching}; a resumed run may only "
                              "swap padded and packed (the same steps), not change to or from length")
        logger.info(f"resume: --batching {config.batching} -> {batching} from here on (the same steps)")
        config = dataclasses.replace(config, batching=batching)
    fingerprint = record.data_fingerprint
    if fingerprint and fingerprint != corpus.fingerprint():
        raise ConfigError(f"{run_dir}: {corpus.name} is not the corpus this run trained on (fingerprint "
                          f"{corpus.fingerprint()[:12]} != {fingerprint[:12]}); give its --data and --format")
    model = _compiled_model(run.model_config, config)
    average = WeightAverage(model, config.weight_average) if config.weight_average else None
    checkpoints = EpochCheckpoints(run_dir, model, average, guard)
    state = checkpoints.restore_newest(run_dir)
    # Runs made before "finished" was recorded ended with their last epoch's record.
    finished = record.finished and record.epochs_done == state["epoch"]
    if state["stopped"] and finished:
        raise ConfigError(f"{run_dir}: the run stopped at epoch {state['epoch']} after {state['stale']} epochs "
                          f"without validation gain (--patience {config.patience}); there is nothing to resume")
    if state["epoch"] > config.epochs or (state["epoch"] == config.epochs and finished):
        raise ConfigError(f"{run_dir}: the run has trained {state['epoch']} epochs; give --epochs above "
                          f"{state['epoch']} to train further")
    split = SplitConfig(**record.split)
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    fit_ids, val_ids = (validation_clients(train_ids, config.validation_fraction, split.seed)
                        if config.validation_fraction else (train_ids, []))
    data, n_examples = _training_data(corpus, fit_ids, run.vocab, config, config.teacher())
    drop_metrics_after(run_dir, "epoch", state["epoch"])
    info["hyperparameters"] = dataclasses.asdict(config)
    if state["stopped"] or state["epoch"] == config.epochs:
        logger.info(f"resume: the run stopped after its last epoch's checkpoint (epoch {state['epoch']}) and before "
            "its end; finishing it")
    elif state["kept_epoch"] is None:
        logger.info(f"resume: no epoch of {config.epochs} done yet")
    else:
        logger.info(f"resume: epoch {state['epoch']} of {config.epochs} done (kept: epoch {state['kept_epoch']}, "
            f"learning rate {state['learning_rate']:g})")
    partial = None
    if not state["stopped"] and state["epoch"] < config.epochs:
        partial = checkpoints.restore_partial(state["epoch"] + 1, state["checkpoint"])
        if partial is not None:
            logger.info(f"resume: epoch {partial['epoch']} goes on after {partial['batches']:,} of its batches")
    else:
        checkpoints.clear_partial()
    writer = RunWriter(run_dir, run.model_config, run.vocab, info)
    writer.update({"hyperparameters": info["hyperparameters"]})  # the settings it goes on with, also if no epoch is kept
    return _epochs(model, average, checkpoints, data, n_examples, corpus, heldout_ids, val_ids, run.vocab, config,
                   writer, state, partial)


def _compiled_model(model_config: ModelConfig, config: CentralizedConfig) -> tf.keras.Model:
    """The model of ``config``'s seed, compiled with its optimizer and loss (and sampled softmax)."""
    tf.keras.utils.set_random_seed(config.seed)
    model = build_model(model_config, dropout=config.dropout, weight_drop=config.weight_drop)
    model.compile(optimizer=make_optimizer(config), loss=mixed_target_loss if config.teacher().weight else loss_fn())
    if config.batching == "packed":
        use_packed_batches(model, config.dropout, config.sampled_softmax)
    elif config.sampled_softmax:
        use_sampled_softmax(model, config.sampled_softmax)
    return model


def _training_data(corpus: Corpus, fit_ids, vocab: Vocabulary, config: CentralizedConfig, teacher, log=None):
    """(epoch -> that epoch's shuffled batches, the examples' count): next words, or mixed with the n-gram
    teacher's. Each epoch's order depends on the seed and the epoch only (not on how many times the data
    was read before, which Keras does not promise), so a resumed run trains on the order it would have."""
    if teacher.weight:
        sentences = {cid: [vocab.encode(s) for s in corpus.sentences([cid])] for cid in fit_ids}
        ex = cross_fitted_examples(sentences, len(vocab), config.seq_len, teacher, log=log or logger.info)
        targets = mixed_targets(ex["y"], ex["teacher_ids"], ex["teacher_probs"], teacher.weight)
        x, y = ex["x"], targets
        examples = tf.data.Dataset.from_tensor_slices((x, y))  # ([S], [S, k + 1, 2])
        n_examples = len(x)
    else:
        # The clients' examples in fit_ids order, each client's in its text's order; encoded in batches and
        # kept for the next run of this process on the same text (a sweep, the test suite).
        encoded = encode_clients({cid: corpus.clients[cid] for cid in fit_ids}, vocab, config.seq_len)
        none = np.zeros((0, config.seq_len), np.int32)
        x, y = (np.concatenate([encoded[cid][i] for cid in fit_ids] or [none]) for i in (0, 1))
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        n_examples = len(x)

    lengths = example_lengths(x) if config.batching != "padded" else None

    def epoch_data(epoch: int) -> tf.data.Dataset:
        seed = int(np.random.RandomState([config.seed, epoch]).randint(2**31 - 1))
        if config.batching == "length":
            return _length_batched(x, y, lengths, config.batch_size, seed)
        if config.batching == "packed":
            return _packed(x, y, lengths, config.batch_size, seed)
        return examples.shuffle(n_examples, seed=seed, reshuffle_each_iteration=False).batch(config.batch_size)

    return epoch_data, n_examples


def _packed(x: np.ndarray, y: np.ndarray, lengths: np.ndarray, batch_size: int, seed: int):
    """One epoch of the padded batches (the same examples in the same order: the indices shuffled as the
    padded path shuffles its examples), each packed into full rows (``data.length_batches.packed``)."""
    order = tf.data.Dataset.range(len(x)).shuffle(len(x), seed=seed, reshuffle_each_iteration=False)
    batches = list(order.batch(batch_size).as_numpy_iterator())
    spec = ((tf.TensorSpec((None, x.shape[1]), x.dtype), tf.TensorSpec((None, x.shape[1]), tf.float32)),
            tf.TensorSpec((None, x.shape[1], *y.shape[2:]), y.dtype))
    data = tf.data.Dataset.from_generator(lambda: (packed(x, y, lengths, b) for b in batches),
                                          output_signature=spec)
    return data.apply(tf.data.experimental.assert_cardinality(len(batches)))


def _length_batched(x: np.ndarray, y: np.ndarray, lengths: np.ndarray, batch_size: int, seed: int):
    """One epoch of ``data.length_batches``: batches of similar-length examples, trailing pads trimmed."""
    batches = length_batches(lengths, batch_size, seed)
    spec = (tf.TensorSpec((None, None), x.dtype), tf.TensorSpec((None, None, *y.shape[2:]), y.dtype))
    data = tf.data.Dataset.from_generator(lambda: trimmed(x, y, lengths, batches), output_signature=spec)
    return data.apply(tf.data.experimental.assert_cardinality(len(batches)))  # partial checkpoints count on it


class _PartialCheckpoints(tf.keras.callbacks.Callback):
    """Inside an epoch of ``n_batches`` batches, the first ``done`` of them already trained (mean loss ``loss``,
    in ``seconds``): a checkpoint whenever ``every`` seconds have passed since the last one (none after the
    epoch's last batch: the epoch's own checkpoint follows), and the epoch's mean training loss at its end."""

    def __init__(self, checkpoints: EpochCheckpoints, epoch: int, n_batches: int, every: float,
                 done: int = 0, loss: float = 0.0, seconds: float = 0.0):
        super().__init__()
        self._supports_tf_logs = True  # the loss is read (and synced) only when a checkpoint is written
        self.checkpoints, self.epoch, self.n_batches, self.every = checkpoints, epoch, n_batches, every
        self.done, self.loss, self.seconds = done, loss, seconds
        self.start = self.last = time.time()

    def on_train_batch_end(self, batch, logs=None):
        now = time.time()
        batches = self.done + batch + 1
        if not self.every or now - self.last < self.every or batches >= self.n_batches:
            return
        mean = (self.loss * self.done + float(logs["loss"]) * (batch + 1)) / batches  # weighted by batches
        seconds = self.seconds + now - self.start
        self.checkpoints.save_partial({"epoch": self.epoch, "batches": batches, "loss": mean,
                                       "seconds": round(seconds, 2)})
        self.last = time.time()
        logger.info(f"epoch {self.epoch}: {batches:,} of {self.n_batches:,} batches  train loss {mean:.3f}  "
                    f"({seconds:.0f}s, checkpoint saved)")

    def epoch_loss(self, fit_loss: float) -> float:
        """The whole epoch's mean training loss, from ``fit``'s mean over the batches after ``done``."""
        return (self.loss * self.done + fit_loss * (self.n_batches - self.done)) / self.n_batches


def _initial_state(lr: float) -> dict:
    """The checkpoint state before the first epoch (a partial checkpoint of epoch 1 resumes from it)."""
    return {"epoch": 0, "learning_rate": lr, "best": None, "stale": 0, "kept_epoch": None, "kept_metrics": None,
            "stopped": False}


def _epochs(model, average, checkpoints: EpochCheckpoints, data: Callable, n_examples, corpus, heldout_ids, val_ids,
            vocab, config, writer: RunWriter, resumed: dict | None = None, partial: dict | None = None) -> dict:
    """The epochs: train, evaluate (with the averaged weights), keep the best by validation, decay, stop;
    a checkpoint after each, then run.json, and with ``config.checkpoint_seconds`` checkpoints inside them.
    ``resumed``: the restored checkpoint's state to go on from (None: a new run); ``partial``: the restored
    state inside the epoch after it (its batches done). Marks the run finished at the end."""
    keep = KeepBest(bool(val_ids), config.lr_decay, config.patience, step_key="epoch")
    kept = None  # (epoch, weights, held-out result) of the epoch the run keeps; no result: the one on disk
    kept_metrics = None  # run.json's final_metrics: the kept epoch's held-out metrics
    lr, first, elapsed_before, stopped = config.learning_rate, 1, 0.0, False
    if resumed is not None:
        keep.best, keep.stale = resumed["best"], resumed["stale"]
        kept, kept_metrics = (resumed["kept_epoch"], None, None), resumed.get("kept_metrics")
        lr, first, elapsed_before = resumed["learning_rate"], resumed["epoch"] + 1, totals_so_far(writer.run_dir)[1]
        model.optimizer.learning_rate.assign(lr)
        stopped = resumed["stopped"]
        if stopped:
            first = config.epochs + 1  # stopped early: only the run's end is left
        _catch_up(writer, resumed, model, average)
    elif config.checkpoint_seconds:
        # Epoch 0: what a stop inside the first epoch resumes from (with run.json naming no epoch yet).
        checkpoints.save(_initial_state(lr))
        writer.save(weights_dict(model), {"epochs_done": 0, "finished": False})
    if partial is not None:
        elapsed_before += partial["seconds"]
    started = time.time() - elapsed_before
    saved = first - 1  # the newest epoch with a checkpoint
    try:
        for epoch in range(first, config.epochs + 1):
            start = time.time()
            epoch_data = data(epoch)
            begun = partial if partial is not None and partial["epoch"] == epoch else {}
            progress = _PartialCheckpoints(checkpoints, epoch, int(epoch_data.cardinality()),
                                           config.checkpoint_seconds, begun.get("batches", 0), begun.get("loss", 0.0),
                                           begun.get("seconds", 0.0))
            history = model.fit(epoch_data.skip(progress.done), epochs=1, verbose=0, callbacks=[progress])
            train_loss = progress.epoch_loss(float(history.history["loss"][-1]))
            if not math.isfinite(train_loss):
                raise TrainingDivergedError(f"training diverged at epoch {epoch} (loss {train_loss}); "
                                            f"the best weights so far are in {writer.run_dir}")
            with average.averaged() if average else contextlib.nullcontext():
                result = evaluate_model(model, corpus, heldout_ids, vocab, config.seq_len)
                pooled = result["pooled"]
                row = {"epoch": epoch, "train_loss": train_loss, "learning_rate": lr}
                val = evaluate_model(model, corpus, val_ids, vocab, config.seq_len)["pooled"] if val_ids else None
                if val is not None:
                    row.update(val_loss=val["loss"], val_recall_at_3=val["recall_at_3"])
                verdict = keep.observe(epoch, val, pooled)
                improved = verdict.improved or not val_ids  # no validation: the last epoch is kept
                if improved:
                    kept, kept_metrics = (epoch, weights_dict(model), result), pooled
            row.update({"seconds": round(time.time() - start + progress.seconds, 2),
                        "elapsed_seconds": round(time.time() - started, 2),
                        "examples_seen": epoch * n_examples, "best_epoch": kept[0],
                        **{k: pooled[k] for k in ("loss", "perplexity", "recall_at_1", "recall_at_3",
                                                  "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate", "num_events")}})
            writer.row("epoch", row)
            if verdict.decay:
                lr *= config.lr_decay
                model.optimizer.learning_rate.assign(lr)
            # The checkpoint first: run.json never names an epoch that has none.
            checkpoints.save({"epoch": epoch, "learning_rate": lr, "best": keep.best, "stale": keep.stale,
                              "kept_epoch": kept[0], "kept_metrics": kept_metrics, "stopped": verdict.stop})
            checkpoints.clear_partial()
            saved = epoch
            if improved:
                writer.save(kept[1], {"epochs_done": epoch, "best_epoch": epoch, "best": keep.best,
                                      "final_metrics": pooled, "finished": False})
            else:
                writer.update({"epochs_done": epoch, "finished": False})  # the kept weights stay the best epoch's
            val_text = f"  val recall@3 {row['val_recall_at_3']:.4f}" if val_ids else ""
            logger.info(f"epoch {epoch}/{config.epochs}  train loss {train_loss:.3f}{val_text}  held-out: "
                f"{summarize(result)}  ({row['seconds']:.0f}s){'  *best' if improved and val_ids else ''}")
            if verdict.stop:
                stopped = True
                logger.info(f"stopping: no validation improvement for {keep.stale} epochs; keeping epoch {kept[0]}")
                break
        writer.update({**({"stopped_early": True} if stopped else {}), "finished": True})
    except RunWriteError as e:
        raise RunWriteError(f"{e}; the run is kept as of epoch {saved} (--resume continues it once the file can "
                            "be written)") from None
    if kept[2] is None:  # kept before a resume and not bettered since: its weights are the run's
        assign_weights(model, load_run(writer.run_dir).weights)
        return evaluate_model(model, corpus, heldout_ids, vocab, config.seq_len)
    return kept[2]


def _catch_up(writer: RunWriter, state: dict, model, average) -> None:
    """run.json as of the checkpoint resumed from, when the run stopped between that checkpoint and run.json:
    its epoch count, and, when that epoch is the kept one, its (averaged) weights, best record and metrics."""
    epoch, done = state["epoch"], writer.info.get("epochs_done") or 0
    if done >= epoch:
        return
    logger.info(f"resume: run.json named epoch {done}; written again as of epoch {epoch}'s checkpoint")
    fields = {"epochs_done": epoch, "finished": False}
    if state["kept_epoch"] != epoch:
        writer.update(fields)
        return
    with average.averaged() if average else contextlib.nullcontext():
        weights = weights_dict(model)
    writer.save(weights, {**fields, "best_epoch": epoch, "best": state["best"],
                          "final_metrics": state.get("kept_metrics")})

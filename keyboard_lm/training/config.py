"""Hyper-parameters of centralized training, and how any run starts (``TrainOptions``); importable without
TensorFlow.

The defaults here are the recipe: ``keyboard-lm train --centralized`` reads
them for its flags and help, and a Python caller of
``keyboard_lm.training.centralized.train_centralized`` gets the same.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

from keyboard_lm.config_checks import check_fields, check_range
from keyboard_lm.data.limits import check_magnitude, check_seed
from keyboard_lm.errors import ConfigError
from keyboard_lm.training.ngram_teacher import TeacherConfig

if TYPE_CHECKING:
    from keyboard_lm.models.warm_start import WarmStart


#: How ``train --centralized`` batches its examples (``CentralizedConfig.batching``).
BATCHING = ("padded", "length", "packed")


@dataclasses.dataclass(frozen=True)
class CentralizedConfig:
    """Hyper-parameters of centralized training; the defaults are the best
    recipe measured on held-out Tiny Shakespeare roles (docs/training.md).

    Attributes:
      optimizer: ``sgd`` (Hard et al.'s server baseline), ``adam`` or
        ``adamw`` (Adam with decoupled weight decay, Loshchilov & Hutter 2019).
      learning_rate: initial step size.
      epochs: most passes over the pooled training examples.
      batch_size: examples per step.
      seq_len: tokens per example (20).
      clipnorm: gradient norm clip (None: no clipping).
      dropout: dropout on embedding and cell outputs (Zaremba et al. 2014).
      weight_decay: decoupled weight decay (``adamw`` only).
      weight_drop: DropConnect on the cell's recurrent weights (Merity et al. 2018).
      weight_average: decay of an exponential moving average of the weights,
        updated every step; when > 0 the averaged weights are what each epoch
        evaluates and what the run keeps (0: off).
      validation_fraction: share of the *training* clients set aside to pick
        the best epoch, decay the learning rate and stop early; 0 trains on
        all of them and keeps the last epoch.
      lr_decay: factor applied to the learning rate after an epoch that does
        not improve validation recall@3 (1.0: constant).
      patience: epochs without validation improvement before stopping.
      ngram_teacher: weight of a cross-fitted Kneser-Ney 5-gram teacher in
        each training target (``training.ngram_teacher``; 0: plain one-hot).
      seed: seed of initialization, shuffling and the teacher's folds.
      sampled_softmax: training computes the softmax over the target and this
        many sampled words (log-uniform over the frequency-sorted vocabulary,
        Jean et al. 2015) instead of all V: for pretraining on large corpora,
        where the V-wide output is most of a step's cost.  Evaluation always
        uses the full softmax. 0: full softmax (the default).
      batching: ``padded`` (the default): batches of ``batch_size`` examples,
        each padded to ``seq_len``; ``length`` groups examples of similar
        length and trims each batch's trailing pads, about ``batch_size`` x
        the mean length in real targets per batch (``data.length_batches``):
        faster, level on held-out users at batch 8, behind per epoch at batch
        256 with few steps an epoch (docs/training.md); ``packed`` lays each
        padded batch's examples end to end in full rows with the state reset
        at each (``training.packed``): the same examples, targets and loss per
        step as ``padded``, on fewer computed positions.
      checkpoint_seconds: also checkpoint inside an epoch whenever this many
        seconds have passed since the last save (weights, optimizer and
        average, and how many of the epoch's batches are done), so a stopped
        run resumes mid-epoch on the same batch order (0: after each epoch
        only). Pretraining epochs last tens of minutes.
    """

    optimizer: str = "adam"
    learning_rate: float = 0.002
    epochs: int = 40
    batch_size: int = 8
    seq_len: int = 20
    clipnorm: float | None = 5.0
    dropout: float = 0.4
    weight_decay: float = 0.0
    weight_drop: float = 0.5
    weight_average: float = 0.999
    validation_fraction: float = 0.1
    lr_decay: float = 0.5
    patience: int = 3
    ngram_teacher: float = 0.25
    seed: int = 0
    sampled_softmax: int = 0
    batching: str = "padded"
    checkpoint_seconds: float = 600.0

    def __post_init__(self):
        if self.batching not in BATCHING:
            raise ConfigError(f"unknown batching {self.batching!r}; choose {' or '.join(BATCHING)}")
        if self.optimizer not in ("sgd", "adam", "adamw"):
            raise ConfigError(f"unknown optimizer {self.optimizer!r}; choose sgd, adam or adamw")
        # Finite and below MAGNITUDE_MAX: beyond float32's range a rate or a norm is inf inside Keras.
        check_magnitude("learning_rate", self.learning_rate)
        check_magnitude("weight_decay", self.weight_decay, zero_ok=True)
        check_seed("seed", self.seed)
        check_fields(self, ("epochs", "batch_size", "seq_len", "patience"), 1)
        check_fields(self, ("dropout", "weight_drop", "weight_average"), 0, 1, high_open=True)
        if self.weight_decay and self.optimizer != "adamw":
            raise ConfigError("weight_decay needs --optimizer adamw (decoupled decay)")
        check_range("validation_fraction", self.validation_fraction, 0, 1, high_open=True)
        check_range("checkpoint_seconds", self.checkpoint_seconds, 0, 1e9, high_open=True)
        check_range("lr_decay", self.lr_decay, 0, 1, low_open=True)
        if self.clipnorm is not None:
            check_magnitude("clipnorm", self.clipnorm)
        check_range("sampled_softmax", self.sampled_softmax, 0)
        if self.sampled_softmax and self.ngram_teacher:
            raise ConfigError("sampled_softmax trains on one-hot targets; it cannot mix in an n-gram teacher "
                              "(set ngram_teacher to 0)")
        # named here as the field (and flag) a user sets
        check_range("ngram_teacher", self.ngram_teacher, 0, 1, high_open=True)
        self.teacher()  # validates the rest of the teacher's settings

    def teacher(self) -> TeacherConfig:
        """The n-gram teacher's settings (its other parts at their documented defaults)."""
        return TeacherConfig(weight=self.ngram_teacher, seed=self.seed)


#: What a run that starts from a base (``--init-from``) changes in the recipe
#: above: few epochs and light regularization. The from-scratch recipe's
#: dropout 0.4 and weight drop 0.5 fight the phrases a fine-tuned model must
#: learn from its users; on the SpamAssassin mail from the shipped base they
#: held held-out recall@3 at 0.2072 after 2 epochs, against 0.2352 with
#: dropout 0.1 and no weight drop (docs/training.md, "Centralized from the
#: base"). The epoch cap keeps a 700k-word corpus within 30 minutes on 2 cores.
FINE_TUNE = {"epochs": 4, "dropout": 0.1, "weight_drop": 0.0}


def default_config(warm_start: bool = False) -> CentralizedConfig:
    """The recipe ``train --centralized`` runs with no recipe flag: ``CentralizedConfig()``
    from random weights, with ``FINE_TUNE`` applied when the run starts from a base."""
    return CentralizedConfig(**FINE_TUNE) if warm_start else CentralizedConfig()


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How a run starts and what it records, for both trainers; everything but the model and the recipe.

    ``train_centralized`` takes these; ``train_federated`` takes ``federated.run_start.RunOptions``, which
    extends them with what only a federated run has (resume through the trainer, DP, workers, the audit).

    Attributes:
      init: start from another run's weights (``models.warm_start``): the
        model type and sizes must be the base's; run.json records the start
        in ``init_from``.
      vocab_size: the vocabulary of a fresh run (before ``init`` adds its words);
        the model's ``vocab_size`` is the vocabulary's final size.
      data_source: the corpus's path and format, recorded for ``eval``.
      overwrite: replace a run already in ``run_dir``.
      log: deprecated; the run's progress lines go to ``logging`` (``keyboard_lm`` loggers), and a callable
        given here receives them instead (``keyboard_lm.log.lines_to``).
    """

    init: WarmStart | None = None
    vocab_size: int = 10_000
    data_source: dict | None = None
    overwrite: bool = False
    log: Callable | None = None

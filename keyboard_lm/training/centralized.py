"""Centralized ("server-trained") baseline: the same model trained with SGD on
the pooled training clients (Hard et al. 2018, sec. 4)."""

from __future__ import annotations

import dataclasses
import math
import time

import tensorflow as tf

from keyboard_lm.data.corpora import Corpus
from keyboard_lm.data.preprocessing import texts_to_examples, vocab_table
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import ConfigError, TrainingDivergedError
from keyboard_lm.evaluation import evaluate_model, summarize
from keyboard_lm.models.checkpoint import append_metrics_row, prepare_run_dir, save_run
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import build_model, weights_dict
from keyboard_lm.models.metrics import loss_fn
from keyboard_lm.text.vocabulary import Vocabulary


@dataclasses.dataclass(frozen=True)
class CentralizedConfig:
    """Hyper-parameters of centralized training.

    Attributes:
      optimizer: ``sgd`` (Hard et al.'s server baseline) or ``adam``.
      learning_rate: step size.
      epochs: passes over the pooled training examples.
      batch_size: examples per step.
      seq_len: tokens per example (20).
      clipnorm: gradient norm clip (None: no clipping).
      seed: seed of initialization and shuffling.
    """

    optimizer: str = "sgd"
    learning_rate: float = 1.0
    epochs: int = 5
    batch_size: int = 32
    seq_len: int = 20
    clipnorm: float | None = 5.0
    seed: int = 0

    def __post_init__(self):
        if self.optimizer not in ("sgd", "adam"):
            raise ConfigError(f"unknown optimizer {self.optimizer!r}; choose sgd or adam")
        if not self.learning_rate > 0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}")
        for name in ("epochs", "batch_size", "seq_len"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")

    def make_optimizer(self):
        cls = tf.keras.optimizers.SGD if self.optimizer == "sgd" else tf.keras.optimizers.Adam
        return cls(learning_rate=self.learning_rate, clipnorm=self.clipnorm)


def train_centralized(corpus: Corpus, run_dir: str, model_type: str = "cifg", vocab_size: int = 10_000,
                      embedding_dim: int = 96, units: int = 670,
                      config: CentralizedConfig = CentralizedConfig(),
                      split: SplitConfig = SplitConfig(), log=print, quantization: str = "none",
                      data_source: dict | None = None, overwrite: bool = False) -> dict:
    """Train on the pooled training clients, evaluate held-out clients each epoch.

    Writes the run directory (see ``keyboard_lm.models.checkpoint``) after
    every epoch and returns the final held-out evaluation.  ``run_dir`` must
    be new or empty unless ``overwrite`` (see ``prepare_run_dir``);
    ``data_source`` (path and format) is recorded with the corpus fingerprint
    so ``eval`` scores the same corpus by default.
    """
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    prepare_run_dir(run_dir, "train --centralized", overwrite=overwrite)
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), vocab_size)
    model_config = ModelConfig(model_type, len(vocab), embedding_dim, units, quantization)
    tf.keras.utils.set_random_seed(config.seed)
    model = build_model(model_config)
    model.compile(optimizer=config.make_optimizer(), loss=loss_fn())

    texts = [t for cid in train_ids for t in corpus.clients[cid]]
    examples = texts_to_examples(tf.data.Dataset.from_tensor_slices(texts), vocab_table(vocab), config.seq_len)
    examples = examples.cache()
    n_examples = sum(1 for _ in examples)
    data = examples.shuffle(n_examples, seed=config.seed, reshuffle_each_iteration=True).batch(config.batch_size)
    info = {
        "trainer": "centralized", "command": "train --centralized",
        "data": {"corpus": corpus.name, "source": data_source or {}, "fingerprint": corpus.fingerprint(),
                 "train_clients": len(train_ids), "heldout_clients": len(heldout_ids),
                 "train_examples": n_examples, "split": dataclasses.asdict(split)},
        "hyperparameters": dataclasses.asdict(config),
        "parameters": model.count_params(),
    }
    qat = f"quantization-aware ({quantization}), " if quantization != "none" else ""
    log(f"centralized {model_type}: {model.count_params():,} parameters, V={len(vocab):,}, {qat}"
        f"{n_examples:,} examples from {len(train_ids)} training clients")
    result = None
    for epoch in range(1, config.epochs + 1):
        start = time.time()
        history = model.fit(data, epochs=1, verbose=0)
        train_loss = float(history.history["loss"][-1])
        if not math.isfinite(train_loss):
            raise TrainingDivergedError(f"training diverged at epoch {epoch} (loss {train_loss}); "
                                  f"the last good weights are in {run_dir}")
        result = evaluate_model(model, corpus, heldout_ids, vocab, config.seq_len)
        pooled = result["pooled"]
        row = {"epoch": epoch, "train_loss": train_loss, "seconds": round(time.time() - start, 2),
               **{k: pooled[k] for k in ("loss", "perplexity", "recall_at_1", "recall_at_3",
                                         "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate", "num_events")}}
        append_metrics_row(run_dir, row)
        save_run(run_dir, model_config, vocab, weights_dict(model),
                 {**info, "epochs_done": epoch, "final_metrics": pooled})
        log(f"epoch {epoch}/{config.epochs}  train loss {train_loss:.3f}  held-out: {summarize(result)}"
            f"  ({row['seconds']:.0f}s)")
    return result


"""Warm start: a run that begins from another run's weights (no TensorFlow here).

``train --init-from RUN_DIR`` (or ``--init-from base``, the model shipped in
``keyboard_lm/models/base``) starts centralized, federated, DP and
quantization-aware training from a model trained before, usually on public
text.  Of the papers behind the project, Hard et al. 2018 train the federated
CIFG from random weights, Ro et al. 2024 (the SI-CIFG) pretrain on public text
only for their differentially private runs, and Shenoy & Nguyen personalize a
model already trained; Gboard's DP-trained production models (Xu et al. 2023)
start from a model pretrained on public data.

The vocabulary decides how the weights carry over (``--init-vocab``):

- ``target``: the vocabulary is built from the new run's training clients,
  as without a warm start.  Rows of the tied embedding for words the base
  knows are copied; a word new to the base starts as an average rare word
  of the base (the mean of its least frequent rows, plus noise of their
  spread), so the start predicts it as rarely as the base predicted its
  rarest words.  The recurrent cell is copied whole.
- ``base``: the run keeps the base's vocabulary and every weight as it is
  (Gboard's way: one vocabulary for every stage); the users' words outside
  it are OOV.

A base may be pretrained with a vocabulary wider than the shipped model's
(tens of thousands of rows, with the sampled softmax): under ``target`` more
of a user corpus's words then start trained, and under ``base`` the run
keeps the base's ``--vocab-size`` most frequent words and their rows.

The run records what it started from in run.json's ``init_from`` (the base's
name and path, the sha256 of its weights file, the vocabulary mode, how
many words carried over, and ``base_overlap``: the share of the run's
training and held-out sentences the base saw in pretraining, from the
sentence fingerprint the base ships, ``data.overlap``), and the model card
repeats it.
"""

from __future__ import annotations

import logging
import dataclasses
import os
from importlib import resources

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import RUN_FILE, WEIGHTS_FILE, Run, load_run, sha256_file
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

#: ``--init-vocab`` choices; the first is the default (docs/training.md has the measurement).
INIT_VOCAB = ("target", "base")
#: The name ``--init-from`` gives the shipped base model.
BASE_NAME = "base"
#: How many of the base's least frequent words define a new word's starting row.
RARE_ROWS = 1000
EMBEDDING = "embedding/embeddings:0"


def base_model_dir() -> str:
    """The directory of the base model shipped in the package (a run directory)."""
    return str(resources.files("keyboard_lm.models") / "base")


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A loaded base run and how to carry it over.

    Attributes:
      base: the run to start from.
      name: ``base`` for the shipped model, else the run directory as given.
      weights_sha256: sha256 of the base's weights file (checked against the
        card for the shipped base).
      vocab: ``target`` or ``base`` (see the module docstring).
      overlap: the share of the run's sentences the base saw (``check_overlap``), None until checked.
    """

    base: Run
    name: str
    weights_sha256: str
    vocab: str = INIT_VOCAB[0]
    overlap: dict | None = None

    def __post_init__(self):
        if self.vocab not in INIT_VOCAB:
            raise ConfigError(f"unknown --init-vocab {self.vocab!r}; choose {' or '.join(INIT_VOCAB)}")

    @property
    def run_file(self) -> str:
        return os.path.join(self.base.path, RUN_FILE)

    def check_model(self, model_type: str, embedding_dim: int, units: int) -> None:
        """One line naming the base's run.json when the requested model is not the base's."""
        b = self.base.model_config
        asked = (model_type, embedding_dim, units)
        if asked != (b.model_type, b.embedding_dim, b.units):
            raise ConfigError(
                f"{self.run_file}: --init-from holds a {b.model_type} with D={b.embedding_dim}, H={b.units}; "
                f"this run asks for a {model_type} with D={embedding_dim}, H={units} (leave out --model, "
                "--embedding-dim and --units to take the base's)")

    def vocabulary(self, target: Vocabulary, size: int | None = None) -> Vocabulary:
        """The run's vocabulary: ``target`` (built on the run's training clients), or the base's ``size`` most
        frequent words (all of them when ``size`` is None or larger): a base pretrained with a vocabulary
        wider than the shipped model's keeps its rows for every word a target vocabulary may need, and a run
        that keeps the base's vocabulary keeps its head, in the base's order (most frequent first)."""
        if self.vocab != "base":
            return target
        base = self.base.vocab
        if size is None or size >= len(base):
            return base
        return Vocabulary(list(base.tokens[:size]), base.special)

    def model_config(self, vocab: Vocabulary, quantization: str = "none") -> ModelConfig:
        """The base's model with the run's vocabulary size and quantization."""
        return dataclasses.replace(self.base.model_config, vocab_size=len(vocab), quantization=quantization)

    def initial_weights(self, vocab: Vocabulary, seed: int = 0) -> dict[str, np.ndarray]:
        """The run's starting weights by variable name, for ``vocab``."""
        weights = {k: np.asarray(v, np.float32) for k, v in self.base.weights.items()}
        if vocab.tokens == self.base.vocab.tokens:
            return weights
        table = weights[EMBEDDING]
        base_ids = {t: i for i, t in enumerate(self.base.vocab.tokens)}
        n_special = len(vocab.special.tokens)
        rare = table[max(n_special, len(table) - RARE_ROWS):]
        rng = np.random.default_rng(seed)
        new = np.empty((len(vocab), table.shape[1]), np.float32)
        fresh = [i for i, t in enumerate(vocab.tokens) if t not in base_ids]
        for i, t in enumerate(vocab.tokens):
            if t in base_ids:
                new[i] = table[base_ids[t]]
        new[fresh] = rare.mean(0) + rng.normal(0.0, 1.0, (len(fresh), table.shape[1])) * rare.std(0)
        weights[EMBEDDING] = new
        return weights

    def check_overlap(self, corpus, split, log=None) -> "WarmStart":
        """This start with the share of ``corpus``'s training and held-out sentences the base saw.

        Measured against the sentence fingerprint the base ships (``data.overlap``); a base without
        one (a run directory that is not a pretrained base) is recorded as unchecked.  Prints the
        figures, and a one-line warning above ``data.overlap.WARN_SHARE``.
        """
        log = log or logger.info  # ``log``: deprecated, a callable taking the lines

        from keyboard_lm.data.overlap import FINGERPRINT_FILE, describe_overlap, load_fingerprint, overlap_report

        fingerprint = load_fingerprint(self.base.path)
        if fingerprint is None:
            log(f"base overlap not checked: {self.name} ships no {FINGERPRINT_FILE}")
            return dataclasses.replace(self, overlap={"checked": False,
                                                      "reason": f"the base has no {FINGERPRINT_FILE}"})
        report = {"checked": True, **overlap_report(fingerprint, corpus, split)}
        for line in describe_overlap(report, f"base {self.name!r}"):
            log(line)
        return dataclasses.replace(self, overlap=report)

    def record(self, vocab: Vocabulary) -> dict:
        """run.json's ``init_from``."""
        shared = sum(1 for t in vocab.tokens if t in self.base.vocab)
        return {"name": self.name, "path": self.base.path if self.name != BASE_NAME else "keyboard_lm/models/base",
                "weights_sha256": self.weights_sha256, "vocab": self.vocab,
                "model": self.base.model_config.to_dict(), "base_vocab_size": len(self.base.vocab),
                "shared_words": shared, "new_words": len(vocab) - shared,
                "base_metrics": self.base.record.final_metrics,
                "base_corpus": self.base.record.corpus,
                "base_overlap": self.overlap}


def load_warm_start(spec: str, vocab: str = INIT_VOCAB[0]) -> WarmStart:
    """``spec``: ``base`` (the shipped model) or a run directory; every problem is one ConfigError line."""
    if spec == BASE_NAME:
        path = base_model_dir()
        if not os.path.isfile(os.path.join(path, RUN_FILE)):
            raise ConfigError(f"{path}: the shipped base model is missing (reinstall keyboard-lm, or give "
                              "--init-from RUN_DIR)")
    else:
        path = spec
    run = load_run(path)
    sha = sha256_file(os.path.join(path, WEIGHTS_FILE))
    expected = run.record.weights_sha256
    if expected is not None and expected != sha:
        raise ConfigError(f"{os.path.join(path, WEIGHTS_FILE)}: damaged (sha256 {sha[:12]} != {expected[:12]} "
                          f"recorded in {RUN_FILE})")
    if EMBEDDING not in run.weights:
        raise ConfigError(f"{os.path.join(path, WEIGHTS_FILE)}: no {EMBEDDING} (not a keyboard_lm model)")
    return WarmStart(run, spec if spec == BASE_NAME else path, sha, vocab)


def describe(record: dict) -> str:
    """One line on what a run started from."""
    return (f"warm start from {record['name']} (weights sha256 {record['weights_sha256'][:12]}), "
            f"{record['vocab']} vocabulary: {record['shared_words']:,} words carried over, "
            f"{record['new_words']:,} new")


def start_weights(run: Run) -> tuple[dict[str, np.ndarray] | None, str]:
    """(the weights ``run`` started from, "") for a federated run warm-started from a base that is still
    there, as it was; else (None, why not).

    The start is rebuilt as training built it: the base named in run.json's ``init_from`` (its weights'
    sha256 checked), carried over to the run's vocabulary with the run's seed.  A run from random weights
    has no start to rebuild (TFF draws it inside the process).
    """
    init = run.record.init_from
    if not init:
        return None, "the run started from random weights"
    seed = (run.record.federated or {}).get("seed")
    if seed is None:
        return None, "run.json records no federated seed"
    path = base_model_dir() if init.get("name") == BASE_NAME else init.get("path")
    if not path or not os.path.isfile(os.path.join(path, RUN_FILE)):
        return None, f"its base {path} is not found"
    try:
        base = load_warm_start(BASE_NAME if init.get("name") == BASE_NAME else path, init.get("vocab", INIT_VOCAB[0]))
    except ConfigError as e:
        return None, str(e)
    if base.weights_sha256 != init.get("weights_sha256"):
        return None, f"{os.path.join(path, WEIGHTS_FILE)} is not the base the run started from (sha256 differs)"
    weights = base.initial_weights(run.vocab, seed)
    if weights[EMBEDDING].shape[0] != len(run.vocab):
        return None, f"the base's vocabulary ({weights[EMBEDDING].shape[0]}) is not the run's ({len(run.vocab)})"
    return weights, ""

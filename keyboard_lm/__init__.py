"""keyboard_lm: federated next-word prediction for mobile keyboards.

The public API is what this module exports; everything else is internal.

    import keyboard_lm as kl

    corpus = kl.load_corpus("ham.mbox", "mbox")
    kl.train_federated(corpus, "runs/mail", options=kl.RunOptions(init=kl.load_warm_start("base")))
    # or centralized, the same signature: train_centralized(corpus, run_dir, model_config, config, split, options)
    kl.export_run("runs/mail", "runs/mail/model.tflite")
    session = kl.Predictor.load("runs/mail/model.tflite").session()

Text, corpora and their configs load at once and need no TensorFlow; the
training, export and warm-start entry points load TensorFlow (and TFF) when
first used, so ``import keyboard_lm.inference`` on a phone-sized install stays
TensorFlow-free.
"""

from keyboard_lm.data.corpora import load_corpus
from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import ConfigError, DataError, KeyboardLMError
from keyboard_lm.text import SPECIAL_TOKENS, TEXT_SPEC_VERSION, SpecialTokens, Vocabulary, sentences, tokenize

__version__ = "0.1.0"

#: name -> the module that defines it, imported on first use (PEP 562).
_LAZY = {
    # training
    "train_federated": "keyboard_lm.federated.trainer",
    "RunOptions": "keyboard_lm.federated.run_start",
    "FederatedConfig": "keyboard_lm.federated.config",
    "LoopConfig": "keyboard_lm.federated.config",
    "AggregationConfig": "keyboard_lm.federated.config",
    "default_federated": "keyboard_lm.federated.config",
    "train_centralized": "keyboard_lm.training.centralized",
    "CentralizedConfig": "keyboard_lm.training.config",
    "TrainOptions": "keyboard_lm.training.config",
    "ClientDataConfig": "keyboard_lm.data.config",
    "ModelConfig": "keyboard_lm.models.config",
    "DPConfig": "keyboard_lm.privacy.config",
    "DPOptions": "keyboard_lm.privacy.config",
    "load_warm_start": "keyboard_lm.models.warm_start",
    "load_run": "keyboard_lm.models.run_dir",
    "evaluate_model": "keyboard_lm.evaluation",
    # export
    "export_run": "keyboard_lm.export.tflite_export",
    # on the device
    "Predictor": "keyboard_lm.inference",
    "Session": "keyboard_lm.inference",
    "UserHistory": "keyboard_lm.inference",
}

__all__ = [
    "AggregationConfig", "CentralizedConfig", "ClientDataConfig", "ConfigError", "Corpus", "DPConfig",
    "DPOptions", "DataError", "FederatedConfig", "KeyboardLMError", "LoopConfig", "ModelConfig", "Predictor",
    "RunOptions", "SPECIAL_TOKENS", "Session", "SpecialTokens", "SplitConfig", "TEXT_SPEC_VERSION", "TrainOptions",
    "UserHistory", "Vocabulary", "default_federated", "evaluate_model", "export_run", "load_corpus", "load_run",
    "load_warm_start", "sentences", "split_clients", "tokenize", "train_centralized", "train_federated",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keyboard_lm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

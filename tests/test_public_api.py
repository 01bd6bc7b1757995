"""The public API, pinned: what `keyboard_lm` and `keyboard_lm.inference` export, and that each name resolves
from where it is defined; the package imports without TensorFlow until a training entry point is used."""

import subprocess
import sys

import keyboard_lm
import keyboard_lm.inference

PUBLIC = {
    "AggregationConfig", "CentralizedConfig", "ClientDataConfig", "ConfigError", "Corpus", "DPConfig",
    "DPOptions", "DataError", "FederatedConfig", "KeyboardLMError", "LoopConfig", "ModelConfig", "Predictor",
    "RunOptions", "SPECIAL_TOKENS", "Session", "SpecialTokens", "SplitConfig", "TEXT_SPEC_VERSION", "TrainOptions",
    "UserHistory", "Vocabulary", "default_federated", "evaluate_model", "export_run", "load_corpus", "load_run",
    "load_warm_start", "sentences", "split_clients", "tokenize", "train_centralized", "train_federated",
}


def test_the_package_exports_exactly_its_public_api():
    assert set(keyboard_lm.__all__) == PUBLIC
    assert len(keyboard_lm.__all__) == len(PUBLIC)
    assert set(keyboard_lm.inference.__all__) == {"ModelFile", "ModelFileError", "Predictor", "Session",
                                                  "UserHistory"}


def test_every_public_name_is_the_object_its_module_defines():
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated
    from keyboard_lm.inference.user_history import UserHistory
    from keyboard_lm.training.centralized import train_centralized

    assert keyboard_lm.train_federated is train_federated and keyboard_lm.RunOptions is RunOptions
    assert keyboard_lm.train_centralized is train_centralized
    assert keyboard_lm.UserHistory is UserHistory is keyboard_lm.inference.UserHistory
    for name in PUBLIC:
        assert getattr(keyboard_lm, name) is not None, name
    assert set(dir(keyboard_lm)) >= PUBLIC


def test_importing_the_package_and_inference_loads_no_tensorflow():
    code = ("import sys, keyboard_lm, keyboard_lm.inference\n"
            "from keyboard_lm import Predictor, UserHistory, load_corpus\n"
            "print(sorted(m for m in ('tensorflow', 'tensorflow_federated') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error_naming_it():
    try:
        keyboard_lm.train_fedavg  # noqa: B018
    except AttributeError as e:
        assert "train_fedavg" in str(e)
    else:
        raise AssertionError("keyboard_lm.train_fedavg must not exist")

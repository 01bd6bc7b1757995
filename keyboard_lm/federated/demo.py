"""The demo's recipe and run, as library calls: what ``keyboard-lm demo`` (the README's main job) trains.

    from keyboard_lm.federated.demo import train_demo

    result = train_demo("runs/demo")            # the shipped base fine-tuned on the embedded corpus
    result = train_demo("runs/demo", scratch=True)   # the small CIFG from random weights instead
"""

from __future__ import annotations

import dataclasses
import logging

logger = logging.getLogger(__name__)


def demo_recipe(rounds: int | None = None, seed: int = 0, base=None):
    """(model, federated, client data, split, loop) settings of ``demo`` on the embedded corpus.

    ``base`` (the ModelConfig of the shipped base, the default): the base's model fine-tuned by federated
    averaging on the embedded corpus (docs/training.md has the measurement).  ``base=None`` is the recipe
    from random weights the demo ran before the base existed.
    """
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.federated.config import FederatedConfig, LoopConfig
    from keyboard_lm.models.config import ModelConfig

    if base is not None:
        rounds = rounds or DEMO_BASE_ROUNDS
        # The base's model, quantization-aware, so the int8 file computes exactly what was evaluated.
        model_config = dataclasses.replace(base, quantization="dynamic-range")
        fed = FederatedConfig(algorithm="fedavg", server_optimizer="adam", server_lr=DEMO_BASE_SERVER_LR,
                              client_lr=DEMO_BASE_CLIENT_LR, clients_per_round=20, rounds=rounds, seed=seed,
                              validation_fraction=0.0, lr_decay=1.0, weight_average=0.0)
        data_config = ClientDataConfig(max_seq_len=20, batch_size=10, epochs=DEMO_BASE_LOCAL_EPOCHS,
                                       max_batches=120)
    else:
        rounds = rounds or 100
        # A smaller CIFG than Hard et al.'s (D=64, H=256): the embedded corpus has
        # only ~27k words, and the paper size trains slower and no better on it from random weights.
        model_config = ModelConfig("cifg", embedding_dim=64, units=256, quantization="dynamic-range")
        # No validation clients: with 10% set aside, seed 0 drew a client whose local loss exploded at round 4.
        fed = FederatedConfig(algorithm="fedavg", server_optimizer="adam", server_lr=0.02, client_lr=1.0,
                              clients_per_round=20, rounds=rounds, seed=seed, validation_fraction=0.0,
                              lr_decay=1.0, weight_average=0.0)
        data_config = ClientDataConfig(max_seq_len=20, batch_size=10, epochs=5, max_batches=120)
    loop = LoopConfig(eval_every=max(1, rounds // 10), checkpoint_every=max(1, rounds // 10))
    return model_config, fed, data_config, SplitConfig(0.1, seed=0), loop


#: The demo's fine-tuning of the base (measured in docs/training.md). The server rate was chosen for the
#: SI-CIFG base on validation clients (``benchmarks/recipes/demo_sweep.py``: 0.01 best of 0.002-0.02; the
#: CIFG base's 0.002 left the SI-CIFG still climbing at round 40).
DEMO_BASE_ROUNDS, DEMO_BASE_SERVER_LR, DEMO_BASE_CLIENT_LR, DEMO_BASE_LOCAL_EPOCHS = 40, 0.01, 0.3, 1


def train_demo(out: str, *, rounds: int | None = None, seed: int = 0, scratch: bool = False,
               overwrite: bool = False, log=None, federated_changes: dict | None = None) -> dict:
    """Train the demo into ``out``: federated averaging over the embedded corpus, from the shipped base
    (``scratch``: from random weights); returns {"corpus", "split", "rounds", "start", "result"}.
    ``federated_changes``: FederatedConfig fields set over the recipe's (a study of the recipe, e.g.
    ``benchmarks/recipes/demo_sweep.py``).

    The demo re-runs into a directory holding its own earlier run; anything else is refused unless
    ``overwrite`` (see ``models.run_guard.prepare_run_dir``).
    """
    given_log, log = log, log or logger.info  # ``log``: deprecated, a callable taking the lines

    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated

    init = None
    if not scratch:
        from keyboard_lm.models.warm_start import load_warm_start

        init = load_warm_start("base")
    corpus = load_default()
    model_config, fed, data_config, split, loop = demo_recipe(
        rounds, seed, base=init.base.model_config if init is not None else None)
    fed = dataclasses.replace(fed, **(federated_changes or {}))
    start = "the shipped base model" if init is not None else "random weights"
    log(f"keyboard-lm demo: FedAdam over {corpus.name} from {start}, {fed.rounds} rounds, run directory {out}")
    if init is not None:
        init = init.check_overlap(corpus, split, given_log)
    result = train_federated(corpus, out, model_config, fed, split,
                             RunOptions(init=init, data_source={"path": None, "format": "default"}, command="demo",
                                        overwrite=overwrite, log=given_log),
                             data_config=data_config, loop=loop)
    return {"corpus": corpus, "split": split, "rounds": fed.rounds, "start": start, "result": result}

"""How a federated run starts: its options (``RunOptions``), and what a resumed run takes from its own directory.

``trainer.FederatedRun`` reads these before the run directory is touched: a resumed run's model, recipe,
vocabulary, split and DP settings (``resume_settings``), and an audit's canary words against the vocabulary
(``check_canary_words``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.corpus import Corpus
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.config import FederatedConfig
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.run_dir import load_run, run_command
from keyboard_lm.models.warm_start import WarmStart
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.text.vocabulary import Vocabulary


def check_canary_words(audit: dict, vocab: Vocabulary) -> None:
    """An audit whose canary words the run's vocabulary lacks would train, then fail to score: refuse it first."""
    from keyboard_lm.privacy.canaries import DEFAULT_ALPHABET, DEFAULT_PREFIX

    missing = [w for w in (*DEFAULT_PREFIX, *audit.get("alphabet", DEFAULT_ALPHABET)) if w not in vocab]
    if missing:
        raise ConfigError(f"canary word(s) {', '.join(map(repr, missing))} not in the run's {len(vocab):,}-word "
                          "vocabulary: the canaries could not be scored; choose --canary-words the vocabulary has")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a federated run starts, what it records and whom it tells; everything but the recipe.

    Attributes:
      resume: continue ``run_dir`` from its latest checkpoint; the model,
        hyper-parameters, vocabulary and split come from the run, and only
        ``config.rounds`` may change (callers pass the run's own count unless
        told otherwise).
      init: start a fresh run from another run's weights (``models.warm_start``):
        the server's first model is the base's, with its model type and
        sizes; run.json records the start in ``init_from``.
      vocab_size: the vocabulary of a fresh run (before ``init`` adds its words).
      dp: DP-FedAvg or DP-FTRL (``federated.dp_run.DPRun``): the population is
        the training clients with text, cohorts are drawn as the accountant
        assumes, eps after each round goes to metrics.csv and the final (eps,
        delta, rho) with every DP setting to run.json.
      data_source: the corpus's path and format, recorded for ``eval``.
      command: what made the run (``train`` or ``demo``), in run.json.
      overwrite: replace a run already in ``run_dir``.
      track_clients: ids whose rounds of participation run.json records
        (``participation``), e.g. the clients holding audit canaries; a resumed
        run continues the rounds its checkpoint recorded.
      audit: the canary audit's settings (``audit canaries``), recorded in
        run.json so that a resumed audit plants the same canaries.
      worker_data: a directory the training clients' shards are written to
        once; each round then sends the workers only shard paths (under
        ``worker_data_root``, default ``worker_data``) and seeds, and the
        workers read the data themselves (``federated.distributed.worker_data``).
      workers: how the run reaches its remote TFF workers (``{"addresses":
        [...], "tls": bool}``, set up by the caller with
        ``remote.set_remote_context``), recorded in run.json; None: the local worker.
      on_round: ``on_round(round_num, seconds)`` after every round (the worker watchdog's clock).
      log: where progress lines go.
    """

    resume: bool = False
    init: WarmStart | None = None
    vocab_size: int = 10_000
    dp: DPOptions | None = None
    data_source: dict | None = None
    command: str = "train"
    overwrite: bool = False
    track_clients: tuple = ()
    audit: dict | None = None
    worker_data: str | None = None
    worker_data_root: str | None = None
    workers: dict | None = None
    on_round: Callable | None = None
    log: Callable = print


@dataclasses.dataclass
class Resumed:
    """What a resumed run takes from its own directory."""

    vocab: Vocabulary
    model_config: ModelConfig
    config: FederatedConfig
    data_config: ClientDataConfig
    command: str
    dp: DPOptions | None
    info: dict


def resume_settings(run_dir: str, corpus: Corpus, heldout_ids: list[str], config: FederatedConfig, log) -> Resumed:
    """The settings of the run to resume: everything from the run except ``config.rounds``.

    The corpus and split must be the ones the run was trained on.
    """
    run = load_run(run_dir)
    if run.info.get("trainer") != "federated":
        raise ConfigError(f"{run_dir}: --resume needs a federated run, this one is {run.info.get('trainer')!r}")
    # Runs made before dropout existed trained without it.
    # Runs made before validation existed kept the last round at a constant rate.
    # Runs made before server-side averaging existed kept the server's own weights.
    saved = {"dropout": 0.0, "validation_fraction": 0.0, "lr_decay": 1.0, "weight_average": 0.0,
             **run.info["federated"]}
    if saved["seed"] != config.seed or saved["algorithm"] != config.algorithm:
        log(f"resume: using the run's own settings (algorithm {saved['algorithm']}, seed {saved['seed']})")
    fingerprint = run.info["data"].get("fingerprint")
    if list(run.info["data"]["heldout_ids_head"]) != heldout_ids[:5] or (
            fingerprint and fingerprint != corpus.fingerprint()):
        if run.info.get("audit"):
            raise ConfigError(f"{run_dir}: an audit run trains on its corpus with the canaries planted; continue "
                              f"it with `keyboard-lm audit canaries --out {run_dir} --resume`")
        raise ConfigError(f"{run_dir}: the corpus or split differs from the one this run was trained on")
    dp = run.info.get("differential_privacy")
    options = None
    if dp:
        # The noise multiplier the run used (calibrated or given); its target eps held for its own rounds.
        options = DPOptions.from_record(dp)
        if config.rounds != saved["rounds"]:
            log(f"resume: {config.rounds} rounds instead of {saved['rounds']}; eps is accounted for the "
                "rounds actually run")
    return Resumed(run.vocab, run.model_config, FederatedConfig(**{**saved, "rounds": config.rounds}),
                    ClientDataConfig(**run.info["client_data"]), run_command(run.info), options, run.info)

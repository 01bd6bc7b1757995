"""How a federated run starts: its options (``RunOptions``: ``training.config.TrainOptions`` and a federated
run's own), and what a resumed run takes from its own directory.

``run_setup.start_run`` reads these before the run directory is touched: a resumed run's model, recipe,
vocabulary, split, loop and DP settings (``resume_settings``, from run.json through ``RunRecord``, with its
back-compatible defaults), and an audit's canary words against the vocabulary (``check_canary_words``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.split import SplitConfig
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.config import FederatedConfig, LoopConfig
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.run_dir import RunRecord, load_run
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.text.vocabulary import Vocabulary
from keyboard_lm.training.config import TrainOptions

logger = logging.getLogger(__name__)


def check_canary_words(audit: dict, vocab: Vocabulary) -> None:
    """An audit whose canary words the run's vocabulary lacks would train, then fail to score: refuse it first."""
    from keyboard_lm.privacy.canaries import DEFAULT_ALPHABET, DEFAULT_PREFIX

    missing = [w for w in (*DEFAULT_PREFIX, *audit.get("alphabet", DEFAULT_ALPHABET)) if w not in vocab]
    if missing:
        raise ConfigError(f"canary word(s) {', '.join(map(repr, missing))} not in the run's {len(vocab):,}-word "
                          "vocabulary: the canaries could not be scored; choose --canary-words the vocabulary has")


@dataclasses.dataclass(frozen=True)
class RunOptions(TrainOptions):
    """How a federated run starts, what it records and whom it tells; everything but the recipe.

    The fields both trainers share (``init``, ``vocab_size``, ``data_source``, ``overwrite``, ``log``) are
    ``training.config.TrainOptions``'s; these are a federated run's own.

    Attributes:
      resume: continue ``run_dir`` from its latest checkpoint; the model,
        recipe, client data and loop settings, vocabulary and split come from
        the run, and only the round count may change (``rounds``).
      rounds: the round a resumed run trains up to (None: ``config.rounds``
        when a config is given, else the run's own count).
      dp: DP-FedAvg or DP-FTRL (``federated.dp_run.DPRun``): the population is
        the training clients with text, cohorts are drawn as the accountant
        assumes, eps after each round goes to metrics.csv and the final (eps,
        delta, rho) with every DP setting to run.json.
      command: what made the run (``train`` or ``demo``), in run.json.
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
    """

    resume: bool = False
    rounds: int | None = None
    dp: DPOptions | None = None
    command: str = "train"
    track_clients: tuple = ()
    audit: dict | None = None
    worker_data: str | None = None
    worker_data_root: str | None = None
    workers: dict | None = None
    on_round: Callable | None = None


@dataclasses.dataclass
class Resumed:
    """What a resumed run takes from its own directory."""

    vocab: Vocabulary
    model_config: ModelConfig
    config: FederatedConfig
    data_config: ClientDataConfig
    loop: LoopConfig
    split: SplitConfig
    dp: DPOptions | None
    record: RunRecord


def resume_settings(run_dir: str, corpus: Corpus, config: FederatedConfig | None, rounds: int | None) -> Resumed:
    """The settings of the run to resume, all from the run (``RunRecord``) except the round count: ``rounds``,
    else ``config.rounds``, else the run's own.

    The corpus must be the one the run was trained on (its split's first held-out clients and fingerprint).
    """
    from keyboard_lm.data.split import split_clients

    run = load_run(run_dir)
    record = run.record
    if record.trainer != "federated":
        raise ConfigError(f"{run_dir}: --resume needs a federated run, this one is {record.trainer!r}")
    saved = record.federated_recipe
    if config is not None and (saved["seed"] != config.seed or saved["algorithm"] != config.algorithm):
        logger.info(f"resume: using the run's own settings (algorithm {saved['algorithm']}, seed {saved['seed']})")
    split = SplitConfig(**record.split)
    heldout_ids = split_clients(corpus.client_ids, split)[1]
    if list(record.heldout_ids_head) != heldout_ids[:5] or (
            record.data_fingerprint and record.data_fingerprint != corpus.fingerprint()):
        if record.audit:
            raise ConfigError(f"{run_dir}: an audit run trains on its corpus with the canaries planted; continue "
                              f"it with `keyboard-lm audit canaries --out {run_dir} --resume`")
        raise ConfigError(f"{run_dir}: the corpus or split differs from the one this run was trained on")
    target = rounds or (config.rounds if config is not None else saved["rounds"])
    options = None
    if record.differential_privacy:
        # The noise multiplier the run used (calibrated or given); its target eps held for its own rounds.
        options = DPOptions.from_record(record.differential_privacy)
        if target != saved["rounds"]:
            logger.info(f"resume: {target} rounds instead of {saved['rounds']}; eps is accounted for the "
                        "rounds actually run")
    return Resumed(run.vocab, run.model_config, FederatedConfig(**{**saved, "rounds": target}),
                   ClientDataConfig(**record.client_data), LoopConfig(**record.loop), split, options, record)

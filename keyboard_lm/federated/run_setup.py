"""How a federated run is set up: its settings, clients and collaborators, and the program state it starts from.

:func:`start_run` turns ``train_federated``'s arguments into :class:`FederatedParts`, the objects the
training loop (``trainer.run_rounds``) asks for their part: the algorithm (``algorithm.FederatedAlgorithm``),
the client sampler (``rounds.ClientSampler``), the evaluator (``rounds.Evaluator`` with
``training.loop.KeepBest``), the checkpoint manager (``round_checkpoints.RoundCheckpoints``) and the run
writer (``training.loop.RunWriter``), with the :class:`~keyboard_lm.federated.round_checkpoints.ProgramState`
to start from: round 0 of a fresh run (from random weights or a base), or a resumed run's newest intact
checkpoint. Nothing is written to the run directory before every setting is known to be good.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.preprocessing import encode_clients
from keyboard_lm.data.split import split_clients, validation_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.algorithm import FederatedAlgorithm
from keyboard_lm.federated.config import default_federated, without_validation_for_dp
from keyboard_lm.federated.round_checkpoints import ProgramState, RoundCheckpoints
from keyboard_lm.federated.rounds import ClientSampler, Evaluator, RoundData
from keyboard_lm.federated.run_start import RunOptions, check_canary_words, resume_settings
from keyboard_lm.federated.server_average import ServerAverage
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import weights_dict
from keyboard_lm.models.run_dir import CHECKPOINT_DIR, RunRecord, drop_metrics_after
from keyboard_lm.models.run_guard import hold_run_dir, prepare_run_dir
from keyboard_lm.models.warm_start import describe
from keyboard_lm.text.vocabulary import Vocabulary
from keyboard_lm.training.loop import KeepBest, RunWriter

logger = logging.getLogger(__name__)

#: What the demo writes into its run directory after training (``cli.demo``): listed in the run's manifest.
DEMO_FILES = ("model.tflite", "model.tflite.card.json")


@dataclasses.dataclass
class FederatedParts:
    """A federated run's settings and collaborators, and the program state it starts from (``start``)."""

    run_dir: str
    config: object  # FederatedConfig
    loop: object  # LoopConfig
    algorithm: FederatedAlgorithm
    sampler: ClientSampler
    evaluator: Evaluator
    keep: KeepBest
    checkpoints: RoundCheckpoints
    writer: RunWriter
    start: ProgramState
    dp_run: object | None
    validating: bool
    tracked: dict | None  # tracked client -> rounds it trained in (None: no client is tracked)
    resumed: RunRecord | None
    guard: object


@dataclasses.dataclass
class _Settings:
    """Recipe, vocabulary, model and split of the run (a resumed run's own)."""

    config: object
    model_config: ModelConfig
    data_config: object
    loop: object
    split: object
    vocab: Vocabulary
    command: str
    dp: object
    resumed: RunRecord | None


def _settings(corpus, run_dir, model_config, config, data_config, split, loop, o: RunOptions):
    """The run's settings, and the directory's guard (held from here on); from the run itself when resumed."""
    if o.resume and o.init is not None:
        raise ConfigError("--init-from starts a fresh run; a resumed run continues from its own checkpoint")
    if o.resume:
        guard = hold_run_dir(run_dir)  # refused at once while another run trains here
        try:
            r = resume_settings(run_dir, corpus, config, o.rounds)
        except BaseException:
            guard.release()
            raise
        s = _Settings(r.config, r.model_config, r.data_config, r.loop, r.split, r.vocab, r.record.command, r.dp,
                      r.record)
    else:
        config = config or default_federated(warm_start=o.init is not None, dp=o.dp is not None)
        base = model_config or ModelConfig()
        if o.init is not None:
            o.init.check_model(base.model_type, base.embedding_dim, base.units)
        train_ids = split_clients(corpus.client_ids, split)[0]
        vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), o.vocab_size)
        if o.init is not None:
            vocab = o.init.vocabulary(vocab, o.vocab_size)
        if o.audit:
            check_canary_words(o.audit, vocab)  # before the run directory is touched
        guard = prepare_run_dir(run_dir, o.command, overwrite=o.overwrite, replace_own=o.command == "demo",
                                planned=DEMO_FILES if o.command == "demo" else (), log=logger.info)
        s = _Settings(config, dataclasses.replace(base, vocab_size=len(vocab)), data_config, loop, split, vocab,
                      o.command, o.dp, None)
    if s.dp is not None:
        s.config = without_validation_for_dp(s.config, refuse=False, log=logger.info)
    return s, guard


def start_run(corpus: Corpus, run_dir: str, model_config, config, data_config, split, loop,
              options: RunOptions) -> FederatedParts:
    """The run's parts and its starting program state; the run directory's lock is held by ``parts.guard``
    (released here when setting up fails)."""
    s, guard = _settings(corpus, run_dir, model_config, config, data_config, split, loop, options)
    try:
        return _parts(corpus, run_dir, s, options, guard)
    except BaseException:
        guard.release()
        raise


def _parts(corpus, run_dir, s: _Settings, o: RunOptions, guard) -> FederatedParts:
    config = s.config
    train_ids, heldout_ids = split_clients(corpus.client_ids, s.split)
    if config.validation_fraction:
        fit_ids, val_ids = validation_clients(train_ids, config.validation_fraction, s.split.seed)
    else:
        fit_ids, val_ids = train_ids, []
    encoded = encode_clients({c: corpus.clients[c] for c in fit_ids}, s.vocab, s.data_config.max_seq_len)
    trainable = [c for c in fit_ids if len(encoded[c][0])]
    if not trainable:
        raise ConfigError("no training client has any sentence")
    dp_run = None
    if s.dp is not None:
        from keyboard_lm.federated.dp_run import DPRun

        start = s.resumed.init_from if s.resumed else ({"vocab": o.init.vocab} if o.init is not None else None)
        public = bool(start) and start.get("vocab") == "base"
        dp_run = DPRun(s.dp, trainable, config, public_vocabulary=public)
        if not public:
            logger.warning("warning: the vocabulary is built from the training clients' text without noise, "
                           "outside the DP guarantee (--init-from base --init-vocab base keeps the base's)")
        config = dataclasses.replace(config, clip="none")  # the DP clip is the clip: robust clipping is off
    elif config.clients_per_round > len(trainable):
        raise ConfigError(f"--clients-per-round {config.clients_per_round} is more than the "
                          f"{len(trainable)} training clients with text in {corpus.name}")
    data = RoundData({c: encoded[c] for c in trainable}, s.data_config, config.seed, worker_data=o.worker_data,
                     worker_data_root=o.worker_data_root, vocab_sha256=s.vocab.fingerprint(),
                     corpus_fingerprint=corpus.fingerprint())
    init_weights = o.init.initial_weights(s.vocab, config.seed) if o.init is not None else None
    algorithm = FederatedAlgorithm(s.model_config, config, data, dp_run=dp_run, init_weights=init_weights)
    if o.init is not None:
        logger.info(describe(o.init.record(s.vocab)))
    checkpoints = RoundCheckpoints(run_dir, algorithm.checkpoint_manager(os.path.join(run_dir, CHECKPOINT_DIR),
                                                                           s.loop.keep_checkpoints),
                                   guard, config.weight_average)
    keep = KeepBest(bool(config.validation_fraction), config.lr_decay,
                    best=s.resumed.best if s.resumed else None)
    start = _starting_state(run_dir, s, config, algorithm, checkpoints, keep)
    info = _info(corpus, s, config, o, guard, algorithm, dp_run, train_ids, val_ids, heldout_ids,
                 empty=len(fit_ids) - len(trainable))
    writer = RunWriter(run_dir, s.model_config, s.vocab, info, tensorboard=True, guard=guard)
    if s.resumed is None:
        # The Keras model as built (or the base's weights): what a run stopped before round 1 keeps.
        writer.save(weights_dict(algorithm.keras_model),
                    {"rounds_done": 0, "best": None, "finished": False,
                     "differential_privacy": dp_run.info(0) if dp_run else None})
    elif start.record is not None and s.resumed.rounds_done != start.round:
        # Stopped between a checkpoint and run.json, or resumed from an earlier checkpoint than
        # run.json names: run.json is written again from the checkpoint's record.
        logger.info(f"resume: run.json named round {s.resumed.rounds_done}; written again as of "
                    f"round {start.round}'s checkpoint")
        write_round(writer, algorithm, start, start.record["fields"], start.record["weights"])
    _announce(corpus, config, s, algorithm, len(trainable), len(fit_ids) - len(trainable), val_ids, heldout_ids,
              dp_run)
    evaluator = Evaluator(corpus, heldout_ids, val_ids, s.vocab, s.data_config.max_seq_len,
                          math.log(len(s.vocab)) * s.loop.divergence_factor, run_dir)
    sampler = ClientSampler(trainable, config.clients_per_round, config.seed, dp_run)
    tracked = _tracked_so_far(run_dir, o.track_clients, s.resumed, start.round)
    return FederatedParts(run_dir, config, s.loop, algorithm, sampler, evaluator, keep, checkpoints, writer, start,
                          dp_run, bool(val_ids), tracked if o.track_clients else None, s.resumed, guard)


def _starting_state(run_dir, s: _Settings, config, algorithm, checkpoints, keep) -> ProgramState:
    """Round 0 of a fresh run, or the newest intact checkpoint of a resumed one (rows after it dropped)."""
    initial = algorithm.init()
    if s.resumed is None:
        # A fresh average starts at the initial model, as the centralized one starts at the initial weights.
        average = (ServerAverage(config.weight_average, algorithm.trainable(initial))
                   if config.weight_average else None)
        return ProgramState(0, initial, average)
    start = checkpoints.load_newest(initial)  # past a damaged one, saying so
    if not config.weight_average:
        start.average = None
    if start.record is not None:
        keep.best = start.fields["best"]  # the kept round as of this checkpoint
    finished = s.resumed.finished and s.resumed.rounds_done == start.round
    if config.rounds < start.round or (config.rounds == start.round and finished):
        raise ConfigError(f"{run_dir}: the run has done {start.round} rounds already; "
                          f"give --rounds above {start.round} to train further")
    drop_metrics_after(run_dir, "round", start.round)
    if config.rounds == start.round:
        logger.info(f"resume: the run stopped after its last round's checkpoint (round {start.round}) "
                    "and before its end; finishing it")
    else:
        logger.info(f"resuming after round {start.round}, up to round {config.rounds}")
    if config.compression or config.dropout:
        what = "compressed uploads round" if config.compression else "dropout draws its masks"
        logger.info(f"resume: {what} at random inside TFF's runtime (unseeded), so the rounds "
                    "from here on are not bit-identical to an uninterrupted run's")
    return start


def write_round(writer: RunWriter, algorithm: FederatedAlgorithm, program: ProgramState, fields: dict,
                weights: bool) -> None:
    """run.json's record of a checkpointed round; with ``weights``, that round's model as weights.npz."""
    if weights:
        writer.save(weights_dict(algorithm.model(program.server, program.average)), fields)
    else:
        writer.update({**writer.info, **fields})


def _info(corpus, s: _Settings, config, o: RunOptions, guard, algorithm, dp_run, train_ids, val_ids, heldout_ids,
          empty: int) -> dict:
    """run.json's record of the run (save_run rewrites it whole; a resumed run keeps where it started)."""
    resumed = s.resumed
    audit = resumed.audit if resumed else o.audit
    return {
        "trainer": "federated", "command": s.command,
        **({"run_id": guard.run_id} if guard.run_id else {}),
        # Compression's stochastic rounding, dropout's masks and DP noise are
        # drawn by random ops inside TFF's runtime that no seed of ours reaches
        # (DP noise must not be predictable).
        "reproducible": not config.compression and not config.dropout and dp_run is None,
        "data": {"corpus": corpus.name, "source": o.data_source or {}, "fingerprint": corpus.fingerprint(),
                 "train_clients": len(train_ids), "validation_clients": len(val_ids),
                 "heldout_clients": len(heldout_ids), "empty_train_clients": empty,
                 "heldout_ids_head": heldout_ids[:5], "split": dataclasses.asdict(s.split)},
        "federated": dataclasses.asdict(config),
        "client_data": dataclasses.asdict(s.data_config),
        "loop": dataclasses.asdict(s.loop),
        "hyperparameters": {"seq_len": s.data_config.max_seq_len},
        "parameters": algorithm.keras_model.count_params(),
        "upload_bytes_per_client": algorithm.upload_bytes, "upload_bytes_float32": algorithm.upload_bytes_float32,
        "workers": o.workers,
        "init_from": resumed.init_from if resumed else o.init.record(s.vocab) if o.init is not None else None,
        **({"audit": audit} if audit else {}),
    }


def _tracked_so_far(run_dir, ids, resumed: RunRecord | None, start_round: int) -> dict:
    """Rounds each tracked client trained in: none yet, or a resumed run's up to its checkpoint."""
    if resumed is None:
        return {c: [] for c in ids}
    saved = resumed.participation
    missing = [c for c in ids if c not in saved]
    if missing:
        raise ConfigError(f"{run_dir}: the run did not record the participation of {len(missing)} of the "
                          f"{len(ids)} clients to track (e.g. {missing[0]!r}); it cannot be resumed as an audit")
    return {c: [r for r in saved[c] if r <= start_round] for c in ids}


def _announce(corpus, config, s: _Settings, algorithm, trainable: int, empty: int, val_ids, heldout_ids,
              dp_run) -> None:
    server = config.server_optimizer if config.algorithm != "fedatt" else "attentive"
    logger.info(f"federated {config.algorithm} ({server}) {s.model_config.model_type}: "
                f"{algorithm.keras_model.count_params():,} parameters, V={len(s.vocab):,}, "
                f"{trainable} training clients ({empty} without text), "
                + (f"{len(val_ids)} for validation, " if val_ids else "")
                + f"{len(heldout_ids)} held-out, "
                f"{config.clients_per_round}/round; upload {algorithm.upload_bytes:,} B/client/round vs "
                f"{algorithm.upload_bytes_float32:,} B float32")
    if dp_run is not None:
        logger.info(dp_run.summary(config.rounds))

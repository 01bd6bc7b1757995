"""``keyboard-lm train``: centralized or federated training (and DP) into a run directory.

Every default comes from the library's config dataclasses (``CentralizedConfig``,
``FederatedConfig``, ``ClientDataConfig``, ``LoopConfig``, ``ModelConfig``): a flag
left out is not passed, so the run gets what a Python caller gets. The options
are ``train_flags``'s.
"""

from __future__ import annotations

import dataclasses
import logging

from keyboard_lm.cli.args import data_source, default_data_to_run, load_corpus_from_args, split_from_args
from keyboard_lm.cli.flags import given, options_given
from keyboard_lm.cli.train_flags import (CENTRALIZED_FLAGS, DP_FLAGS, FED, MODEL, TRAIN_FLAGS, add_train_args,
                                        federated_only_given)
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.federated.config import SERVER_LR, FederatedConfig, LoopConfig, default_federated
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.warm_start import INIT_VOCAB
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.training.config import CentralizedConfig, default_config

logger = logging.getLogger(__name__)

def _quantization(args) -> str:
    return args.quantization_aware or "none"


def cmd_train(args) -> int:
    from keyboard_lm.errors import ConfigError

    if args.round_timeout is not None and (not args.workers or args.round_timeout <= 0):
        raise ConfigError("--round-timeout needs --workers and a number of seconds above 0")
    if args.worker_grace is not None and (not args.workers or args.worker_grace <= 0):
        raise ConfigError("--worker-grace needs --workers and a number of seconds above 0")
    if not args.workers and (args.tls_ca or args.tls_cert or args.tls_key):
        raise ConfigError("--tls-ca, --tls-cert and --tls-key secure the channels to --workers; give --workers")
    if args.worker_data_root and not args.worker_data:
        raise ConfigError("--worker-data-root says where workers find --worker-data DIR; give --worker-data too")
    if args.resume:
        from keyboard_lm.models.run_guard import refuse_if_held

        refuse_if_held(args.out)
    if args.resume and (args.centralized or _trainer_of(args.out) == "centralized"):
        return _resume_centralized(args)  # a run resumes with its own trainer
    init = warm_start_from_args(args)
    if args.centralized:
        stray = federated_only_given(args)  # refused rather than ignored, as federated runs refuse the others
        if stray:
            raise ConfigError(f"{', '.join(stray)}: federated training only, not --centralized")
        return _train_centralized(args, init)
    stray = options_given(args, CENTRALIZED_FLAGS)  # refused rather than ignored
    if stray:
        raise ConfigError(f"{', '.join(stray)}: centralized training only (add --centralized); federated "
                          "runs have --client-lr, --rounds, --local-epochs and --clip")
    return train_federated_from_args(args, init=init)


def warm_start_from_args(args):
    """The WarmStart of ``--init-from`` (None without it); fills in the model flags left out.

    Without --init-from the model flags left out take ModelConfig's defaults.
    With it they take the base's, and a flag that contradicts the base is
    refused with one line naming the base's run.json, before any data is read.
    """
    from keyboard_lm.errors import ConfigError

    init = None
    if args.init_from is None:
        if args.init_vocab is not None:
            raise ConfigError("--init-vocab needs --init-from")
    elif args.resume:
        raise ConfigError("--init-from starts a fresh run; --resume continues one from its own checkpoint")
    else:
        from keyboard_lm.models.warm_start import load_warm_start

        # Under DP the vocabulary stays the base's: one built on the clients' text is released without noise.
        vocab = args.init_vocab or ("base" if getattr(args, "dp", None) else INIT_VOCAB[0])
        init = load_warm_start(args.init_from, vocab)
    ref = init.base.model_config if init is not None else MODEL
    for dest, field in (("model", "model_type"), ("embedding_dim", "embedding_dim"), ("units", "units")):
        if getattr(args, dest, None) is None:
            setattr(args, dest, getattr(ref, field))
    if init is not None:
        init.check_model(args.model, args.embedding_dim, args.units)
    return init


def dp_options(args):
    """The DPOptions of ``train --dp ...`` (None without --dp); every value checked before data is read."""
    from keyboard_lm.errors import ConfigError

    if args.dp is None:
        stray = options_given(args, DP_FLAGS)
        if stray:
            raise ConfigError(f"{', '.join(stray)} given without --dp fedavg|ftrl")
        return None
    if args.dp_clip is None and args.dp_clip_quantile is None:
        raise ConfigError("--dp needs --dp-clip C (or, with --dp fedavg, --dp-clip-quantile Q)")
    return DPOptions(**given(args, DP_FLAGS, DPOptions))


def _trainer_of(run_dir) -> str | None:
    """run.json's trainer of RUN_DIR (None when there is no run to read: the trainer reports that)."""
    from keyboard_lm.models.run_dir import RunRecord

    record = RunRecord.peek(run_dir)
    return record.trainer if record is not None else None


def _resume_centralized(args) -> int:
    """``train --resume`` of a centralized run: its own recipe; only --epochs (the epoch to reach) and the
    data path may be given again."""
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.models.run_dir import RunRecord
    from keyboard_lm.training.centralized import resume_centralized

    stray = [f.option for f in TRAIN_FLAGS
             if f.option not in ("--centralized", "--resume", "--out", "--epochs", "--batching")
             and getattr(args, f.dest, None) not in (None, False, f.kwargs.get("default"))]
    if stray:
        raise ConfigError(f"{', '.join(stray)}: a resumed run keeps its own settings; only --epochs (the epoch "
                          "to reach) and --batching padded|packed (the same steps) may be given")
    # run.json alone (the trainer loads the run itself): where the corpus is, without reading the weights twice
    default_data_to_run(args, {"data": {"source": RunRecord.read(args.out).data_source}})
    resume_centralized(load_corpus_from_args(args), args.out, args.epochs, batching=args.batching)
    print(f"run saved to {args.out}")
    return 0


def _train_centralized(args, init=None) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.training.centralized import train_centralized
    from keyboard_lm.training.config import TrainOptions

    if args.dp is not None:
        raise ConfigError("--dp is user-level DP of federated training; it does not apply to --centralized")
    config = dataclasses.replace(default_config(warm_start=init is not None),
                                 **given(args, TRAIN_FLAGS, CentralizedConfig))
    corpus, split = load_corpus_from_args(args), split_from_args(args)
    if init is not None:
        init = init.check_overlap(corpus, split)
    # The vocabulary's size is --vocab-size words (plus a base's): the options', not the model's.
    model_config = ModelConfig(args.model, embedding_dim=args.embedding_dim, units=args.units,
                               quantization=_quantization(args))
    train_centralized(corpus, args.out, model_config, config, split,
                      TrainOptions(init=init, vocab_size=args.vocab_size, data_source=data_source(args),
                                   overwrite=args.overwrite))
    print(f"run saved to {args.out}")
    return 0


def federated_validation(args) -> dict:
    """--validation-fraction/--lr-decay of a federated run; off under --dp (outside its accounting)."""
    if args.dp is None:
        return {"validation_fraction": FED.validation_fraction if args.validation_fraction is None
                else args.validation_fraction,
                "lr_decay": FED.lr_decay if args.lr_decay is None else args.lr_decay}
    from keyboard_lm.federated.config import without_validation_for_dp

    asked = FederatedConfig(validation_fraction=args.validation_fraction or 0.0,
                            lr_decay=1.0 if args.lr_decay is None else args.lr_decay)
    without_validation_for_dp(asked, refuse=True)
    return {"validation_fraction": 0.0, "lr_decay": 1.0}


def federated_config_from_args(args, init) -> FederatedConfig:
    """The federated recipe of a new run: the flags given, over the default recipe for its start.

    A flag left out falls back to ``default_federated``, the recipe from random weights or, with
    --init-from, from a base.
    """
    fields = {**given(args, TRAIN_FLAGS, FederatedConfig), **federated_validation(args)}
    if "server_optimizer" in fields and "server_lr" not in fields and fields["server_optimizer"] in SERVER_LR:
        fields["server_lr"] = SERVER_LR[fields["server_optimizer"]]  # the rate belongs to the optimizer
    if args.dp and "weight_average" not in fields:
        fields["weight_average"] = 0.0  # under --dp the average is post-processing but unmeasured: off unless asked
    return dataclasses.replace(default_federated(init is not None, dp=args.dp is not None), **fields)


def train_federated_from_args(args, corpus=None, log=None, track_clients=(), init=None, audit=None) -> int:
    """Federated ``train``; ``corpus`` replaces the one --data names (``audit canaries`` plants into it and
    records its settings, ``audit``). ``log``: deprecated, a callable that takes the progress lines instead of
    ``logging``."""
    from keyboard_lm.log import lines_to

    with lines_to(log):
        _train_federated_from_args(args, corpus, track_clients, init, audit)
    return 0


def _train_federated_from_args(args, corpus, track_clients, init, audit) -> None:
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated

    split = split_from_args(args)
    from keyboard_lm.federated import local_worker

    if args.allow_all_interfaces:
        local_worker.allow_all_interfaces()
    if not args.workers:
        local_worker.check_isolation()  # refused now, not after the data is read and the model built
    if args.resume:
        # The run holds its settings (the trainer reads them, ``run_start.resume_settings``); here only where
        # its corpus is. Only --rounds (and the data path) may be given again.
        from keyboard_lm.models.run_dir import RunRecord

        record = RunRecord.read(args.out)
        default_data_to_run(args, {"data": {"source": record.data_source}})
        algorithm = (record.federated_recipe or {}).get("algorithm")
        model_config = fed = None
        data_config, loop = ClientDataConfig(), LoopConfig()
    else:
        model_config = ModelConfig(**given(args, TRAIN_FLAGS, ModelConfig), quantization=_quantization(args))
        fed = federated_config_from_args(args, init)
        data_config = ClientDataConfig(**given(args, TRAIN_FLAGS, ClientDataConfig))
        loop = LoopConfig(**given(args, TRAIN_FLAGS, LoopConfig))
        algorithm = fed.algorithm
    dp = None if args.resume else dp_options(args)
    if corpus is None:
        corpus = load_corpus_from_args(args)
    if init is not None:
        init = init.check_overlap(corpus, split)
    on_round = watchdog = worker_record = None
    if getattr(args, "workers", None):
        from keyboard_lm.federated.distributed import remote

        if algorithm == "fedatt":
            from keyboard_lm.errors import ConfigError

            # TFF: "Detected one aggregate dependent on another": FedAtt's attention weights need the
            # first aggregate before the second, which a split-and-merge round cannot compute.
            raise ConfigError("--workers: FedAtt cannot run on TFF's mergeable context (its second aggregate "
                              "depends on the first); run it on one machine")
        from keyboard_lm.federated.distributed.worker_tls import tls_from_flags

        workers = remote.parse_workers(args.workers)
        tls = tls_from_flags(args.tls_cert, args.tls_key, args.tls_ca, "--tls-ca")
        remote.set_remote_context(workers, tls=tls)
        grace = {} if args.worker_grace is None else {"grace": args.worker_grace}
        watchdog = remote.Watchdog(workers, round_timeout=args.round_timeout, tls=tls, **grace)
        watchdog.start()
        on_round = watchdog.round_done
        worker_record = {"addresses": [f"{h}:{p}" for h, p in workers], "tls": tls is not None}
        logger.info(f"training on {len(workers)} TFF workers ({'TLS' if tls else 'plaintext'}): {args.workers}")
    try:
        options = RunOptions(resume=args.resume, rounds=args.rounds if args.resume else None, init=init,
                             vocab_size=args.vocab_size, dp=dp, data_source=data_source(args),
                             overwrite=args.overwrite, track_clients=tuple(track_clients), audit=audit,
                             worker_data=getattr(args, "worker_data", None),
                             worker_data_root=getattr(args, "worker_data_root", None), workers=worker_record,
                             on_round=on_round)
        train_federated(corpus, args.out, model_config, fed, split, options, data_config=data_config, loop=loop)
    finally:
        if watchdog is not None:
            watchdog.stop()
    if audit is None:  # a canary audit measures what the model alone memorized
        from keyboard_lm.federated.phrases_run import phrases_after_training

        skip = "--no-phrases" if args.no_phrases else None
        if getattr(args, "workers", None) and skip is None:
            skip = "--workers: learn the table on one machine with `keyboard-lm phrases RUN_DIR`"
            logger.info(f"phrases: not learnt on remote workers; learn the table with `keyboard-lm phrases {args.out}`")
        phrases_after_training(args.out, corpus, skip=skip)
    logger.info(f"run saved to {args.out}")


def register(sub) -> None:
    """Add ``train``."""
    train = sub.add_parser("train", help="train a next-word model into a run directory")
    add_train_args(train)
    train.set_defaults(func=cmd_train)

"""``keyboard-lm train``: centralized or federated training (and DP) into a run directory.

Every default comes from the library's config dataclasses (``CentralizedConfig``,
``FederatedConfig``, ``ClientDataConfig``, ``LoopConfig``, ``ModelConfig``): a flag
left out is not passed, so the run gets what a Python caller gets.
"""

from __future__ import annotations

import argparse
import dataclasses

from keyboard_lm.cli.args import (VOCAB_SIZE, add_data_args, add_split_args, data_source, default_data_to_run,
                                  load_corpus_from_args, non_negative_float, non_negative_int, positive_float,
                                  positive_int, split_from_args)
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.federated.config import SERVER_LR, FederatedConfig, LoopConfig, default_federated
from keyboard_lm.federated.distributed.remote import WORKER_GRACE
from keyboard_lm.models.config import QUANTIZATION, ModelConfig
from keyboard_lm.models.warm_start import INIT_VOCAB
from keyboard_lm.training.config import CentralizedConfig, default_config

CEN, FED, CLIENT, LOOP, MODEL = CentralizedConfig(), FederatedConfig(), ClientDataConfig(), LoopConfig(), ModelConfig()
FED_FT = default_federated(warm_start=True)  # the federated recipe of a run with --init-from
FT = default_config(warm_start=True)  # the centralized recipe of a run with --init-from


def _fed_default(name: str) -> str:
    """A federated field's default for --help: from random weights, and from a base where that differs."""
    scratch, warm = getattr(FED, name), getattr(FED_FT, name)
    show = (lambda v: "off" if v is None else f"{v:g}" if isinstance(v, float) else str(v))
    return show(scratch) if scratch == warm else f"{show(scratch)}; {show(warm)} from a base"


#: Flags of the "centralized training" group; a federated run refuses them rather than ignore them.
_CENTRALIZED_ONLY = ("epochs", "optimizer", "lr", "clipnorm", "weight_decay", "weight_drop", "patience",
                     "ngram_teacher", "sampled_softmax")


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
    init = warm_start_from_args(args)
    if args.centralized:
        given = [f for f, v in (("--workers", args.workers), ("--worker-data", args.worker_data)) if v]
        if given:
            raise ConfigError(f"{', '.join(given)}: federated training only, not --centralized")
        return _train_centralized(args, init)
    given = [f"--{f.replace('_', '-')}" for f in _CENTRALIZED_ONLY if getattr(args, f, None) is not None]
    if given:
        raise ConfigError(f"{', '.join(given)}: centralized training only (add --centralized); federated "
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

        init = load_warm_start(args.init_from, args.init_vocab or INIT_VOCAB[0])
    ref = init.base.model_config if init is not None else MODEL
    for flag, field in (("model", "model_type"), ("embedding_dim", "embedding_dim"), ("units", "units")):
        if getattr(args, flag, None) is None:
            setattr(args, flag, getattr(ref, field))
    if init is not None:
        init.check_model(args.model, args.embedding_dim, args.units)
    return init


_DP_FLAGS = ("dp_noise_multiplier", "dp_clip", "dp_clip_quantile", "dp_delta", "dp_sampling", "dp_epsilon",
             "dp_tree_restart")


def dp_options(args):
    """The DPOptions of ``train --dp ...`` (None without --dp); every value checked before data is read."""
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.privacy.config import DPOptions

    if args.dp is None:
        given = [f"--{f.replace('_', '-')}" for f in _DP_FLAGS if getattr(args, f) is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} given without --dp fedavg|ftrl")
        return None
    if args.dp_clip is None and args.dp_clip_quantile is None:
        raise ConfigError("--dp needs --dp-clip C (or, with --dp fedavg, --dp-clip-quantile Q)")
    return DPOptions(args.dp, noise_multiplier=args.dp_noise_multiplier, clip=args.dp_clip,
                     clip_quantile=args.dp_clip_quantile, delta=args.dp_delta, sampling=args.dp_sampling,
                     target_epsilon=args.dp_epsilon, tree_restart=args.dp_tree_restart)


def _train_centralized(args, init=None) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.training.centralized import train_centralized

    if args.resume:
        raise ConfigError("--resume applies to federated runs; centralized runs are short and restart")
    if args.dp is not None:
        raise ConfigError("--dp is user-level DP of federated training; it does not apply to --centralized")
    given = {"optimizer": args.optimizer, "learning_rate": args.lr, "epochs": args.epochs,
             "batch_size": args.batch_size, "dropout": args.dropout, "weight_decay": args.weight_decay,
             "weight_drop": args.weight_drop, "weight_average": args.weight_average,
             "validation_fraction": args.validation_fraction, "lr_decay": args.lr_decay,
             "patience": args.patience, "ngram_teacher": args.ngram_teacher,
             "sampled_softmax": args.sampled_softmax}
    if args.clipnorm is not None:
        given["clipnorm"] = args.clipnorm if args.clipnorm > 0 else None
    config = dataclasses.replace(default_config(warm_start=init is not None), seq_len=args.seq_len, seed=args.seed,
                                 **{k: v for k, v in given.items() if v is not None})
    corpus, split = load_corpus_from_args(args), split_from_args(args)
    if init is not None:
        init = init.check_overlap(corpus, split)
    train_centralized(corpus, args.out, args.model, args.vocab_size, args.embedding_dim, args.units,
                      config, split, quantization=_quantization(args),
                      data_source=data_source(args), overwrite=args.overwrite, init=init)
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


#: Federated flags left unset by the parser: each falls back to ``default_federated``, the recipe from random
#: weights or, with --init-from, from a base (``WARM_START``).
_FEDERATED_FLAGS = ("algorithm", "server_optimizer", "server_lr", "server_momentum", "client_lr", "client_clipnorm",
                    "clients_per_round", "rounds", "fedatt_p", "fedatt_eps", "clip", "dropout")


def federated_config_from_args(args, init) -> FederatedConfig:
    """The federated recipe of a new run: the flags given, over the default recipe for its start."""
    given = {f: getattr(args, f) for f in _FEDERATED_FLAGS if getattr(args, f, None) is not None}
    if "client_clipnorm" in given:
        given["client_clipnorm"] = given["client_clipnorm"] or None  # 0 = off
    if "server_optimizer" in given and "server_lr" not in given and given["server_optimizer"] in SERVER_LR:
        given["server_lr"] = SERVER_LR[given["server_optimizer"]]  # the rate belongs to the optimizer
    if args.weight_average is not None:
        given["weight_average"] = args.weight_average
    elif args.dp:
        given["weight_average"] = 0.0  # under --dp the average is post-processing but unmeasured: off unless asked
    return dataclasses.replace(default_federated(init is not None, dp=args.dp is not None),
                               compression=bool(args.compression),
                               seed=args.seed, **federated_validation(args), **given)


def train_federated_from_args(args, corpus=None, log=print, track_clients=(), init=None) -> int:
    """Federated ``train``; ``corpus`` replaces the one --data names (``audit canaries`` plants into it)."""
    from keyboard_lm.federated.trainer import RunOptions, train_federated

    split = split_from_args(args)
    if args.resume:
        # The run directory holds the settings; only --rounds (and the data path) may be given again.
        from keyboard_lm.models.run_dir import load_run

        saved = load_run(args.out).info
        default_data_to_run(args, saved)
        from keyboard_lm.data.split import SplitConfig

        split = SplitConfig(**saved["data"]["split"])
        # Without --rounds a resumed run continues to its own round count.
        fed = FederatedConfig(**{**saved["federated"], "rounds": args.rounds or saved["federated"]["rounds"]})
        data_config = ClientDataConfig(**saved["client_data"])
        loop = LoopConfig(**saved["loop"])
        model_config = None
    else:
        model_config = ModelConfig(args.model, args.vocab_size, args.embedding_dim, args.units,
                                   _quantization(args))
        fed = federated_config_from_args(args, init)
        data_config = ClientDataConfig(max_seq_len=args.seq_len, batch_size=args.batch_size or CLIENT.batch_size,
                                       epochs=args.local_epochs, max_batches=args.max_batches)
        loop = LoopConfig(eval_every=args.eval_every, checkpoint_every=args.checkpoint_every)
    dp = None if args.resume else dp_options(args)
    if corpus is None:
        corpus = load_corpus_from_args(args)
    if init is not None:
        init = init.check_overlap(corpus, split, log)
    on_round = watchdog = worker_record = None
    if getattr(args, "workers", None):
        from keyboard_lm.federated.distributed import remote

        if fed.algorithm == "fedatt":
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
        log(f"training on {len(workers)} TFF workers ({'TLS' if tls else 'plaintext'}): {args.workers}")
    try:
        options = RunOptions(resume=args.resume, init=init, vocab_size=args.vocab_size, dp=dp,
                             data_source=data_source(args), overwrite=args.overwrite,
                             track_clients=tuple(track_clients), worker_data=getattr(args, "worker_data", None),
                             worker_data_root=getattr(args, "worker_data_root", None), workers=worker_record,
                             on_round=on_round, log=log)
        train_federated(corpus, args.out, model_config, fed, data_config, split, loop, options)
    finally:
        if watchdog is not None:
            watchdog.stop()
    log(f"run saved to {args.out}")
    return 0


def add_train_args(train: argparse.ArgumentParser, out_required: bool = True) -> None:
    """Every option of ``train`` (``audit canaries`` trains with the same ones)."""
    add_data_args(train)
    add_split_args(train)
    train.add_argument("--centralized", action="store_true",
                       help="server-trained baseline: SGD on the pooled training clients (default: federated)")
    train.add_argument("--model", default=None,
                       help=f"cifg | si-cifg | lstm | gru ({MODEL.model_type}; with --init-from, the base's)")
    train.add_argument("--vocab-size", type=positive_int, default=VOCAB_SIZE,
                       help="incl. 4 special tokens (%(default)s)")
    train.add_argument("--embedding-dim", type=positive_int, default=None,
                       help=f"D, tied embedding and projection ({MODEL.embedding_dim}; with --init-from, the base's)")
    train.add_argument("--units", type=positive_int, default=None,
                       help=f"H, cell size ({MODEL.units}; with --init-from, the base's)")
    train.add_argument("--init-from", metavar="base|RUN_DIR", default=None,
                       help="start from the weights of another run, or of the base model shipped with the "
                            "package (pretrained on public English text, docs/training.md); default: random")
    train.add_argument("--init-vocab", choices=INIT_VOCAB, default=None,
                       help=f"with --init-from: build the vocabulary on this corpus and carry over the rows of "
                            f"the words the base knows (target), or keep the base's vocabulary (base) "
                            f"({INIT_VOCAB[0]})")
    train.add_argument("--quantization-aware", nargs="?", const="dynamic-range",
                       choices=[q for q in QUANTIZATION if q != "none"], metavar="MODE",
                       help="train computing with the int8 roundings of export mode MODE (dynamic-range, the "
                            "default, or weight-only), so the exported model computes exactly what was "
                            "trained and evaluated")
    train.add_argument("--seq-len", type=positive_int, default=CEN.seq_len, help="tokens per example (%(default)s)")
    train.add_argument("--batch-size", type=positive_int, default=None,
                       help=f"examples per batch (centralized {CEN.batch_size}, federated client batch "
                            f"{CLIENT.batch_size})")
    train.add_argument("--out", required=out_required, metavar="RUN_DIR", help="run directory to write")
    train.add_argument("--overwrite", action="store_true",
                       help="replace the run already in RUN_DIR, or write into a non-empty directory "
                            "(default: refuse; only the run's own files are removed)")
    train.add_argument("--seed", type=non_negative_int, default=CEN.seed,
                       help="seed of initialization, client sampling and shuffling (%(default)s); the split has "
                            "--split-seed")
    train.add_argument("--dropout", type=non_negative_float, default=None,
                       help=f"dropout on embedding and cell outputs (centralized {CEN.dropout}, "
                            f"{FT.dropout} from a base; federated {_fed_default('dropout')})")
    cen = train.add_argument_group("centralized training")
    cen.add_argument("--epochs", type=positive_int, default=None,
                     help=f"most passes over the pooled data ({CEN.epochs}; {FT.epochs} from a base)")
    cen.add_argument("--optimizer", default=None, choices=("sgd", "adam", "adamw"),
                     help=f"({CEN.optimizer})")
    cen.add_argument("--lr", type=positive_float, default=None, help=f"initial learning rate ({CEN.learning_rate})")
    cen.add_argument("--clipnorm", type=non_negative_float, default=None,
                     help=f"gradient norm clip, 0 = off ({CEN.clipnorm})")
    cen.add_argument("--weight-decay", type=non_negative_float, default=None,
                     help=f"decoupled weight decay, with --optimizer adamw ({CEN.weight_decay})")
    cen.add_argument("--weight-drop", type=non_negative_float, default=None,
                     help="DropConnect on the cell's recurrent weights, one mask per batch "
                          f"(Merity et al. 2018) ({CEN.weight_drop}; {FT.weight_drop} from a base)")
    train.add_argument("--weight-average", type=non_negative_float, default=None, metavar="DECAY",
                       help="keep and evaluate an exponential moving average of the weights with this decay "
                            f"per step (centralized {CEN.weight_average}) or per round (federated "
                            f"{FED.weight_average}, 0 with --dp unless given); 0 = off")
    train.add_argument("--validation-fraction", type=non_negative_float, default=None,
                       help="share of training clients, never trained on, whose recall@3 picks the epoch or "
                            "round the run keeps and decays the learning rate; 0 = keep the last "
                            f"({CEN.validation_fraction}; federated {FED.validation_fraction}, "
                            "0 with --dp)")
    train.add_argument("--lr-decay", type=positive_float, default=None,
                       help="learning-rate factor after an evaluation without validation gain (centralized "
                            f"{CEN.lr_decay}; federated {FED.lr_decay}, on the client rate)")
    cen.add_argument("--patience", type=positive_int, default=None,
                     help=f"epochs without validation gain before stopping ({CEN.patience})")
    cen.add_argument("--ngram-teacher", type=non_negative_float, default=None, metavar="WEIGHT",
                     help="mix a cross-fitted Kneser-Ney 5-gram's next-word distribution into each training "
                          f"target with this weight (distillation); 0 = off ({CEN.ngram_teacher})")
    cen.add_argument("--sampled-softmax", type=non_negative_int, default=None, metavar="N",
                     help="train with a softmax over the target and N sampled words instead of the whole "
                          "vocabulary (for pretraining on large corpora; evaluation stays exact); 0 = full "
                          f"({CEN.sampled_softmax})")
    fed = train.add_argument_group("federated training (TFF)")
    fed.add_argument("--algorithm", default=None, help=f"fedavg | fedsgd | fedatt ({_fed_default('algorithm')})")
    fed.add_argument("--server-optimizer", default=None,
                     help=f"sgd | nesterov (FedAvgM) | adam (FedAdam) ({_fed_default('server_optimizer')}; "
                          "under --dp the mechanism's own server step)")
    fed.add_argument("--server-lr", type=float, default=None,
                     help=f"server learning rate ({_fed_default('server_lr')}; with --server-optimizer "
                          f"alone: {', '.join(f'{k} {v:g}' for k, v in SERVER_LR.items())})")
    fed.add_argument("--server-momentum", type=float, default=None,
                     help=f"Nesterov momentum ({_fed_default('server_momentum')})")
    fed.add_argument("--client-lr", type=float, default=None,
                     help=f"client SGD learning rate ({_fed_default('client_lr')})")
    fed.add_argument("--client-clipnorm", type=non_negative_float, default=None, metavar="NORM",
                     help=f"clip each client step's gradient to this global L2 norm; 0 = off "
                          f"({_fed_default('client_clipnorm')})")
    fed.add_argument("--clients-per-round", type=positive_int, default=None,
                     help="K, sampled uniformly; at most the number of training clients "
                          f"({_fed_default('clients_per_round')})")
    fed.add_argument("--rounds", type=positive_int, default=None,
                     help=f"rounds to run ({_fed_default('rounds')}); with --resume, the round to reach (default: "
                          "the run's own count)")
    fed.add_argument("--local-epochs", type=positive_int, default=CLIENT.epochs,
                     help="client epochs per round (%(default)s)")
    fed.add_argument("--max-batches", type=positive_int, default=CLIENT.max_batches,
                     help="cap on batches per client and round, drawn from all of the client's examples "
                          "(%(default)s)")
    fed.add_argument("--clip", default=None, metavar="adaptive|none|NORM",
                     help="update clipping, the same for every algorithm: adaptive (TFF's adaptive zeroing and "
                          "quantile clipping, the default), none, or a fixed L2 norm")
    fed.add_argument("--fedatt-p", type=float, default=None, help=f"FedAtt norm order p ({FED.fedatt_p})")
    fed.add_argument("--fedatt-eps", type=float, default=None, help=f"FedAtt step size eps ({FED.fedatt_eps})")
    fed.add_argument("--compression", action="store_true", help="stochastic 8-bit quantized uploads")
    fed.add_argument("--eval-every", type=positive_int, default=LOOP.eval_every,
                     help="evaluate held-out clients every N rounds and at the end (%(default)s)")
    fed.add_argument("--checkpoint-every", type=positive_int, default=LOOP.checkpoint_every,
                     help="save program state every N rounds (%(default)s)")
    fed.add_argument("--resume", action="store_true", help="continue RUN_DIR from its latest checkpoint")
    fed.add_argument("--workers", metavar="HOST:PORT,...",
                     help="spread each round's clients over these TFF workers (keyboard-lm worker), merged by "
                          "TFF's mergeable context; default: one local worker")
    fed.add_argument("--tls-ca", metavar="FILE",
                     help="with --workers: reach the workers over TLS, trusting the CA (PEM) that signed their "
                          "certificate (worker --tls-cert); needs --tls-cert and --tls-key")
    fed.add_argument("--tls-cert", metavar="FILE",
                     help="with --tls-ca: the client certificate (PEM) presented to the workers, signed by their "
                          "--tls-client-ca")
    fed.add_argument("--tls-key", metavar="FILE", help="with --tls-ca: the client certificate's private key (PEM)")
    fed.add_argument("--round-timeout", type=float, default=None, metavar="S",
                     help="with --workers: end the run (exit 3, resumable) when no round finishes in S seconds "
                          "(default: 10x the slowest round so far, at least 600 s; 1800 s for the first round)")
    fed.add_argument("--worker-grace", type=float, default=None, metavar="S",
                     help="with --workers: end the run (exit 3, resumable) when a worker has refused connections "
                          f"or not answered probes for S seconds (default: {WORKER_GRACE:g} s)")
    fed.add_argument("--worker-data", metavar="DIR",
                     help="write the training clients' encoded shards to DIR once; each round the workers read "
                          "their clients' data from there instead of receiving it from this process "
                          "(docs/distributed.md)")
    fed.add_argument("--worker-data-root", metavar="PATH",
                     help="where the workers find the --worker-data directory (default: the same path, "
                          "e.g. a shared filesystem)")
    dpg = train.add_argument_group("user-level differential privacy (federated; see docs/privacy.md)")
    dpg.add_argument("--dp", choices=("fedavg", "ftrl"), default=None,
                     help="DP-FedAvg (Poisson sampling, RDP accounting) or DP-FTRL (tree noise, cyclic "
                          "participation schedule, zCDP accounting); unweighted, the DP clip replaces --clip")
    dpg.add_argument("--dp-noise-multiplier", type=float, default=None, metavar="Z",
                     help="Gaussian noise std / clip (or give --dp-epsilon)")
    dpg.add_argument("--dp-epsilon", type=float, default=None, metavar="EPS",
                     help="calibrate Z so that eps after --rounds rounds is EPS (dp_accounting)")
    dpg.add_argument("--dp-clip", type=float, default=None, metavar="C", help="L2 clip of each client update")
    dpg.add_argument("--dp-clip-quantile", type=float, default=None, metavar="Q",
                     help="adaptive clip at the Q quantile of update norms (--dp fedavg)")
    dpg.add_argument("--dp-delta", type=float, default=None, metavar="D",
                     help="delta of the reported (eps, delta) (1 / population^1.1)")
    dpg.add_argument("--dp-sampling", choices=("poisson", "fixed", "schedule"), default=None,
                     help="fedavg: poisson (default) or fixed-size; ftrl: schedule")
    dpg.add_argument("--dp-tree-restart", default=None, metavar="none|epoch|ROUNDS",
                     help="--dp ftrl: one tree for the whole run (none, the default), a new tree every epoch "
                          "(N // K rounds, so each tree holds a client at most once: lower eps at the same noise, "
                          "but each finished tree's noise stays in the model), or every ROUNDS rounds")


def register(sub) -> None:
    """Add ``train``."""
    train = sub.add_parser("train", help="train a next-word model into a run directory")
    add_train_args(train)
    train.set_defaults(func=cmd_train)

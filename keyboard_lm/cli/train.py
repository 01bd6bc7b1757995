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
from keyboard_lm.cli.flags import add_flags, field_flag, flag, given, options_given
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.federated.config import SERVER_LR, FederatedConfig, LoopConfig, default_federated
from keyboard_lm.federated.distributed.remote import WORKER_GRACE
from keyboard_lm.models.config import QUANTIZATION, ModelConfig
from keyboard_lm.models.warm_start import INIT_VOCAB
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.training.config import CentralizedConfig, default_config

CEN, FED, CLIENT, LOOP, MODEL = CentralizedConfig(), FederatedConfig(), ClientDataConfig(), LoopConfig(), ModelConfig()
FED_FT = default_federated(warm_start=True)  # the federated recipe of a run with --init-from
FT = default_config(warm_start=True)  # the centralized recipe of a run with --init-from


def _fed_default(name: str) -> str:
    """A federated field's default for --help: from random weights, and from a base where that differs."""
    scratch, warm = getattr(FED, name), getattr(FED_FT, name)
    show = (lambda v: "off" if v is None else f"{v:g}" if isinstance(v, float) else str(v))
    return show(scratch) if scratch == warm else f"{show(scratch)}; {show(warm)} from a base"


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
    if args.resume and (args.centralized or _trainer_of(args.out) == "centralized"):
        return _resume_centralized(args)  # a run resumes with its own trainer
    init = warm_start_from_args(args)
    if args.centralized:
        stray = [f for f, v in (("--workers", args.workers), ("--worker-data", args.worker_data)) if v]
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
    import json
    import os

    if not run_dir:
        return None
    try:
        with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
            return json.load(f).get("trainer")
    except (OSError, ValueError, AttributeError):
        return None


def _resume_centralized(args) -> int:
    """``train --resume`` of a centralized run: its own recipe; only --epochs (the epoch to reach) and the
    data path may be given again."""
    import os

    from keyboard_lm.errors import ConfigError
    from keyboard_lm.models.run_dir import RUN_FILE, read_json
    from keyboard_lm.training.centralized import resume_centralized

    stray = [f.option for f in TRAIN_FLAGS if f.option not in ("--centralized", "--resume", "--out", "--epochs")
             and getattr(args, f.dest, None) not in (None, False, f.kwargs.get("default"))]
    if stray:
        raise ConfigError(f"{', '.join(stray)}: a resumed run keeps its own settings; only --epochs (the epoch "
                          "to reach) may be given")
    # run.json alone (the trainer loads the run itself): where the corpus is, without reading the weights twice
    default_data_to_run(args, read_json(os.path.join(args.out, RUN_FILE), f"{args.out}: no run to resume "
                                        f"({RUN_FILE} is missing)"))
    resume_centralized(load_corpus_from_args(args), args.out, args.epochs)
    print(f"run saved to {args.out}")
    return 0


def _train_centralized(args, init=None) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.training.centralized import train_centralized

    if args.dp is not None:
        raise ConfigError("--dp is user-level DP of federated training; it does not apply to --centralized")
    config = dataclasses.replace(default_config(warm_start=init is not None),
                                 **given(args, TRAIN_FLAGS, CentralizedConfig))
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


def train_federated_from_args(args, corpus=None, log=print, track_clients=(), init=None, audit=None) -> int:
    """Federated ``train``; ``corpus`` replaces the one --data names (``audit canaries`` plants into it and
    records its settings, ``audit``)."""
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated

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
        model_config = ModelConfig(**given(args, TRAIN_FLAGS, ModelConfig), quantization=_quantization(args))
        fed = federated_config_from_args(args, init)
        data_config = ClientDataConfig(**given(args, TRAIN_FLAGS, ClientDataConfig))
        loop = LoopConfig(**given(args, TRAIN_FLAGS, LoopConfig))
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
                             track_clients=tuple(track_clients), audit=audit,
                             worker_data=getattr(args, "worker_data", None),
                             worker_data_root=getattr(args, "worker_data_root", None), workers=worker_record,
                             on_round=on_round, log=log)
        train_federated(corpus, args.out, model_config, fed, data_config, split, loop, options)
    finally:
        if watchdog is not None:
            watchdog.stop()
    log(f"run saved to {args.out}")
    return 0


class _BothDefaults:
    """``{both.NAME}`` in a help template: a federated field's default, and its default from a base if different."""

    def __getattr__(self, name: str) -> str:
        return _fed_default(name)


#: What a help template may name: the default configs (from random weights and from a base) and a few constants.
_HELP = dict(cen=CEN, ft=FT, fed=FED, client=CLIENT, loop=LOOP, model=MODEL, both=_BothDefaults(),
             init_vocab=INIT_VOCAB[0], worker_grace=WORKER_GRACE,
             server_lr_table=", ".join(f"{k} {v:g}" for k, v in SERVER_LR.items()))
_BOTH = (CentralizedConfig, FederatedConfig)

#: ``train``'s main options, in --help order (the data and split flags come first, from cli.args).
MAIN_FLAGS = (
    flag("--centralized", "server-trained baseline: SGD on the pooled training clients (default: federated)",
         action="store_true"),
    field_flag("--model", ModelConfig, "cifg | si-cifg | lstm | gru ({model.model_type}; with --init-from, the "
               "base's)", field="model_type", default=None),
    field_flag("--vocab-size", ModelConfig, "incl. 4 special tokens (%(default)s)", type=positive_int,
               default=VOCAB_SIZE),
    field_flag("--embedding-dim", ModelConfig, "D, tied embedding and projection ({model.embedding_dim}; with "
               "--init-from, the base's)", type=positive_int, default=None),
    field_flag("--units", ModelConfig, "H, cell size ({model.units}; with --init-from, the base's)",
               type=positive_int, default=None),
    flag("--init-from", "start from the weights of another run, or of the base model shipped with the package "
         "(pretrained on public English text, docs/training.md); default: random", metavar="base|RUN_DIR",
         default=None),
    flag("--init-vocab", "with --init-from: build the vocabulary on this corpus and carry over the rows of the "
         "words the base knows (target), or keep the base's vocabulary (base) ({init_vocab}; under --dp, base: "
         "a vocabulary built on the clients' text is outside the DP guarantee)",
         choices=INIT_VOCAB, default=None),
    flag("--quantization-aware", "train computing with the int8 roundings of export mode MODE (dynamic-range, "
         "the default, or weight-only), so the exported model computes exactly what was trained and evaluated",
         nargs="?", const="dynamic-range", choices=[q for q in QUANTIZATION if q != "none"], metavar="MODE"),
    field_flag("--seq-len", {CentralizedConfig: "seq_len", ClientDataConfig: "max_seq_len"},
               "tokens per example (%(default)s)", type=positive_int, default=CEN.seq_len),
    field_flag("--batch-size", (CentralizedConfig, ClientDataConfig), "examples per batch (centralized "
               "{cen.batch_size}, federated client batch {client.batch_size})", type=positive_int, default=None),
    flag("--out", "run directory to write", metavar="RUN_DIR"),
    flag("--overwrite", "replace the run already in RUN_DIR, or write into a non-empty directory (default: "
         "refuse; only the run's own files are removed)", action="store_true"),
    field_flag("--seed", _BOTH, "seed of initialization, client sampling and shuffling (%(default)s); the split "
               "has --split-seed", type=non_negative_int, default=CEN.seed),
    field_flag("--dropout", _BOTH, "dropout on embedding and cell outputs (centralized {cen.dropout}, "
               "{ft.dropout} from a base; federated {both.dropout})", type=non_negative_float, default=None),
    field_flag("--weight-average", _BOTH, "keep and evaluate an exponential moving average of the weights with "
               "this decay per step (centralized {cen.weight_average}) or per round (federated "
               "{fed.weight_average}, 0 with --dp unless given); 0 = off", type=non_negative_float, default=None,
               metavar="DECAY"),
    field_flag("--validation-fraction", _BOTH, "share of training clients, never trained on, whose recall@3 "
               "picks the epoch or round the run keeps and decays the learning rate; 0 = keep the last "
               "({cen.validation_fraction}; federated {fed.validation_fraction}, 0 with --dp)",
               type=non_negative_float, default=None),
    field_flag("--lr-decay", _BOTH, "learning-rate factor after an evaluation without validation gain "
               "(centralized {cen.lr_decay}; federated {fed.lr_decay}, on the client rate)", type=positive_float,
               default=None),
)

#: The "centralized training" group: CentralizedConfig's own fields; a federated run refuses them.
CENTRALIZED_FLAGS = tuple(field_flag(option, CentralizedConfig, text, **kw) for option, text, kw in (
    ("--epochs", "most passes over the pooled data ({cen.epochs}; {ft.epochs} from a base); with --resume, the "
     "epoch to reach",
     dict(type=positive_int)),
    ("--optimizer", "({cen.optimizer})", dict(choices=("sgd", "adam", "adamw"))),
    ("--lr", "initial learning rate ({cen.learning_rate})", dict(type=positive_float, field="learning_rate")),
    ("--clipnorm", "gradient norm clip, 0 = off ({cen.clipnorm})", dict(type=non_negative_float, zero_off=True)),
    ("--weight-decay", "decoupled weight decay, with --optimizer adamw ({cen.weight_decay})",
     dict(type=non_negative_float)),
    ("--weight-drop", "DropConnect on the cell's recurrent weights, one mask per batch (Merity et al. 2018) "
     "({cen.weight_drop}; {ft.weight_drop} from a base)", dict(type=non_negative_float)),
    ("--patience", "epochs without validation gain before stopping ({cen.patience})", dict(type=positive_int)),
    ("--ngram-teacher", "mix a cross-fitted Kneser-Ney 5-gram's next-word distribution into each training target "
     "with this weight (distillation); 0 = off ({cen.ngram_teacher})",
     dict(type=non_negative_float, metavar="WEIGHT")),
    ("--sampled-softmax", "train with a softmax over the target and N sampled words instead of the whole "
     "vocabulary (for pretraining on large corpora; evaluation stays exact); 0 = full ({cen.sampled_softmax})",
     dict(type=non_negative_int, metavar="N")),
))

#: The "federated training (TFF)" group: FederatedConfig, ClientDataConfig and LoopConfig fields, then the
#: distributed runtime's flags.
FEDERATED_FLAGS = (
    field_flag("--algorithm", FederatedConfig, "fedavg | fedsgd | fedatt ({both.algorithm})", default=None),
    field_flag("--server-optimizer", FederatedConfig, "sgd | nesterov (FedAvgM) | adam (FedAdam) "
               "({both.server_optimizer}; under --dp the mechanism's own server step)", default=None),
    field_flag("--server-lr", FederatedConfig, "server learning rate ({both.server_lr}; with --server-optimizer "
               "alone: {server_lr_table})", type=float, default=None),
    field_flag("--server-momentum", FederatedConfig, "Nesterov momentum ({both.server_momentum})", type=float,
               default=None),
    field_flag("--server-adam-epsilon", FederatedConfig, "FedAdam's epsilon ({both.server_adam_epsilon}; Ro et "
               "al.: 1e-8)", type=float, default=None, metavar="EPS"),
    field_flag("--client-lr", FederatedConfig, "client SGD learning rate ({both.client_lr})", type=float,
               default=None),
    field_flag("--client-clipnorm", FederatedConfig, "clip each client step's gradient to this global L2 norm; "
               "0 = off ({both.client_clipnorm})", zero_off=True, type=non_negative_float, default=None,
               metavar="NORM"),
    field_flag("--client-momentum", FederatedConfig, "client SGD momentum; 0 = plain SGD ({both.client_momentum}; "
               "Ji et al.'s clients: 0.5)", type=float, default=None),
    field_flag("--clients-per-round", FederatedConfig, "K, sampled uniformly; at most the number of training "
               "clients ({both.clients_per_round})", type=positive_int, default=None),
    field_flag("--rounds", FederatedConfig, "rounds to run ({both.rounds}); with --resume, the round to reach "
               "(default: the run's own count)", type=positive_int, default=None),
    field_flag("--local-epochs", ClientDataConfig, "client epochs per round (%(default)s)", field="epochs",
               type=positive_int, default=CLIENT.epochs),
    field_flag("--max-batches", ClientDataConfig, "cap on batches per client and round, drawn from all of the "
               "client's examples (%(default)s)", type=positive_int, default=CLIENT.max_batches),
    field_flag("--clip", FederatedConfig, "update clipping, the same for every algorithm: adaptive (TFF's "
               "adaptive zeroing and quantile clipping, the default), none, or a fixed L2 norm", default=None,
               metavar="adaptive|none|NORM"),
    field_flag("--fedatt-p", FederatedConfig, "FedAtt norm order p ({fed.fedatt_p})", type=float, default=None),
    field_flag("--fedatt-eps", FederatedConfig, "FedAtt step size eps ({fed.fedatt_eps})", type=float,
               default=None),
    field_flag("--fedatt-norm", FederatedConfig, "FedAtt's layer distance: flat (the p-norm of the flattened "
               "layer) or spectral (a matrix's largest singular value, as Ji et al.'s code) ({fed.fedatt_norm})",
               choices=["flat", "spectral"], default=None),
    field_flag("--server-noise", FederatedConfig, "add N(0, SD^2) to every weight of the global model after each "
               "round (Ji et al.'s eq. 6; needs an SGD server; not differential privacy, see --dp) "
               "({fed.server_noise})", type=float, default=None, metavar="SD"),
    field_flag("--compression", FederatedConfig, "stochastic 8-bit quantized uploads", action="store_true"),
    field_flag("--eval-every", LoopConfig, "evaluate held-out clients every N rounds and at the end "
               "(%(default)s)", type=positive_int, default=LOOP.eval_every),
    field_flag("--checkpoint-every", LoopConfig, "save program state every N rounds (%(default)s)",
               type=positive_int, default=LOOP.checkpoint_every),
    flag("--resume", "continue RUN_DIR from its latest checkpoint (a federated run's last saved round, a "
         "centralized run's last epoch), with the run's own settings", action="store_true"),
    flag("--workers", "spread each round's clients over these TFF workers (keyboard-lm worker), merged by TFF's "
         "mergeable context; default: one local worker", metavar="HOST:PORT,..."),
    flag("--tls-ca", "with --workers: reach the workers over TLS, trusting the CA (PEM) that signed their "
         "certificate (worker --tls-cert); needs --tls-cert and --tls-key", metavar="FILE"),
    flag("--tls-cert", "with --tls-ca: the client certificate (PEM) presented to the workers, signed by their "
         "--tls-client-ca", metavar="FILE"),
    flag("--tls-key", "with --tls-ca: the client certificate's private key (PEM)", metavar="FILE"),
    flag("--round-timeout", "with --workers: end the run (exit 3, resumable) when no round finishes in S seconds "
         "(default: 10x the slowest round so far, at least 600 s; 1800 s for the first round)", type=float,
         default=None, metavar="S"),
    flag("--worker-grace", "with --workers: end the run (exit 3, resumable) when a worker has refused "
         "connections or not answered probes for S seconds (default: {worker_grace:g} s)", type=float,
         default=None, metavar="S"),
    flag("--worker-data", "write the training clients' encoded shards to DIR once; each round the workers read "
         "their clients' data from there instead of receiving it from this process (docs/distributed.md)",
         metavar="DIR"),
    flag("--worker-data-root", "where the workers find the --worker-data directory (default: the same path, "
         "e.g. a shared filesystem)", metavar="PATH"),
)

#: The user-level DP group: the fields of privacy.config.DPOptions.
DP_FLAGS = tuple(field_flag(option, DPOptions, text, default=None, **kw) for option, text, kw in (
    ("--dp", "DP-FedAvg (Poisson sampling, RDP accounting), DP-FTRL (tree noise, cyclic participation "
     "schedule, zCDP accounting) or BLT-DP-FTRL (the same with buffered-linear-Toeplitz noise); unweighted, the DP "
     "clip replaces --clip", dict(field="mechanism", choices=("fedavg", "ftrl", "blt"))),
    ("--dp-noise-multiplier", "Gaussian noise std / clip (or give --dp-epsilon)",
     dict(field="noise_multiplier", type=float, metavar="Z")),
    ("--dp-epsilon", "calibrate Z so that eps after --rounds rounds is EPS (dp_accounting)",
     dict(field="target_epsilon", type=float, metavar="EPS")),
    ("--dp-clip", "L2 clip of each client update", dict(field="clip", type=float, metavar="C")),
    ("--dp-clip-quantile", "adaptive clip at the Q quantile of update norms (--dp fedavg)",
     dict(field="clip_quantile", type=float, metavar="Q")),
    ("--dp-delta", "delta of the reported (eps, delta) (1 / population^1.1)",
     dict(field="delta", type=float, metavar="D")),
    ("--dp-sampling", "fedavg: poisson (default) or fixed-size; ftrl: schedule",
     dict(field="sampling", choices=("poisson", "fixed", "schedule"))),
    ("--dp-tree-restart", "--dp ftrl: one tree for the whole run (none, the default), a new tree every epoch "
     "(N // K rounds, so each tree holds a client at most once: lower eps at the same noise, but each finished "
     "tree's noise stays in the model), or every ROUNDS rounds", dict(field="tree_restart",
                                                                     metavar="none|epoch|ROUNDS")),
))

#: Every flag of ``train`` after the data and split flags.
TRAIN_FLAGS = MAIN_FLAGS + CENTRALIZED_FLAGS + FEDERATED_FLAGS + DP_FLAGS


def _split_at(flags, option: str):
    at = [f.option for f in flags].index(option)
    return flags[:at], flags[at:]


def add_train_args(train: argparse.ArgumentParser, out_required: bool = True) -> None:
    """Every option of ``train`` (``audit canaries`` trains with the same ones), from the flag tables."""
    add_data_args(train)
    add_split_args(train)
    main = [dataclasses.replace(f, kwargs={**f.kwargs, "required": out_required}) if f.option == "--out" else f
            for f in MAIN_FLAGS]
    cen = train.add_argument_group("centralized training")
    # Added in the order the usage line has always listed them: the three shared flags of both trainers'
    # keep-best policy sit between the centralized optimizer's flags and --patience.
    shared, keep = _split_at(main, "--weight-average"), _split_at(CENTRALIZED_FLAGS, "--patience")
    add_flags(train, shared[0], _HELP)
    add_flags(cen, keep[0], _HELP)
    add_flags(train, shared[1], _HELP)
    add_flags(cen, keep[1], _HELP)
    add_flags(train.add_argument_group("federated training (TFF)"), FEDERATED_FLAGS, _HELP)
    add_flags(train.add_argument_group("user-level differential privacy (federated; see docs/privacy.md)"),
              DP_FLAGS, _HELP)


def register(sub) -> None:
    """Add ``train``."""
    train = sub.add_parser("train", help="train a next-word model into a run directory")
    add_train_args(train)
    train.set_defaults(func=cmd_train)

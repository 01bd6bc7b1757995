"""``train``'s options: the flag tables (``MAIN_FLAGS``, ``CENTRALIZED_FLAGS``, ``FEDERATED_FLAGS``, ``DP_FLAGS``)
and ``add_train_args``, which ``train`` and ``audit canaries`` share.

Every default comes from the library's config dataclasses (``CentralizedConfig``,
``FederatedConfig``, ``ClientDataConfig``, ``LoopConfig``, ``ModelConfig``): a flag
left out is not passed, so the run gets what a Python caller gets.
"""

from __future__ import annotations

import argparse
import dataclasses

from keyboard_lm.cli.args import (VOCAB_SIZE, add_data_args, add_split_args, finite_float, non_negative_float,
                                  non_negative_int, non_negative_magnitude, positive_float, positive_int,
                                  positive_magnitude, round_count, seed_int)
from keyboard_lm.cli.flags import add_flags, field_flag, flag, options_given
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.federated.config import SERVER_LR, FederatedConfig, LoopConfig, default_federated
from keyboard_lm.federated.distributed.remote import WORKER_GRACE
from keyboard_lm.models.config import QUANTIZATION, ModelConfig
from keyboard_lm.models.warm_start import INIT_VOCAB
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.training.config import BATCHING, CentralizedConfig, default_config

CEN, FED, CLIENT, LOOP, MODEL = CentralizedConfig(), FederatedConfig(), ClientDataConfig(), LoopConfig(), ModelConfig()
FED_FT = default_federated(warm_start=True)  # the federated recipe of a run with --init-from
FT = default_config(warm_start=True)  # the centralized recipe of a run with --init-from


def _fed_default(name: str) -> str:
    """A federated field's default for --help: from random weights, and from a base where that differs."""
    scratch, warm = getattr(FED, name), getattr(FED_FT, name)
    show = (lambda v: "off" if v is None else f"{v:g}" if isinstance(v, float) else str(v))
    return show(scratch) if scratch == warm else f"{show(scratch)}; {show(warm)} from a base"


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
               "has --split-seed", type=seed_int, default=CEN.seed),
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
    ("--lr", "initial learning rate ({cen.learning_rate})", dict(type=positive_magnitude, field="learning_rate")),
    ("--clipnorm", "gradient norm clip, 0 = off ({cen.clipnorm})", dict(type=non_negative_magnitude, zero_off=True)),
    ("--weight-decay", "decoupled weight decay, with --optimizer adamw ({cen.weight_decay})",
     dict(type=non_negative_magnitude)),
    ("--weight-drop", "DropConnect on the cell's recurrent weights, one mask per batch (Merity et al. 2018) "
     "({cen.weight_drop}; {ft.weight_drop} from a base)", dict(type=non_negative_float)),
    ("--patience", "epochs without validation gain before stopping ({cen.patience})", dict(type=positive_int)),
    ("--ngram-teacher", "mix a cross-fitted Kneser-Ney 5-gram's next-word distribution into each training target "
     "with this weight (distillation); 0 = off ({cen.ngram_teacher})",
     dict(type=non_negative_float, metavar="WEIGHT")),
    ("--sampled-softmax", "train with a softmax over the target and N sampled words instead of the whole "
     "vocabulary (for pretraining on large corpora; evaluation stays exact); 0 = full ({cen.sampled_softmax})",
     dict(type=non_negative_int, metavar="N")),
    ("--batching", "padded: every example padded to --seq-len; length: batches of similar-length examples with "
     "their trailing pads cut, about as many real words per batch, faster but behind per epoch at batch 256; "
     "packed: each padded batch's examples end to end in full rows, the state reset at each (the same step "
     "on fewer positions) ({cen.batching})",
     dict(choices=BATCHING)),
))

#: The "federated training (TFF)" group: FederatedConfig, ClientDataConfig and LoopConfig fields, then the
#: distributed runtime's flags.
FEDERATED_FLAGS = (
    field_flag("--algorithm", FederatedConfig, "fedavg | fedsgd | fedatt ({both.algorithm})", default=None),
    field_flag("--server-optimizer", FederatedConfig, "sgd | nesterov (FedAvgM) | adam (FedAdam) "
               "({both.server_optimizer}; under --dp the mechanism's own server step)", default=None),
    field_flag("--server-lr", FederatedConfig, "server learning rate ({both.server_lr}; with --server-optimizer "
               "alone: {server_lr_table})", type=positive_magnitude, default=None),
    field_flag("--server-momentum", FederatedConfig, "Nesterov momentum ({both.server_momentum})",
               type=finite_float, default=None),
    field_flag("--server-adam-epsilon", FederatedConfig, "FedAdam's epsilon ({both.server_adam_epsilon}; Ro et "
               "al.: 1e-8)", type=positive_magnitude, default=None, metavar="EPS"),
    field_flag("--client-lr", FederatedConfig, "client SGD learning rate ({both.client_lr})",
               type=positive_magnitude, default=None),
    field_flag("--client-clipnorm", FederatedConfig, "clip each client step's gradient to this global L2 norm; "
               "0 = off ({both.client_clipnorm})", zero_off=True, type=non_negative_magnitude, default=None,
               metavar="NORM"),
    field_flag("--client-momentum", FederatedConfig, "client SGD momentum; 0 = plain SGD ({both.client_momentum}; "
               "Ji et al.'s clients: 0.5)", type=finite_float, default=None),
    field_flag("--clients-per-round", FederatedConfig, "K, sampled uniformly; at most the number of training "
               "clients ({both.clients_per_round})", type=positive_int, default=None),
    field_flag("--rounds", FederatedConfig, "rounds to run ({both.rounds}); with --resume, the round to reach "
               "(default: the run's own count)", type=round_count, default=None),
    field_flag("--local-epochs", ClientDataConfig, "client epochs per round ({client.epochs})", field="epochs",
               type=positive_int, default=None),
    field_flag("--max-batches", ClientDataConfig, "cap on batches per client and round, drawn from all of the "
               "client's examples ({client.max_batches})", type=positive_int, default=None),
    field_flag("--clip", FederatedConfig, "update clipping, the same for every algorithm: adaptive (TFF's "
               "adaptive zeroing and quantile clipping, the default), none, or a fixed L2 norm", default=None,
               metavar="adaptive|none|NORM"),
    field_flag("--fedatt-p", FederatedConfig, "FedAtt norm order p ({fed.fedatt_p})", type=positive_magnitude,
               default=None),
    field_flag("--fedatt-eps", FederatedConfig, "FedAtt step size eps ({fed.fedatt_eps})", type=positive_magnitude,
               default=None),
    field_flag("--fedatt-norm", FederatedConfig, "FedAtt's layer distance: flat (the p-norm of the flattened "
               "layer) or spectral (a matrix's largest singular value, as Ji et al.'s code) ({fed.fedatt_norm})",
               choices=["flat", "spectral"], default=None),
    field_flag("--server-noise", FederatedConfig, "add N(0, SD^2) to every weight of the global model after each "
               "round (Ji et al.'s eq. 6; needs an SGD server; not differential privacy, see --dp) "
               "({fed.server_noise})", type=non_negative_magnitude, default=None, metavar="SD"),
    field_flag("--compression", FederatedConfig, "stochastic 8-bit quantized uploads", action="store_true"),
    field_flag("--eval-every", LoopConfig, "evaluate held-out clients every N rounds and at the end "
               "({loop.eval_every})", type=positive_int, default=None),
    field_flag("--checkpoint-every", LoopConfig, "save program state at least every N rounds, and after every "
               "evaluation, every round kept as the best and the last ({loop.checkpoint_every})",
               type=positive_int, default=None),
    field_flag("--checkpoint-seconds", (LoopConfig, CentralizedConfig), "also save it whenever S seconds have "
               "passed since the last save; 0: by rounds only ({loop.checkpoint_seconds:g}); --centralized: inside "
               "an epoch, resumed at the same batch, 0: after each epoch only ({cen.checkpoint_seconds:g})",
               type=non_negative_magnitude, default=None, metavar="S"),
    flag("--no-phrases", "learn no phrase table after federated training (default: learn one by federated "
         "discovery on the training clients, as `keyboard-lm phrases` does; docs/training.md)", action="store_true"),
    flag("--resume", "continue RUN_DIR from its latest checkpoint (a federated run's last saved round, a "
         "centralized run's last epoch), with the run's own settings", action="store_true"),
    flag("--workers", "spread each round's clients over these TFF workers (keyboard-lm worker), merged by TFF's "
         "mergeable context; default: one local worker", metavar="HOST:PORT,..."),
    flag("--allow-all-interfaces", "where the system permits no network namespace (the run is refused there "
         "without this flag), let the local TFF worker listen on every interface with no authentication, as TFF "
         "itself starts it (docs/distributed.md)", action="store_true"),
    flag("--tls-ca", "with --workers: reach the workers over TLS, trusting the CA (PEM) that signed their "
         "certificate (worker --tls-cert); needs --tls-cert and --tls-key", metavar="FILE"),
    flag("--tls-cert", "with --tls-ca: the client certificate (PEM) presented to the workers, signed by their "
         "--tls-client-ca", metavar="FILE"),
    flag("--tls-key", "with --tls-ca: the client certificate's private key (PEM)", metavar="FILE"),
    flag("--round-timeout", "with --workers: end the run (exit 3, resumable) when no round finishes in S seconds "
         "(default: 10x the slowest round so far, at least 600 s; 1800 s for the first round)",
         type=positive_magnitude, default=None, metavar="S"),
    flag("--worker-grace", "with --workers: end the run (exit 3, resumable) when a worker has refused "
         "connections or not answered probes for S seconds (default: {worker_grace:g} s)",
         type=positive_magnitude, default=None, metavar="S"),
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
#: What a centralized run refuses rather than ignores: the federated and DP groups (not --resume and
#: --checkpoint-seconds, which both take).
FEDERATED_ONLY_FLAGS = tuple(f for f in FEDERATED_FLAGS + DP_FLAGS
                             if f.option not in ("--resume", "--checkpoint-seconds"))


def federated_only_given(args: argparse.Namespace) -> list[str]:
    """The options of ``FEDERATED_ONLY_FLAGS`` that ``args`` sets (a --centralized run refuses them, as a
    federated run refuses ``CENTRALIZED_FLAGS``)."""
    return options_given(args, FEDERATED_ONLY_FLAGS)


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

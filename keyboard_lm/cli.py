"""The ``keyboard-lm`` command line.  Flags and argument parsing live only here."""

from __future__ import annotations

import argparse
import math
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*pkg_resources.*")

from keyboard_lm.errors import KeyboardLMError  # noqa: E402
from keyboard_lm.models.config import QUANTIZATION  # noqa: E402

FORMATS = ("default", "jsonl", "textdir", "shakespeare", "stackoverflow")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump), like every other CLI error."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _int_at_least(minimum: int):
    """argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


positive_int = _int_at_least(1)
non_negative_int = _int_at_least(0)


def _float_above(minimum: float, strict: bool):
    """argparse type: a finite number > ``minimum`` (``strict``) or >= it."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or (value <= minimum if strict else value < minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum:g}, got {text}")
        return value

    return parse


positive_float = _float_above(0.0, strict=True)
non_negative_float = _float_above(0.0, strict=False)
#: Defaults of `train --centralized` as the help text states them (CentralizedConfig is the source).
_CEN = {"epochs": 40, "batch_size": 8, "optimizer": "adam", "learning_rate": 0.002, "clipnorm": 5.0, "dropout": 0.4,
        "weight_decay": 0.0, "weight_drop": 0.5, "weight_average": 0.999, "validation_fraction": 0.1,
        "lr_decay": 0.5, "patience": 3, "ngram_teacher": 0.25}
#: Flags of the "centralized training" group; a federated run refuses them rather than ignore them.
_CENTRALIZED_ONLY = ("epochs", "optimizer", "lr", "clipnorm", "weight_decay", "weight_drop", "patience",
                     "ngram_teacher")
#: Defaults of federated `train` (FederatedConfig is the source).
_FED = {"dropout": 0.2, "server_optimizer": "nesterov", "validation_fraction": 0.1, "lr_decay": 0.5,
        "weight_average": 0.99}
#: Rounds of federated `train` by default: 350 rounds of the default recipe take about 40 minutes on Tiny
#: Shakespeare on the 2-core machine, inside the 45-minute budget; validation kept round 325 (README,
#: "Federated training").
DEFAULT_ROUNDS = 350


def add_data_args(p: argparse.ArgumentParser) -> None:
    """--data/--format/--skip-bad, shared by every command that reads a corpus."""
    p.add_argument("--data", metavar="PATH",
                   help="corpus file or directory (not needed for --format default; "
                        "for stackoverflow, the download cache directory)")
    p.add_argument("--format", default="default", choices=FORMATS,
                   help="corpus format (default: the embedded chatterbot-corpus English conversations)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed records and count them, instead of stopping at the first")
    p.add_argument("--partition", default="natural", choices=("natural", "iid", "record"),
                   help="natural: the corpus' own users; iid: pool the records and deal them to "
                        "--num-clients synthetic clients (Ji et al.), seeded by --split-seed; record: one "
                        "client per record (a speech of Tiny Shakespeare, for user-level DP) (natural)")
    p.add_argument("--num-clients", type=positive_int, default=None, metavar="N",
                   help="clients of --partition iid")


def load_corpus_from_args(args):
    """The corpus named by --data/--format, re-partitioned if --partition asks."""
    from keyboard_lm.data.partition import apply_partition

    if args.format == "stackoverflow":
        from keyboard_lm.federated.client_data import stackoverflow_corpus

        corpus = stackoverflow_corpus(args.data)
    else:
        from keyboard_lm.data.corpora import load_corpus

        corpus = load_corpus(args.data, args.format, skip_bad=args.skip_bad)
    seed = getattr(args, "partition_seed", None)
    return apply_partition(corpus, getattr(args, "partition", "natural"), getattr(args, "num_clients", None),
                           getattr(args, "split_seed", 0) if seed is None else seed)


def _data_source(args) -> dict:
    """How to load the corpus again (run.json "data.source"; eval reloads it from there)."""
    source = {"path": _data_path(args), "format": args.format}
    if getattr(args, "partition", "natural") != "natural":
        source.update(partition=args.partition, num_clients=args.num_clients, partition_seed=args.split_seed)
        if args.partition == "record":
            source.update(num_clients=None, partition_seed=None)
    return source


def cmd_data_stats(args) -> int:
    from keyboard_lm.data.stats import corpus_stats, format_stats

    corpus = load_corpus_from_args(args)
    stats = corpus_stats(corpus, vocab_size=args.vocab_size,
                         split=_split_from_args(args))
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def add_split_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--heldout-fraction", type=float, default=0.1, help="share of clients held out (0.1)")
    p.add_argument("--split-seed", type=non_negative_int, default=0,
                   help="seed of the train/held-out client split, kept apart from --seed so a seed sweep "
                        "evaluates on the same clients (0)")


def _split_from_args(args):
    from keyboard_lm.data.split import SplitConfig

    return SplitConfig(heldout_fraction=args.heldout_fraction, seed=args.split_seed)


def _quantization(args) -> str:
    return args.quantization_aware or "none"


def cmd_train(args) -> int:
    from keyboard_lm.errors import ConfigError

    if args.round_timeout is not None and (not args.workers or args.round_timeout <= 0):
        raise ConfigError("--round-timeout needs --workers and a number of seconds above 0")
    if args.worker_data_root and not args.worker_data:
        raise ConfigError("--worker-data-root says where workers find --worker-data DIR; give --worker-data too")
    if args.centralized:
        given = [f for f, v in (("--workers", args.workers), ("--worker-data", args.worker_data)) if v]
        if given:
            raise ConfigError(f"{', '.join(given)}: federated training only, not --centralized")
        return _train_centralized(args)
    given = [f"--{f.replace('_', '-')}" for f in _CENTRALIZED_ONLY if getattr(args, f, None) is not None]
    if given:
        raise ConfigError(f"{', '.join(given)}: centralized training only (add --centralized); federated "
                          "runs have --client-lr, --rounds, --local-epochs and --clip")
    return _train_federated(args)



_DP_FLAGS = ("dp_noise_multiplier", "dp_clip", "dp_clip_quantile", "dp_delta", "dp_sampling", "dp_epsilon")


def _dp_options(args):
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
                     target_epsilon=args.dp_epsilon)


def _train_centralized(args) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.training.centralized import CentralizedConfig, train_centralized

    if args.resume:
        raise ConfigError("--resume applies to federated runs; centralized runs are short and restart")
    if args.dp is not None:
        raise ConfigError("--dp is user-level DP of federated training; it does not apply to --centralized")
    given = {"optimizer": args.optimizer, "learning_rate": args.lr, "epochs": args.epochs,
             "batch_size": args.batch_size, "dropout": args.dropout, "weight_decay": args.weight_decay,
             "weight_drop": args.weight_drop, "weight_average": args.weight_average,
             "validation_fraction": args.validation_fraction, "lr_decay": args.lr_decay,
             "patience": args.patience, "ngram_teacher": args.ngram_teacher}
    if args.clipnorm is not None:
        given["clipnorm"] = args.clipnorm if args.clipnorm > 0 else None
    config = CentralizedConfig(seq_len=args.seq_len, seed=args.seed,
                               **{k: v for k, v in given.items() if v is not None})
    corpus = load_corpus_from_args(args)
    train_centralized(corpus, args.out, args.model, args.vocab_size, args.embedding_dim, args.units,
                      config, _split_from_args(args), quantization=_quantization(args),
                      data_source=_data_source(args), overwrite=args.overwrite)
    print(f"run saved to {args.out}")
    return 0


def _federated_validation(args) -> dict:
    """--validation-fraction/--lr-decay of a federated run; off under --dp (outside its accounting)."""
    if args.dp is None:
        return {"validation_fraction": _FED["validation_fraction"] if args.validation_fraction is None
                else args.validation_fraction,
                "lr_decay": _FED["lr_decay"] if args.lr_decay is None else args.lr_decay}
    if args.validation_fraction or (args.lr_decay is not None and args.lr_decay != 1.0):
        from keyboard_lm.errors import ConfigError

        raise ConfigError("--validation-fraction and --lr-decay choose by the validation clients' text, which "
                          "--dp's accounting does not cover; a DP run keeps its last round at a constant rate")
    return {"validation_fraction": 0.0, "lr_decay": 1.0}


def _train_federated(args, corpus=None, log=print, track_clients=()) -> int:
    """Federated ``train``; ``corpus`` replaces the one --data names (``audit canaries`` plants into it)."""
    from keyboard_lm.data.preprocessing import ClientDataConfig
    from keyboard_lm.federated.process import FederatedConfig
    from keyboard_lm.federated.trainer import LoopConfig, train_federated
    from keyboard_lm.models.config import ModelConfig

    split = _split_from_args(args)
    if args.resume:
        # The run directory holds the settings; only --rounds (and the data path) may be given again.
        from keyboard_lm.models.checkpoint import load_run

        saved = load_run(args.out).info
        _default_data_to_run(args, saved)
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
        fed = FederatedConfig(algorithm=args.algorithm, server_optimizer=args.server_optimizer,
                              server_lr=args.server_lr, server_momentum=args.server_momentum,
                              client_lr=args.client_lr, clients_per_round=args.clients_per_round,
                              rounds=args.rounds or DEFAULT_ROUNDS, fedatt_p=args.fedatt_p, fedatt_eps=args.fedatt_eps,
                              compression=args.compression, clip=args.clip, seed=args.seed,
                              dropout=_FED["dropout"] if args.dropout is None else args.dropout,
                              # Under --dp the average is post-processing (no privacy cost) but unmeasured: off
                              # unless asked for.
                              weight_average=(args.weight_average if args.weight_average is not None
                                              else 0.0 if args.dp else _FED["weight_average"]),
                              **_federated_validation(args))
        data_config = ClientDataConfig(max_seq_len=args.seq_len, batch_size=args.batch_size or 10,
                                       epochs=args.local_epochs, max_batches=args.max_batches)
        loop = LoopConfig(eval_every=args.eval_every, checkpoint_every=args.checkpoint_every)
    dp = None if args.resume else _dp_options(args)
    if corpus is None:
        corpus = load_corpus_from_args(args)
    on_round = None
    if getattr(args, "workers", None):
        from keyboard_lm.federated import remote

        if fed.algorithm == "fedatt":
            from keyboard_lm.errors import ConfigError

            # TFF: "Detected one aggregate dependent on another": FedAtt's attention weights need the
            # first aggregate before the second, which a split-and-merge round cannot compute.
            raise ConfigError("--workers: FedAtt cannot run on TFF's mergeable context (its second aggregate "
                              "depends on the first); run it on one machine")
        workers = remote.parse_workers(args.workers)
        remote.set_remote_context(workers)
        watchdog = remote.Watchdog(workers, round_timeout=args.round_timeout)
        watchdog.start()
        on_round = watchdog.round_done
        log(f"training on {len(workers)} TFF workers: {args.workers}")
    train_federated(corpus, args.out, model_config, fed, data_config, split, loop, resume=args.resume,
                    vocab_size=args.vocab_size, data_source=_data_source(args),
                    overwrite=args.overwrite, dp=dp, log=log, track_clients=track_clients,
                    worker_data=getattr(args, "worker_data", None),
                    worker_data_root=getattr(args, "worker_data_root", None), on_round=on_round)
    log(f"run saved to {args.out}")
    return 0


def _data_path(path_or_args) -> str | None:
    """A corpus path as recorded in run.json: absolute, so eval finds it from any directory."""
    path = getattr(path_or_args, "data", path_or_args)
    return os.path.abspath(path) if path else None


def _default_data_to_run(args, info: dict) -> None:
    """Without --data/--format, use the corpus the run (or model) was trained on."""
    source = (info.get("data") or {}).get("source") or {}
    if args.data is None and args.format == "default" and source:
        args.data, args.format = source.get("path"), source.get("format", "default")
        if args.partition == "natural" and source.get("partition", "natural") != "natural":
            args.partition, args.num_clients = source["partition"], source.get("num_clients")
            args.partition_seed = source.get("partition_seed", 0)


def _check_same_corpus(args, corpus, info: dict, what: str) -> None:
    """Refuse to score a corpus other than the one ``what`` was trained on, unless told."""
    expected = (info.get("data") or {}).get("fingerprint")
    if expected and expected != corpus.fingerprint() and not args.allow_other_data:
        from keyboard_lm.errors import ConfigError

        raise ConfigError(f"{corpus.name} is not the corpus {what} was trained on (fingerprint "
                          f"{corpus.fingerprint()[:12]} != {expected[:12]}); its held-out clients would be "
                          f"a different set: pass --allow-other-data to evaluate on it anyway")


def cmd_eval(args) -> int:
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn, per_client_table, summarize

    if os.path.isfile(args.run_dir):  # an exported .tflite file
        from keyboard_lm.inference.model_file import ModelFile

        model = ModelFile.load(args.run_dir)
        vocab, split_info, seq_len = model.vocab, model.meta.get("split") or {}, model.meta.get("seq_len", 20)
        predict, kind = model.predict_log_probs, f"{model.meta['model']['model_type']} (TFLite)"
        info = {"data": model.meta.get("data") or {}}
    else:
        from keyboard_lm.evaluation import evaluate_model
        from keyboard_lm.models.checkpoint import build_loaded_model, load_run

        run = load_run(args.run_dir)
        vocab, split_info = run.vocab, run.info.get("data", {}).get("split", {})
        seq_len = run.info.get("hyperparameters", {}).get("seq_len", 20)
        keras_model = build_loaded_model(run)
        predict, kind, info = None, run.model_config.model_type, run.info
    _default_data_to_run(args, info)
    corpus = load_corpus_from_args(args)
    _check_same_corpus(args, corpus, info, args.run_dir)
    split = SplitConfig(**split_info) if args.clients == "heldout" else None
    client_ids = corpus.client_ids if split is None else split_clients(corpus.client_ids, split)[1]
    if predict is None:
        result = evaluate_model(keras_model, corpus, client_ids, vocab, seq_len)
    else:
        result = evaluate_predict_fn(predict, corpus, client_ids, vocab, seq_len, batch_size=32)
    result["model"] = args.run_dir
    result["clients_evaluated"] = args.clients
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{kind} from {args.run_dir} on {len(client_ids)} {args.clients} clients of {corpus.name}")
        print(summarize(result))
        if args.per_client:
            print(per_client_table(result))
    return 0


def cmd_export(args) -> int:
    from keyboard_lm.export.tflite_export import export_run

    budget = None if args.budget_bytes == 0 else args.budget_bytes
    card = export_run(args.run_dir, args.out, budget_bytes=budget, k=args.top_k, quantization=args.quantization)
    b = card["size_breakdown"]
    print(f"wrote {args.out}: {b['total']:,} bytes (budget {budget:,} bytes)" if budget else
          f"wrote {args.out}: {b['total']:,} bytes (no budget)")
    for name, value in b.items():
        if name != "total":
            print(f"  {name:24s} {value:>10,} B")
    q = card["quantization"]
    print(f"quantization: {q['mode']} ({q['scheme']})")
    if q["exact"]:
        if q["trained_for"] != "none":
            print("  the run was trained for this mode: the file computes exactly what was evaluated")
    else:
        why = (f"weights moved by up to {q['max_rounding_error_steps']:.2f} quantization steps" if
               q["trained_for"] == "none" else f"the run was trained for {q['trained_for']!r}, which rounds "
               "matrix inputs differently")
        print(f"  {why}: near-tied suggestions may reorder (train with --quantization-aware {q['mode']} "
              "to export exactly what was evaluated)")
    print(f"sha256 {card['sha256']}\nmodel card: {args.out}.card.json")
    return 0


def cmd_baseline_ngram(args) -> int:
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn, summarize
    from keyboard_lm.text.vocabulary import Vocabulary

    corpus = load_corpus_from_args(args)
    train_ids, heldout_ids = split_clients(corpus.client_ids, _split_from_args(args))
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), args.vocab_size)
    model = KneserNey(len(vocab), args.order).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    result = evaluate_predict_fn(model.predict_log_probs, corpus, heldout_ids, vocab, args.seq_len, batch_size=32)
    result["model"] = f"kneser-ney order {args.order}, V={len(vocab)}"
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "clients" or args.per_client}, indent=2))
    else:
        print(f"{result['model']}, trained on {len(train_ids)} clients, evaluated on {len(heldout_ids)} held-out clients")
        print(summarize(result))
    return 0


def cmd_privacy_plan(args) -> int:
    from keyboard_lm.privacy.planner import cmd_privacy_plan as run

    return run(args)


CANARY_FILE = "canaries.json"
AUDIT_FILE = "audit.json"


def _canary_repeats(text: str) -> list[int]:
    from keyboard_lm.errors import ConfigError

    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"--canary-repeats must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise ConfigError(f"--canary-repeats must be integers >= 1, got {text!r}")
    return values


def cmd_audit_canaries(args) -> int:
    """``keyboard-lm audit canaries``: plant canaries, train as ``train`` would, report each one's exposure.

    With ``--run RUN_DIR`` an existing audit run is measured again (its
    canaries.json); otherwise the canaries are planted in training clients,
    the run is trained into ``--out`` with every ``train`` option (``--dp``
    included), and canaries.json, audit.json and the table are written.
    """
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.models.checkpoint import load_run
    from keyboard_lm.privacy import canaries as cn

    if args.run:
        run_dir = args.run
        path = os.path.join(run_dir, CANARY_FILE)
        if not os.path.exists(path):
            raise ConfigError(f"{run_dir}: no {CANARY_FILE}; --run re-audits a run made by `audit canaries`")
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        placements = saved["placements"]
        fmt = cn.CanaryFormat.from_dict(placements["format"])
        controls = [cn.Canary(fmt, fmt.parse(t)) for t in saved["controls"]]
    else:
        if args.out is None:
            raise ConfigError("audit canaries needs --out RUN_DIR (to train) or --run RUN_DIR (to re-audit)")
        if args.centralized or args.resume:
            raise ConfigError("audit canaries trains a new federated run; --centralized and --resume do not apply")
        if args.canaries < 1 or args.controls < 0:
            raise ConfigError(f"--canaries must be >= 1 and --controls >= 0, got {args.canaries}, {args.controls}")
        repeats = _canary_repeats(args.canary_repeats)
        _dp_options(args)  # bad DP flags fail before any data is read
        corpus = load_corpus_from_args(args)
        split = _split_from_args(args)
        train_ids, _ = split_clients(corpus.client_ids, split)
        fraction = _federated_validation(args)["validation_fraction"]
        if fraction:  # canaries go to clients that train, not to the validation clients
            from keyboard_lm.data.split import validation_clients

            train_ids = validation_clients(train_ids, fraction, split.seed)[0]
        made = cn.make_canaries(args.canaries + args.controls, seed=args.canary_seed)
        planted, controls = made[:args.canaries], made[args.canaries:]
        per_canary = [repeats[i % len(repeats)] for i in range(len(planted))]
        corpus, placements = cn.plant_canaries(corpus, planted, per_canary, train_ids, seed=args.canary_seed)
        run_dir = args.out
        _train_federated(args, corpus=corpus, track_clients=[p["client"] for p in placements["canaries"]])
        with open(os.path.join(run_dir, CANARY_FILE), "w", encoding="utf-8") as f:
            json.dump({"placements": placements, "controls": [c.text for c in controls]}, f, indent=1)
    rows = cn.audit_run(run_dir, placements, controls=controls)
    info = load_run(run_dir).info
    rounds_of = info.get("participation") or {}
    for row in rows:
        # Rounds in which the canary's client trained: a canary never sampled cannot be memorized.
        row["participations"] = len(rounds_of.get(row["client"], [])) if row["client"] is not None else 0
    dp = info.get("differential_privacy")
    report = {"rows": rows, "differential_privacy": dp, "rounds": info.get("rounds_done"),
              "final_metrics": info.get("final_metrics")}
    with open(os.path.join(run_dir, AUDIT_FILE), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        eps = "no DP" if not dp else f"eps {dp['epsilon'] if isinstance(dp['epsilon'], str) else round(dp['epsilon'], 3)}"
        print(f"exposure of {len(rows)} canaries in {run_dir} ({eps}); max = log2|R|; controls were never planted")
        print(cn.format_audit(rows))
        print("rounds each canary's client trained in: " +
              ", ".join(f"{r['repeats']}x {r['participations']}" for r in rows if r["client"] is not None))
        print(f"written: {os.path.join(run_dir, AUDIT_FILE)}")
    return 0


def demo_recipe(rounds: int = 100, seed: int = 0):
    """(model, federated, client data, split, loop) settings of ``demo`` on the embedded corpus."""
    from keyboard_lm.data.preprocessing import ClientDataConfig
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.federated.process import FederatedConfig
    from keyboard_lm.federated.trainer import LoopConfig
    from keyboard_lm.models.config import ModelConfig

    # A smaller CIFG than Hard et al.'s (D=64, H=256): the embedded corpus has
    # only ~27k words, and the paper size trains slower and no better on it.
    # Quantization-aware, so the int8 file computes exactly what was evaluated.
    model_config = ModelConfig("cifg", embedding_dim=64, units=256, quantization="dynamic-range")
    # No validation clients: the demo's measured FedAdam recipe trains on every training client and keeps
    # its last round (with 10% set aside, seed 0 drew a client whose local loss exploded at round 4).
    fed = FederatedConfig(algorithm="fedavg", server_optimizer="adam", server_lr=0.02, client_lr=1.0,
                          clients_per_round=20, rounds=rounds, seed=seed, validation_fraction=0.0, lr_decay=1.0,
                          weight_average=0.0)  # the demo's recipe was measured without averaging
    data_config = ClientDataConfig(max_seq_len=20, batch_size=10, epochs=5, max_batches=120)
    loop = LoopConfig(eval_every=max(1, rounds // 10), checkpoint_every=max(1, rounds // 10))
    return model_config, fed, data_config, SplitConfig(0.1, seed=0), loop


def cmd_demo(args) -> int:
    """The main job: federated training on the embedded corpus, then suggestions."""
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.federated.trainer import train_federated

    corpus = load_default()
    model_config, fed, data_config, split, loop = demo_recipe(args.rounds, args.seed)
    print(f"keyboard-lm demo: FedAdam over {corpus.name}, {args.rounds} rounds, run directory {args.out}")
    # The demo re-runs into a directory holding its own earlier run; anything else is refused
    # unless --overwrite (see prepare_run_dir).
    train_federated(corpus, args.out, model_config, fed, data_config, split, loop,
                    data_source={"path": None, "format": "default"}, command="demo", overwrite=args.overwrite)
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.inference import Predictor
    from keyboard_lm.text.tokenizer import tokenize

    model_path = os.path.join(args.out, "model.tflite")
    card = export_run(args.out, model_path)
    exact = ", computing exactly what was evaluated" if card["quantization"]["exact"] else ""
    print(f"\nexported {model_path}: {card['size_bytes']:,} bytes, int8 ({card['quantization']['mode']}){exact}, "
          "vocabulary inside")
    predictor = Predictor.load(model_path)
    heldout = split_clients(corpus.client_ids, split)[1]
    print("top-3 suggestions from the TFLite predictor for held-out contexts "
          "(client: context -> strip | actual next word)")
    shown = 0
    for cid in heldout:  # one context per held-out conversation
        words = next((tokenize(t) for t in corpus.clients[cid] if len(tokenize(t)) >= 4), None)
        if words is None or shown >= args.contexts:
            continue
        context, actual = " ".join(words[:3]), words[3]
        strip = "  ".join(f"{w} ({p:.2f})" for w, p in predictor.suggest(context))
        print(f"  {cid}: \"{context}\" -> {strip} | {actual}")
        shown += 1
    example = "what is your"
    completions = ", ".join(w for w, _ in predictor.complete(example, "f"))
    print(f"completing \"{example} f\" -> {completions}")
    print(f"\nrun directory: {args.out} (metrics.csv, metrics.png, weights.npz, vocab.txt, checkpoints/, "
          f"model.tflite)")
    return 0


def cmd_predict(args) -> int:
    from keyboard_lm.inference import Predictor

    predictor = Predictor.load(args.model, blocklist=args.blocklist or (), char_encoder=args.char_encoder)
    if args.personal is not None:
        if args.interactive or args.context is None:
            from keyboard_lm.errors import ConfigError

            raise ConfigError("--personal needs a CONTEXT (not --interactive)")
        session = predictor.session(personal=args.personal)
        session.commit(args.context, replay_tail=True)
        pairs = session.complete(args.complete, args.k) if args.complete is not None else session.suggestions(args.k)
        return _print_pairs(pairs, args.json)
    if args.interactive:
        from keyboard_lm.inference.interactive import run_interactive

        return run_interactive(predictor, args.k)
    if args.context is None:
        from keyboard_lm.errors import ConfigError

        raise ConfigError("give a CONTEXT to predict after, or --interactive")
    if args.complete is not None:
        pairs = predictor.complete(args.context, args.complete, args.k)
    else:
        pairs = predictor.suggest(args.context, args.k)
    return _print_pairs(pairs, args.json)


def _print_pairs(pairs, as_json: bool) -> int:
    if as_json:
        print(json.dumps([{"word": w, "probability": p} for w, p in pairs]))
    else:
        for w, p in pairs:
            print(f"{w}\t{p:.4f}")
    return 0


def cmd_worker(args) -> int:
    """Run TFF's C++ worker in the foreground until interrupted."""
    from keyboard_lm.federated import remote

    proc = remote.start_worker(args.port, bind=args.bind, max_concurrent_calls=args.max_concurrent_calls,
                               max_message_mb=args.max_message_mb)
    # TFF 0.87's worker binary has no address flag: it listens on every interface whatever --bind says.
    print(f"TFF worker (pid {proc.pid}) on port {args.port}; Ctrl-C stops it. Warning: TFF's worker listens on "
          f"every interface and has no authentication; block the port from other machines (firewall) and reach "
          f"it through an SSH tunnel or a private network (docs/distributed.md)", flush=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=10)
        raise


def cmd_personal_encoder(args) -> int:
    import collections

    from keyboard_lm.models.checkpoint import load_run
    from keyboard_lm.personal.encoder_training import build_char_encoder_file, run_training_clients

    run = load_run(args.run_dir)
    _default_data_to_run(args, run.info)
    corpus = load_corpus_from_args(args)
    _check_same_corpus(args, corpus, run.info, args.run_dir)
    report = build_char_encoder_file(args.run_dir, args.model, args.out, corpus=corpus,
                                     client_ids=run_training_clients(run, corpus), epochs=args.epochs,
                                     max_positions=args.max_positions, seed=args.seed,
                                     context_weight=args.context_weight,
                                     budget_bytes=args.budget_bytes or None, log=print)
    m = collections.defaultdict(lambda: float("nan"), report["metrics"])  # a tiny corpus may lack some
    print(f"char encoder for {args.model}: {report['encoder_bytes']:,} bytes (model + encoder "
          f"{report['total_bytes']:,} bytes)")
    print(f"held-out words (never trained on): MSE {m['heldout_mse']:.4g} (the mean row: "
          f"{m['heldout_mse_mean_row']:.4g}); zero-shot recall@3 in context {m['heldout_recall_at_3']:.4f} "
          f"(their true rows: {m['heldout_recall_at_3_true_row']:.4f}); joint recall@3 "
          f"{m['heldout_joint_recall_at_3']:.4f} (true rows {m['heldout_joint_recall_at_3_true_row']:.4f}, "
          f"words removed {m['heldout_joint_recall_at_3_removed']:.4f})")
    print(f"wrote {args.out}")
    return 0


def _personal_session(args):
    from keyboard_lm.inference import Predictor

    predictor = Predictor.load(args.model, char_encoder=args.char_encoder)
    return predictor.session(personal=args.state if os.path.exists(args.state) else None)


def cmd_personal_add(args) -> int:
    session = _personal_session(args)
    result = session.add_personal_words(args.words)
    if result["added"]:
        session.save_personal(args.state)
    for key, words in result.items():
        if words:
            print(f"{key.replace('_', ' ')}: {' '.join(words)}")
    n = len(session.personal.words) if session.personal is not None else 0
    print(f"{args.state}: {n} personal words" if result["added"] else "nothing added; the state file is unchanged")
    return 0


def cmd_personal_train(args) -> int:
    from keyboard_lm.errors import ConfigError

    def read(path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: cannot read the text: {e}") from None

    session = _personal_session(args)
    report = session.personalize(read(args.text), validation_texts=read(args.validation_text)
                                 if args.validation_text else None, max_words=args.max_words, epochs=args.epochs)
    if session.personal is not None and session.personal.words:
        session.save_personal(args.state)
    added = report["words_added"]
    print(f"{report['sentences']} sentences; {len(added)} new personal words"
          + (f" ({' '.join(added[:10])}{' ...' if len(added) > 10 else ''})" if added else "")
          + (f"; {report['not_added']} more above the cap" if report["not_added"] else "")
          + (f"; {report['unencodable']} longer than the encoder's limit" if report["unencodable"] else ""))
    if report["trained"]:
        v = report["validation_loss"]
        print(f"adapter: {report['training_positions']:,} positions, epoch {report['kept_epoch']} of "
              f"{report['epochs_run']} kept" + (f", held-out loss {min(v):.3f}" if v else "")
              + f", {report['seconds']:.1f} s")
    else:
        print(f"adapter not trained: {report.get('reason')}")
    print(f"wrote {args.state}" if session.personal is not None and session.personal.words else "nothing written")
    return 0


def cmd_bench(args) -> int:
    from keyboard_lm.inference import Predictor
    from keyboard_lm.inference.bench import format_report, run

    predictor = Predictor.load(args.model)
    if args.text_file:
        with open(args.text_file, encoding="utf-8") as f:
            text = f.read()
    else:
        from keyboard_lm.data.corpora import load_default

        corpus = load_default()
        text = " ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c])
    result = run(predictor, " ".join(text.split()[:400]), repeats=args.repeats)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


def add_train_args(train: argparse.ArgumentParser, out_required: bool = True) -> None:
    """Every option of ``train`` (``audit canaries`` trains with the same ones)."""
    add_data_args(train)
    add_split_args(train)
    train.add_argument("--centralized", action="store_true",
                       help="server-trained baseline: SGD on the pooled training clients (default: federated)")
    train.add_argument("--model", default="cifg", help="cifg | si-cifg | lstm | gru (cifg)")
    train.add_argument("--vocab-size", type=positive_int, default=10_000, help="incl. 4 special tokens (10000)")
    train.add_argument("--embedding-dim", type=positive_int, default=96, help="D, tied embedding and projection (96)")
    train.add_argument("--units", type=positive_int, default=670, help="H, cell size (670)")
    train.add_argument("--quantization-aware", nargs="?", const="dynamic-range",
                       choices=[q for q in QUANTIZATION if q != "none"], metavar="MODE",
                       help="train computing with the int8 roundings of export mode MODE (dynamic-range, the "
                            "default, or weight-only), so the exported model computes exactly what was "
                            "trained and evaluated")
    train.add_argument("--seq-len", type=positive_int, default=20, help="tokens per example (20)")
    train.add_argument("--batch-size", type=positive_int, default=None,
                       help=f"examples per batch (centralized {_CEN['batch_size']}, federated client batch 10)")
    train.add_argument("--out", required=out_required, metavar="RUN_DIR", help="run directory to write")
    train.add_argument("--overwrite", action="store_true",
                       help="replace the run already in RUN_DIR, or write into a non-empty directory "
                            "(default: refuse; only the run's own files are removed)")
    train.add_argument("--seed", type=non_negative_int, default=0,
                       help="seed of initialization, client sampling and shuffling (0); the split has --split-seed")
    train.add_argument("--dropout", type=non_negative_float, default=None,
                       help=f"dropout on embedding and cell outputs (centralized {_CEN['dropout']}, "
                            f"federated {_FED['dropout']})")
    cen = train.add_argument_group("centralized training")
    cen.add_argument("--epochs", type=positive_int, default=None,
                     help=f"most passes over the pooled data ({_CEN['epochs']})")
    cen.add_argument("--optimizer", default=None, choices=("sgd", "adam", "adamw"),
                     help=f"({_CEN['optimizer']})")
    cen.add_argument("--lr", type=positive_float, default=None, help=f"initial learning rate ({_CEN['learning_rate']})")
    cen.add_argument("--clipnorm", type=non_negative_float, default=None,
                     help=f"gradient norm clip, 0 = off ({_CEN['clipnorm']})")
    cen.add_argument("--weight-decay", type=non_negative_float, default=None,
                     help=f"decoupled weight decay, with --optimizer adamw ({_CEN['weight_decay']})")
    cen.add_argument("--weight-drop", type=non_negative_float, default=None,
                     help="DropConnect on the cell's recurrent weights, one mask per batch "
                          f"(Merity et al. 2018) ({_CEN['weight_drop']})")
    train.add_argument("--weight-average", type=non_negative_float, default=None, metavar="DECAY",
                       help="keep and evaluate an exponential moving average of the weights with this decay "
                            f"per step (centralized {_CEN['weight_average']}) or per round (federated "
                            f"{_FED['weight_average']}, 0 with --dp unless given); 0 = off")
    train.add_argument("--validation-fraction", type=non_negative_float, default=None,
                       help="share of training clients, never trained on, whose recall@3 picks the epoch or "
                            "round the run keeps and decays the learning rate; 0 = keep the last "
                            f"({_CEN['validation_fraction']}; federated {_FED['validation_fraction']}, "
                            "0 with --dp)")
    train.add_argument("--lr-decay", type=positive_float, default=None,
                       help="learning-rate factor after an evaluation without validation gain (centralized "
                            f"{_CEN['lr_decay']}; federated {_FED['lr_decay']}, on the client rate)")
    cen.add_argument("--patience", type=positive_int, default=None,
                     help=f"epochs without validation gain before stopping ({_CEN['patience']})")
    cen.add_argument("--ngram-teacher", type=non_negative_float, default=None, metavar="WEIGHT",
                     help="mix a cross-fitted Kneser-Ney 5-gram's next-word distribution into each training "
                          f"target with this weight (distillation); 0 = off ({_CEN['ngram_teacher']})")
    fed = train.add_argument_group("federated training (TFF)")
    fed.add_argument("--algorithm", default="fedavg", help="fedavg | fedsgd | fedatt (fedavg)")
    fed.add_argument("--server-optimizer", default=_FED["server_optimizer"],
                     help=f"sgd | nesterov (FedAvgM) | adam (FedAdam) ({_FED['server_optimizer']})")
    fed.add_argument("--server-lr", type=float, default=1.0, help="server learning rate (1.0)")
    fed.add_argument("--server-momentum", type=float, default=0.9, help="Nesterov momentum (0.9)")
    fed.add_argument("--client-lr", type=float, default=0.5, help="client SGD learning rate (0.5)")
    fed.add_argument("--clients-per-round", type=positive_int, default=10,
                     help="K, sampled uniformly; at most the number of training clients (10)")
    fed.add_argument("--rounds", type=positive_int, default=None,
                     help=f"rounds to run ({DEFAULT_ROUNDS}); with --resume, the round to reach (default: the run's own count)")
    fed.add_argument("--local-epochs", type=positive_int, default=1, help="client epochs per round (1)")
    fed.add_argument("--max-batches", type=positive_int, default=120,
                     help="cap on batches per client and round, drawn from all of the client's examples (120)")
    fed.add_argument("--clip", default="adaptive", metavar="adaptive|none|NORM",
                     help="update clipping, the same for every algorithm: adaptive (TFF's adaptive zeroing and "
                          "quantile clipping, the default), none, or a fixed L2 norm")
    fed.add_argument("--fedatt-p", type=float, default=2.0, help="FedAtt norm order p (2)")
    fed.add_argument("--fedatt-eps", type=float, default=1.0, help="FedAtt step size eps (1.0)")
    fed.add_argument("--compression", action="store_true", help="stochastic 8-bit quantized uploads")
    fed.add_argument("--eval-every", type=positive_int, default=25,
                     help="evaluate held-out clients every N rounds and at the end (25)")
    fed.add_argument("--checkpoint-every", type=positive_int, default=1, help="save program state every N rounds (1)")
    fed.add_argument("--resume", action="store_true", help="continue RUN_DIR from its latest checkpoint")
    fed.add_argument("--workers", metavar="HOST:PORT,...",
                     help="spread each round's clients over these TFF workers (keyboard-lm worker), merged by "
                          "TFF's mergeable context; default: one local worker")
    fed.add_argument("--round-timeout", type=float, default=None, metavar="S",
                     help="with --workers: end the run (exit 3, resumable) when no round finishes in S seconds "
                          "(default: 10x the slowest round so far, at least 600 s; 1800 s for the first round)")
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


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="keyboard-lm", description="Federated next-word prediction for mobile keyboards.")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="inspect corpora").add_subparsers(dest="data_command", required=True)
    stats = data.add_parser("stats", help="clients, examples, words, vocabulary coverage, OOV rate")
    add_data_args(stats)
    stats.add_argument("--vocab-size", type=positive_int, default=10_000, help="vocabulary size incl. special tokens")
    add_split_args(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=cmd_data_stats)

    train = sub.add_parser("train", help="train a next-word model into a run directory")
    add_train_args(train)
    train.set_defaults(func=cmd_train)

    ev = sub.add_parser("eval", help="recall@1/@3, in-vocabulary accuracy, perplexity on held-out clients")
    ev.add_argument("run_dir", metavar="RUN_DIR|MODEL.tflite", help="a run directory or an exported .tflite file")
    add_data_args(ev)
    ev.add_argument("--clients", choices=("heldout", "all"), default="heldout",
                    help="held-out clients of the run's split (default) or every client of --data")
    ev.add_argument("--per-client", action="store_true", help="also print per-client metrics")
    ev.add_argument("--allow-other-data", action="store_true",
                    help="evaluate on a corpus other than the one the model was trained on (default: refuse; "
                         "without --data/--format the run's own corpus is used)")
    ev.add_argument("--json", action="store_true", help="print JSON (pooled and per client)")
    ev.set_defaults(func=cmd_eval)

    ex = sub.add_parser("export", help="run directory -> self-contained int8 .tflite (+ model card JSON)")
    ex.add_argument("run_dir", metavar="RUN_DIR")
    ex.add_argument("--out", required=True, metavar="MODEL.tflite")
    ex.add_argument("--budget-bytes", type=non_negative_int, default=1_468_006,
                    help="fail if the file would be larger (1468006 = 1.4 MiB; 0 = no budget)")
    ex.add_argument("--top-k", type=positive_int, default=3, help="candidates returned by the step signature (3)")
    ex.add_argument("--quantization", choices=("auto", *QUANTIZATION), default="auto",
                    help="dynamic-range: int8 weights, int8-rounded matrix inputs at run time (hybrid kernels); "
                         "weight-only: int8 weights, float32 arithmetic, 4x the weight memory; none: float32; "
                         "auto (default): the mode the run was trained for, else dynamic-range")
    ex.set_defaults(func=cmd_export)

    pr = sub.add_parser("predict", help="top-k next words (or completions) from an exported .tflite")
    pr.add_argument("model", metavar="MODEL.tflite")
    pr.add_argument("context", nargs="?", help="text typed so far")
    pr.add_argument("-k", type=positive_int, default=3, help="suggestions (3)")
    pr.add_argument("--complete", metavar="PREFIX", help="complete the word being typed")
    pr.add_argument("--blocklist", nargs="*", metavar="WORD", help="words never to suggest")
    pr.add_argument("--interactive", action="store_true", help="suggestions update as you type")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--char-encoder", metavar="ENCODER.tflite", help="the model's char encoder (with --personal)")
    pr.add_argument("--personal", metavar="STATE", help="a user's personal-state file: suggest their words too")
    pr.set_defaults(func=cmd_predict)

    wk = sub.add_parser("worker", help="run a TFF worker that `train --workers` can send clients to")
    wk.add_argument("--port", type=positive_int, required=True)
    wk.add_argument("--bind", default="127.0.0.1",
                    help="127.0.0.1 (default) or 0.0.0.0; either way TFF's worker binary listens on every "
                         "interface (it has no address flag), so firewall the port")
    wk.add_argument("--max-concurrent-calls", type=positive_int, default=64, help="(64)")
    wk.add_argument("--max-message-mb", type=positive_int, default=1024, help="gRPC message limit in MB (1024)")
    wk.set_defaults(func=cmd_worker)

    per = sub.add_parser("personal", help="personal words outside the vocabulary, learnt on the device "
                                          "(docs/personalization.md)").add_subparsers(dest="personal_command",
                                                                                      required=True)
    pe = per.add_parser("encoder", help="train the char word encoder of an exported model (a second .tflite)")
    pe.add_argument("run_dir", metavar="RUN_DIR")
    pe.add_argument("--model", required=True, metavar="MODEL.tflite", help="the run exported by keyboard-lm export")
    pe.add_argument("--out", required=True, metavar="ENCODER.tflite")
    add_data_args(pe)
    pe.add_argument("--allow-other-data", action="store_true",
                    help="train on a corpus other than the run's (default: refuse; without --data the run's own)")
    pe.add_argument("--epochs", type=positive_int, default=8, help="(8)")
    pe.add_argument("--max-positions", type=positive_int, default=100_000,
                    help="contexts sampled from the training clients for the in-context loss (100000)")
    pe.add_argument("--seed", type=non_negative_int, default=0)
    pe.add_argument("--context-weight", type=non_negative_float, default=0.0,
                    help="weight of the in-context loss next to the embedding regression; 0 = regression only, "
                         "the best measured on Tiny Shakespeare (docs/personalization.md) (0)")
    pe.add_argument("--budget-bytes", type=non_negative_int, default=1_677_721,
                    help="fail if model + encoder would be larger (1677721 = 1.6 MiB; 0 = no budget)")
    pe.set_defaults(func=cmd_personal_encoder)
    for name, help_text in (("add", "add words to a user's personal-state file, zero-shot (no training)"),
                            ("train", "learn a user's words from their text on this machine; nothing is uploaded")):
        q = per.add_parser(name, help=help_text)
        q.add_argument("--model", required=True, metavar="MODEL.tflite")
        q.add_argument("--char-encoder", required=True, metavar="ENCODER.tflite")
        q.add_argument("--state", required=True, metavar="STATE", help="the user's personal-state file "
                                                                        "(created if missing)")
        if name == "add":
            q.add_argument("words", nargs="+", metavar="WORD")
            q.set_defaults(func=cmd_personal_add)
        else:
            q.add_argument("--text", required=True, metavar="FILE", help="UTF-8 text the user typed")
            q.add_argument("--validation-text", metavar="FILE",
                           help="held-out text for early stopping (default: 10%% of --text's sentences)")
            q.add_argument("--max-words", type=positive_int, default=1000, help="new personal words at most (1000)")
            q.add_argument("--epochs", type=non_negative_int, default=100,
                           help="adapter epochs at most, 0 = words only (100)")
            q.set_defaults(func=cmd_personal_train)

    be = sub.add_parser("bench", help="p50/p99 latency per suggestion and completion, peak memory")
    be.add_argument("model", metavar="MODEL.tflite")
    be.add_argument("--text-file", help="UTF-8 text to stream (default: the embedded corpus)")
    be.add_argument("--repeats", type=positive_int, default=3)
    be.add_argument("--json", action="store_true")
    be.set_defaults(func=cmd_bench)

    demo = sub.add_parser("demo", help="federated training on the embedded corpus, then suggestions")
    demo.add_argument("--rounds", type=positive_int, default=100, help="(100, about 8 minutes on 2 cores)")
    demo.add_argument("--out", default=os.path.join("runs", "demo"), help="run directory (runs/demo)")
    demo.add_argument("--contexts", type=non_negative_int, default=8, help="held-out contexts to show (8)")
    demo.add_argument("--seed", type=non_negative_int, default=0, help="seed of training (0)")
    demo.add_argument("--overwrite", action="store_true",
                      help="write into --out even if it holds something other than an earlier demo run")
    demo.set_defaults(func=cmd_demo)

    base = sub.add_parser("baseline", help="non-neural baselines").add_subparsers(dest="baseline", required=True)
    ng = base.add_parser("ngram", help="interpolated Kneser-Ney n-gram, same vocabulary, split and metrics")
    add_data_args(ng)
    add_split_args(ng)
    ng.add_argument("--order", type=positive_int, default=5, help="n (5, as Hard et al.'s baseline)")
    ng.add_argument("--vocab-size", type=positive_int, default=10_000, help="(10000)")
    ng.add_argument("--seq-len", type=positive_int, default=20, help="context window as the neural models see it (20)")
    ng.add_argument("--per-client", action="store_true", help="include per-client metrics in --json")
    ng.add_argument("--json", action="store_true")
    ng.set_defaults(func=cmd_baseline_ngram)

    priv = sub.add_parser("privacy", help="differential privacy tools").add_subparsers(
        dest="privacy_command", required=True)
    pp = priv.add_parser("plan", help="noise multiplier per cohort size for a target (eps, delta), "
                                      "ranked by the noise-batch ratio z*clip/K")
    pp.add_argument("--epsilon", type=positive_float, required=True, help="target epsilon")
    pp.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")
    pp.add_argument("--population", type=positive_int, required=True, help="N, clients in the population")
    pp.add_argument("--rounds", type=positive_int, required=True, help="T, training rounds")
    pp.add_argument("--max-clients-per-round", type=positive_int, default=None,
                    help="top of the cohort grid (min(N, 10000))")
    pp.add_argument("--mechanism", choices=("fedavg", "ftrl"), default="fedavg", help="(fedavg)")
    pp.add_argument("--clip", type=positive_float, default=1.0, help="L2 clip C of the noise-batch ratio (1.0)")
    pp.add_argument("--png", metavar="PATH", help="also plot the frontier")
    pp.add_argument("--json", action="store_true")
    pp.set_defaults(func=cmd_privacy_plan)

    audit = sub.add_parser("audit", help="memorization audits").add_subparsers(dest="audit_command", required=True)
    ac = audit.add_parser("canaries", help="plant canary sentences, train, report their exposure (Carlini et al.)",
                          description="Plants --canaries random sentences of one format ('my number is' + 4 words "
                                      "from 10) into training clients, trains federated with every `train` "
                                      "option (--dp too) and reports each canary's exposure, log2|R| - "
                                      "log2(rank); --controls unplanted canaries give the baseline.")
    add_train_args(ac, out_required=False)
    ac.add_argument("--canaries", type=int, default=6, help="canaries planted (6)")
    ac.add_argument("--canary-repeats", default="1,4,16", metavar="R1,R2,...",
                    help="copies of each canary, cycled over the canaries (1,4,16)")
    ac.add_argument("--controls", type=int, default=4, help="canaries of the same format never planted (4)")
    ac.add_argument("--canary-seed", type=non_negative_int, default=0, help="seed of canaries and placement (0)")
    ac.add_argument("--run", metavar="RUN_DIR", help="re-audit a run made by `audit canaries` instead of training")
    ac.add_argument("--json", action="store_true")
    ac.set_defaults(func=cmd_audit_canaries)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # progress lines show up at once in logs and pipes
    try:
        return args.func(args)
    except KeyboardLMError as e:
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in ("tensorflow", "tensorflow_federated", "tensorflow_text",
                                               "yaml", "chatterbot_corpus", "matplotlib"):
            print(f"keyboard-lm: error: '{args.command}' needs the training stack ({e.name} is not installed); "
                  f"install it with: pip install 'keyboard-lm[train]'", file=sys.stderr)
            return 2
        raise
    except OSError as e:  # a file that cannot be written or read, named by the OS error
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keyboard-lm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

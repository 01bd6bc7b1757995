"""The federated training loop: sampling, rounds, evaluation, checkpoints, resume.

One run directory holds everything (see ``keyboard_lm.models.checkpoint``):
run.json, vocab.txt, weights.npz, metrics.csv, plus ``checkpoints/`` (TFF
program state every N rounds, for ``--resume``), ``tensorboard/`` and
``metrics.png``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import time

import numpy as np
import tensorflow as tf

from keyboard_lm.data.corpora import Corpus
from keyboard_lm.data.preprocessing import ClientDataConfig, encode_clients
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError, TrainingDivergedError
from keyboard_lm.evaluation import evaluate_model, summarize, validation_score
from keyboard_lm.federated.aggregation import upload_bytes
from keyboard_lm.federated.client_data import client_batches, example_client_data
from keyboard_lm.federated.config import FederatedConfig, LoopConfig, default_federated
from keyboard_lm.federated.process import build_process, client_learning_rate, decayed_hparams
from keyboard_lm.federated.runtime import import_tff
from keyboard_lm.federated.server_average import ServerAverage
from keyboard_lm.models.checkpoint import (append_metrics_row, load_run, prepare_run_dir, run_command, save_run,
                                           update_run_info)
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import assign_weights, build_model, weights_dict
from keyboard_lm.models.warm_start import WarmStart, describe
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.text.vocabulary import Vocabulary

tff = import_tff()

CHECKPOINT_DIR = "checkpoints"
EVAL_KEYS = ("loss", "perplexity", "recall_at_1", "recall_at_3", "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate")


def sample_clients(client_ids: list[str], k: int, seed: int, round_num: int) -> list[str]:
    """K clients drawn uniformly without replacement; depends only on (seed, round)."""
    rng = np.random.RandomState([seed, round_num])
    picks = rng.choice(len(client_ids), size=min(k, len(client_ids)), replace=False)
    return [client_ids[i] for i in sorted(picks)]


def _dataset_seed(seed: int, round_num: int, index: int) -> int:
    return int(np.random.RandomState([seed, round_num, index]).randint(2**31 - 1))


def client_round_dataset(examples, client_id: str, data_config: ClientDataConfig) -> tf.data.Dataset:
    """One client's batches for one round, read in full here, before TFF sees them.

    Reading the client's examples eagerly makes a failing client (a dataset
    that raises part-way) fail in this process, where it can be dropped from
    the round, instead of inside TFF's worker, where it would abort the round.
    The shuffle covers all of the client's examples (``client_batches``).
    """
    parts = list(examples.create_tf_dataset_for_client(client_id).batch(1024).as_numpy_iterator())
    if not parts:
        raise ValueError("the client has no examples")
    return client_batches(np.concatenate([p["x"] for p in parts]), np.concatenate([p["y"] for p in parts]),
                          data_config, data_config.seed)


def round_datasets(examples, client_ids, data_config: ClientDataConfig, seed: int, round_num: int, log=print):
    """Batched datasets of the sampled clients; a client whose data fails is dropped and counted.

    Returns (datasets, number of failed clients).
    """
    datasets, failed = [], 0
    for i, cid in enumerate(client_ids):
        try:
            cfg = dataclasses.replace(data_config, seed=_dataset_seed(seed, round_num, i))
            datasets.append(client_round_dataset(examples, cid, cfg))
        except (tf.errors.OpError, ValueError, KeyError) as e:
            failed += 1
            log(f"round {round_num}: client {cid!r} dropped from this round ({type(e).__name__}: {e})")
    return datasets, failed


def _drop_metrics_after(run_dir: str, round_num: int) -> None:
    """Remove metrics.csv rows of rounds after ``round_num`` (written after the last checkpoint)."""
    import csv

    path = os.path.join(run_dir, "metrics.csv")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    keep = [r for r in rows if int(r["round"]) <= round_num]
    if len(keep) != len(rows):
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(keep)


def _progress(round_num, rounds, loss, recall3, elapsed, done_this_run) -> str:
    width = 24
    filled = int(width * round_num / rounds)
    per_round = elapsed / max(done_this_run, 1)
    eta = int(per_round * (rounds - round_num))
    r3 = f"{recall3:.4f}" if recall3 is not None else "  -   "
    return (f"[{'#' * filled}{'.' * (width - filled)}] round {round_num}/{rounds}  loss {loss:.3f}  "
            f"recall@3 {r3}  {per_round:.1f}s/round  ETA {eta // 60}:{eta % 60:02d}")


def _plot(run_dir: str) -> None:
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get("recall_at_3")]
    if not rows:
        return
    rounds = [int(r["round"]) for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(rounds, [float(r["recall_at_1"]) for r in rows], label="recall@1")
    a1.plot(rounds, [float(r["recall_at_3"]) for r in rows], label="recall@3")
    a1.set_xlabel("round")
    a1.set_ylabel("held-out recall")
    a1.legend()
    a2.plot(rounds, [float(r["train_loss"]) for r in rows], label="train loss")
    a2.plot(rounds, [float(r["loss"]) for r in rows], label="held-out loss")
    a2.set_xlabel("round")
    a2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(run_dir, "metrics.png"), dpi=100)
    plt.close(fig)


def _totals_so_far(run_dir: str) -> tuple[int, float]:
    """(examples seen, training seconds) up to the last metrics row kept on resume."""
    import csv

    path = os.path.join(run_dir, "metrics.csv")
    if not os.path.exists(path):
        return 0, 0.0
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return 0, 0.0
    last = rows[-1]
    return int(float(last.get("examples_seen") or 0)), float(last.get("elapsed_seconds") or 0.0)


def _resume_settings(run_dir: str, corpus: Corpus, heldout_ids: list[str], config: FederatedConfig, log):
    """(vocab, model config, federated config, client data config, command, DP options, run.json) of the run
    to resume.

    Everything comes from the run except ``config.rounds``; the corpus and
    split must be the ones the run was trained on.
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
        raise ConfigError(f"{run_dir}: the corpus or split differs from the one this run was trained on")
    dp = run.info.get("differential_privacy")
    options = None
    if dp:
        # The noise multiplier the run used (calibrated or given); its target eps held for its own rounds.
        options = DPOptions.from_record(dp)
        if config.rounds != saved["rounds"]:
            log(f"resume: {config.rounds} rounds instead of {saved['rounds']}; eps is accounted for the "
                "rounds actually run")
    return (run.vocab, run.model_config, FederatedConfig(**{**saved, "rounds": config.rounds}),
            ClientDataConfig(**run.info["client_data"]), run_command(run.info), options, run.info)


def _dp_clip(aggregator_metrics, fallback):
    """The DP clip the round used: the adaptive estimate TFF reports, else the fixed clip."""
    query = (aggregator_metrics.get("inner") or {}).get("dp_query_metrics") or {}
    return float(query["clip"]) if "clip" in query else fallback


def _assign(process, state, keras_model, average: ServerAverage | None) -> None:
    """Put the round's model into ``keras_model``: the server's weights, or their average across rounds."""
    process.get_model_weights(state).assign_weights_to(keras_model)
    if average is not None:
        for var, value in zip(keras_model.trainable_weights, average.weights):
            var.assign(value)


def _evaluate_checked(process, state, keras_model, average, corpus, heldout_ids, vocab, seq_len, limit,
                      round_num, last_good, run_dir) -> dict:
    """Held-out evaluation of the round's model; a loss past ``limit`` is divergence."""
    _assign(process, state, keras_model, average)
    result = evaluate_model(keras_model, corpus, heldout_ids, vocab, seq_len)
    heldout_loss = result["pooled"]["loss"]
    if not math.isfinite(heldout_loss) or heldout_loss > limit:
        raise TrainingDivergedError(
            f"training diverged at round {round_num} (held-out loss {heldout_loss:.1f}, limit {limit:.1f}); "
            f"the last good checkpoint (round {last_good}) is kept in {os.path.join(run_dir, CHECKPOINT_DIR)}")
    return result


def train_federated(corpus: Corpus, run_dir: str, model_config: ModelConfig | None = None,
                    config: FederatedConfig | None = None, data_config: ClientDataConfig = ClientDataConfig(),
                    split: SplitConfig = SplitConfig(), loop: LoopConfig = LoopConfig(),
                    resume: bool = False, vocab_size: int = 10_000, data_source: dict | None = None,
                    log=print, command: str = "train", overwrite: bool = False,
                    dp: DPOptions | None = None, track_clients=(), worker_data: str | None = None,
                    worker_data_root: str | None = None, on_round=None, init: WarmStart | None = None,
                    workers: dict | None = None) -> dict:
    """Run federated training into ``run_dir``; returns the held-out evaluation of the round it keeps.

    With ``config.validation_fraction`` > 0 a share of the training clients
    never trains: at every evaluation their recall@3 decides whether the
    round is the best so far (its weights are the run's weights.npz and
    ``best`` in run.json), and a round without gain multiplies the client
    learning rate by ``config.lr_decay``.  Without it (and always under DP)
    the run keeps its last round.

    With ``resume``, the model, hyper-parameters, vocabulary and split come
    from ``run_dir`` and training continues after its latest checkpoint up to
    ``config.rounds`` (the only setting a resume may change; callers pass the
    run's own count unless told otherwise).  Without it, ``run_dir`` must be
    new or empty unless ``overwrite``; ``command`` names what made the run
    (``train`` or ``demo``) in run.json.

    With ``dp`` the run is DP-FedAvg or DP-FTRL (``federated.dp.DPRun``):
    the population is the training clients with text, cohorts are drawn as
    the accountant assumes, eps after each round goes to metrics.csv and the
    final (eps, delta, rho) with every DP setting to run.json.

    ``track_clients``: ids whose rounds of participation run.json records (a fresh run only)
    (``participation``), e.g. the clients holding audit canaries.

    ``worker_data``: a directory the training clients' shards are written to
    once; each round then sends the workers only shard paths (under
    ``worker_data_root``, default ``worker_data``) and seeds, and the workers
    read the data themselves (``federated.worker_data``).  Same batches, same
    rounds; a client whose shard cannot be read fails the round with a clear
    error instead of being dropped.

    ``workers``: how this run reaches its remote TFF workers
    (``{"addresses": [...], "tls": bool}``, set up by the caller with
    ``remote.set_remote_context``), recorded in run.json; None: the local
    worker.

    ``on_round(round_num, seconds)`` is called after every round (the worker
    watchdog's clock).

    ``init`` starts a fresh run from another run's weights
    (``models.warm_start``): the server's first model is the base's, with
    its model type and sizes; run.json records the start in ``init_from``.
    ``config`` None is ``default_federated``: the recipe from random weights,
    or from a base when ``init`` is given (without DP, its server optimizer too).
    """
    train_ids, heldout_ids = split_clients(corpus.client_ids, split)
    if resume and track_clients:
        raise ConfigError("tracking client participation needs a fresh run, not a resumed one")
    if config is None:
        config = default_federated(warm_start=init is not None, dp=dp is not None)
    if resume and init is not None:
        raise ConfigError("--init-from starts a fresh run; a resumed run continues from its own checkpoint")
    best = None  # the round the run keeps: {"round", "val_recall_at_3", "val_loss", "heldout"}
    resumed = {}  # run.json of the run to resume
    if resume:
        vocab, model_config, config, data_config, command, dp, resumed = _resume_settings(
            run_dir, corpus, heldout_ids, config, log)
        best = resumed.get("best")
    else:
        base = model_config or ModelConfig()
        if init is not None:
            init.check_model(base.model_type, base.embedding_dim, base.units)
        prepare_run_dir(run_dir, command, overwrite=overwrite, replace_own=command == "demo")
        vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), vocab_size)
        if init is not None:
            vocab = init.vocabulary(vocab)
        model_config = dataclasses.replace(base, vocab_size=len(vocab))

    if dp is not None and (config.validation_fraction or config.lr_decay != 1.0):
        # Choosing a round or a rate by the validation clients' text would release
        # something about them that the DP accounting does not cover.
        log("differential privacy: no validation clients and a constant learning rate; the run keeps "
            "its last round")
        config = dataclasses.replace(config, validation_fraction=0.0, lr_decay=1.0)
    if config.validation_fraction:
        fit_ids, val_ids = validation_clients(train_ids, config.validation_fraction, split.seed)
    else:
        fit_ids, val_ids = train_ids, []
    # Clients without a single sentence cannot train; they are left out and counted.
    encoded = encode_clients({c: corpus.clients[c] for c in fit_ids}, vocab, data_config.max_seq_len)
    trainable = [c for c in fit_ids if len(encoded[c][0])]
    empty_clients = len(fit_ids) - len(trainable)
    if not trainable:
        raise ConfigError("no training client has any sentence")
    dp_run = None
    if dp is not None:
        from keyboard_lm.federated.dp import DPRun

        dp_run = DPRun(dp, trainable, config)
        # The DP clip is the clip: the non-DP robust clipping is off.
        config = dataclasses.replace(config, clip="none")
    elif config.clients_per_round > len(trainable):
        raise ConfigError(f"--clients-per-round {config.clients_per_round} is more than the {len(trainable)} "
                          f"training clients with text in {corpus.name}")
    # The driver-side ClientData, unless the workers read the shards themselves.
    examples = None if worker_data is not None else example_client_data({c: encoded[c] for c in trainable})
    input_spec = (tf.TensorSpec([None, data_config.max_seq_len], tf.int32),) * 2
    tf.keras.utils.set_random_seed(config.seed)
    # Training computes the loss and example counts only: recall is measured
    # on held-out clients, and per-batch top-k over V words would cost more
    # than the cell itself (TFF should be no slower than plain TensorFlow).
    process = (dp_run.process(model_config, input_spec, config) if dp_run is not None
               else build_process(model_config, config, input_spec, metrics=False, reuse=True))
    manifest = None
    if worker_data is not None:
        from keyboard_lm.federated import worker_data as wd

        manifest = wd.write_shards(worker_data, {c: encoded[c] for c in trainable}, vocab.fingerprint(),
                                   data_config.max_seq_len, corpus.fingerprint(), log)
        worker_data_root = worker_data_root or os.path.abspath(worker_data)
        process = wd.compose(process, data_config)
    state = process.initialize()
    keras_model = build_model(model_config)
    if init is not None:
        # The server's first model is the base's; clients receive it in round 1.
        assign_weights(keras_model, init.initial_weights(vocab, config.seed))
        state = process.set_model_weights(state, tff.learning.models.ModelWeights.from_model(keras_model))
        log(describe(init.record(vocab)))
    shapes = [tuple(w.shape) for w in keras_model.trainable_weights]
    sent, raw = upload_bytes(shapes, config.compression)

    checkpoint_dir = os.path.join(run_dir, CHECKPOINT_DIR)
    manager = tff.program.FileProgramStateManager(checkpoint_dir,
                                                  keep_total=loop.keep_checkpoints, keep_first=False)
    start_round = 0
    # A fresh average starts at the initial model, as the centralized one starts at the initial weights;
    # a resumed one is read from the checkpoint below.
    average = (ServerAverage(config.weight_average, process.get_model_weights(state).trainable)
               if config.weight_average and not resume else None)
    if resume:
        loaded, version = asyncio.run(manager.load_latest(state))
        if loaded is None:
            raise ConfigError(f"{run_dir}: no checkpoint to resume from")
        state, start_round = loaded, version
        if config.rounds <= start_round:
            raise ConfigError(f"{run_dir}: the run has done {start_round} rounds already; "
                              f"give --rounds above {start_round} to train further")
        _drop_metrics_after(run_dir, start_round)
        if config.weight_average:
            average = ServerAverage.load(checkpoint_dir, start_round, config.weight_average)
        log(f"resuming after round {start_round}, up to round {config.rounds}")
        if config.compression or config.dropout:
            what = "compressed uploads round" if config.compression else "dropout draws its masks"
            log(f"resume: {what} at random inside TFF's runtime (unseeded), so the rounds "
                "from here on are not bit-identical to an uninterrupted run's")
    info = {
        "trainer": "federated", "command": command,
        # Compression's stochastic rounding, dropout's masks and DP noise are
        # drawn by random ops inside TFF's runtime that no seed of ours reaches
        # (DP noise must not be predictable).
        "reproducible": not config.compression and not config.dropout and dp_run is None,
        "data": {"corpus": corpus.name, "source": data_source or {}, "fingerprint": corpus.fingerprint(),
                 "train_clients": len(train_ids), "validation_clients": len(val_ids),
                 "heldout_clients": len(heldout_ids), "empty_train_clients": empty_clients,
                 "heldout_ids_head": heldout_ids[:5], "split": dataclasses.asdict(split)},
        "federated": dataclasses.asdict(config),
        "client_data": dataclasses.asdict(data_config),
        "loop": dataclasses.asdict(loop),
        "hyperparameters": {"seq_len": data_config.max_seq_len},
        "parameters": keras_model.count_params(),
        "upload_bytes_per_client": sent, "upload_bytes_float32": raw,
        "workers": workers,
    }
    # A resumed run keeps the record of where it started (save_run rewrites run.json whole).
    info["init_from"] = (resumed.get("init_from") if resume
                         else init.record(vocab) if init is not None else None)
    if not resume:
        save_run(run_dir, model_config, vocab, weights_dict(keras_model),
                 {**info, "rounds_done": 0, "best": None,
                  "differential_privacy": dp_run.info(0) if dp_run else None})
    log(f"federated {config.algorithm} ({config.server_optimizer if config.algorithm != 'fedatt' else 'attentive'}) "
        f"{model_config.model_type}: {keras_model.count_params():,} parameters, V={len(vocab):,}, "
        f"{len(trainable)} training clients ({empty_clients} without text), "
        + (f"{len(val_ids)} for validation, " if val_ids else "") + f"{len(heldout_ids)} held-out, "
        f"{config.clients_per_round}/round; upload {sent:,} B/client/round vs {raw:,} B float32")
    if dp_run is not None:
        log(dp_run.summary(config.rounds))

    writer = tf.summary.create_file_writer(os.path.join(run_dir, "tensorboard"))
    limit = math.log(len(vocab)) * loop.divergence_factor
    result, started = None, time.time()
    last_good = start_round
    examples_seen, elapsed_before = _totals_so_far(run_dir) if resume else (0, 0.0)
    tracked = {c: [] for c in track_clients}
    dp_clip = dp_run.config.clip if dp_run is not None else None
    # The rate clients train at: it lives in TFF's state, so a resumed run continues with its own.
    client_lr = client_learning_rate(process, state) if val_ids else None
    best_result = None  # the kept round's full held-out result, when this process evaluated it
    for round_num in range(start_round + 1, config.rounds + 1):
        t0 = time.time()
        sampled = (dp_run.cohort(round_num) if dp_run is not None
                   else sample_clients(trainable, config.clients_per_round, config.seed, round_num))
        if manifest is not None:
            datasets = wd.round_arguments(manifest, worker_data_root, sampled,
                                          [_dataset_seed(config.seed, round_num, i) for i in range(len(sampled))])
            failed = 0
        else:
            datasets, failed = round_datasets(examples, sampled, data_config, config.seed, round_num, log)
        if datasets:
            try:
                output = process.next(state, datasets)
            except Exception as e:  # noqa: BLE001 - whatever TFF's runtime raises for a shard it cannot read
                clear = wd.read_error(e, worker_data_root, round_num) if manifest is not None else None
                if clear is None:
                    raise
                # The other workers' part-rounds fail the same way; asyncio would print each one's traceback.
                logging.getLogger("asyncio").setLevel(logging.CRITICAL)
                raise clear from e
            train = output.metrics["client_work"]["train"]
            train_loss, round_examples = float(train["loss"]), int(train["num_examples"])
            zeroed = int(output.metrics["aggregator"]["non_finite_zeroed"])
            if dp_run is not None:
                dp_clip = _dp_clip(output.metrics["aggregator"], dp_run.config.clip)
            if not math.isfinite(train_loss) or train_loss > limit:
                raise TrainingDivergedError(
                    f"training diverged at round {round_num} (train loss {train_loss}, limit {limit:.1f}); "
                    f"the last good checkpoint (round {last_good}) is kept in "
                    f"{os.path.join(run_dir, CHECKPOINT_DIR)}")
            state = output.state
            if average is not None:
                average.update(process.get_model_weights(state).trainable)
        elif sampled and failed == len(sampled):
            raise ConfigError(f"round {round_num}: every sampled client failed")
        else:
            # Poisson sampling drew nobody: no TFF round (it cannot aggregate zero
            # clients), but the round counts for the accountant all the same.
            log(f"round {round_num}: Poisson sampling drew no client; the model is unchanged")
            train_loss, round_examples, zeroed = float("nan"), 0, 0
        examples_seen += round_examples
        for cid in sampled:
            if cid in tracked:
                tracked[cid].append(round_num)
        row = {"round": round_num, "train_loss": train_loss if datasets else "", "examples": round_examples,
               "examples_seen": examples_seen, "clients": len(datasets),
               "failed_clients": failed, "non_finite_zeroed": zeroed,
               "upload_bytes_per_client": sent, "seconds": 0.0, **{k: "" for k in EVAL_KEYS}}
        if dp_run is not None:
            eps, rho = dp_run.epsilon(round_num)
            row["epsilon"] = eps
            row["dp_clip"] = dp_clip
            if rho is not None:
                row["rho"] = rho
        if val_ids:
            row.update(learning_rate=client_lr, val_loss="", val_recall_at_3="", best_round="")
        recall3 = None
        improved = False
        is_last = round_num == config.rounds
        if round_num % loop.eval_every == 0 or is_last:
            result = _evaluate_checked(process, state, keras_model, average, corpus, heldout_ids, vocab,
                                       data_config.max_seq_len, limit, round_num, last_good, run_dir)
            row.update({k: result["pooled"][k] for k in EVAL_KEYS})
            recall3 = result["pooled"]["recall_at_3"]
            if val_ids:
                val = evaluate_model(keras_model, corpus, val_ids, vocab, data_config.max_seq_len)["pooled"]
                row.update(val_loss=val["loss"], val_recall_at_3=val["recall_at_3"])
                improved = best is None or validation_score(val) > validation_score(
                    {"recall_at_3": best["val_recall_at_3"], "loss": best["val_loss"]})
                if improved:
                    best = {"round": round_num, "val_recall_at_3": val["recall_at_3"], "val_loss": val["loss"],
                            "heldout": result["pooled"]}
                    best_result = result
                elif config.lr_decay < 1.0:
                    # The next round trains slower; so does this round's checkpoint, even after the
                    # last round, so a run extended by --resume goes on as an uninterrupted one would.
                    state, client_lr = decayed_hparams(process, state, config.lr_decay)
                    log(f"round {round_num}: no validation gain over round {best['round']}; "
                        f"learning rate now {client_lr:.4g}")
                row["best_round"] = best["round"]
        row["seconds"] = round(time.time() - t0, 2)
        row["elapsed_seconds"] = round(elapsed_before + time.time() - started, 2)
        with writer.as_default(step=round_num):
            for k, v in row.items():
                if v != "" and k != "round":
                    tf.summary.scalar(k, float(v))
        # Row, run files, then program state: a checkpoint of round r always has
        # its metrics row (rows after the checkpoint are dropped on resume).
        append_metrics_row(run_dir, row)
        checkpoint = round_num % loop.checkpoint_every == 0 or is_last
        if checkpoint or improved:
            kept = best["heldout"] if best is not None else (result["pooled"] if result is not None else None)
            fields = {**info, "rounds_done": round_num, "best": best, "final_metrics": kept,
                      "differential_privacy": dp_run.info(round_num) if dp_run is not None else None,
                      **({"participation": tracked} if track_clients else {})}
            if val_ids and not improved:
                update_run_info(run_dir, fields)  # weights.npz stays the best round's
            else:
                _assign(process, state, keras_model, average)
                save_run(run_dir, model_config, vocab, weights_dict(keras_model), fields)
        if checkpoint:
            if average is not None:
                average.save(checkpoint_dir, round_num)
            asyncio.run(manager.save(state, round_num))
            if average is not None:
                ServerAverage.prune(checkpoint_dir, asyncio.run(manager.get_versions()) or ())
            last_good = round_num
        if on_round is not None:
            on_round(round_num, row["seconds"])
        line = _progress(round_num, config.rounds, train_loss, recall3, time.time() - started,
                         round_num - start_round)
        log(line + (f"  eps {row['epsilon']:.3g}" if dp_run is not None else ""))
    writer.flush()
    _plot(run_dir)
    if result is not None:
        log(f"held-out after round {config.rounds}: {summarize(result)}")
    if best is not None:
        log(f"keeping round {best['round']} (best validation recall@3 {best['val_recall_at_3']:.4f}); "
            f"its held-out recall@3 {best['heldout']['recall_at_3']:.4f}, "
            f"perplexity {best['heldout']['perplexity']:.1f}")
        result = best_result if best_result is not None else {"pooled": best["heldout"]}
    if dp_run is not None:
        log(dp_run.report(config.rounds))
    return result or {}


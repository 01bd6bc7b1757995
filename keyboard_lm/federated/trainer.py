"""The federated training loop: sampling, rounds, evaluation, checkpoints, resume.

One run directory holds everything (see ``keyboard_lm.models.run_dir``):
run.json, vocab.txt, weights.npz, metrics.csv, plus ``checkpoints/`` (TFF
program state every N rounds, for ``--resume``), ``tensorboard/`` and
``metrics.png``. The run holds the directory's lock while it trains and lists
what it writes in its manifest (``models.run_guard``). A round's checkpoint is
written before run.json names it, with the record run.json gets beside it
(``record_N.json``), so a run stopped between the two, or resumed from an
earlier checkpoint because the latest is damaged, is made consistent again.

``train_federated`` reads like fedjax's experiment loop: a run is set up
(:class:`FederatedRun`: fresh, from a base, or resumed; ``run_start``), then each round
samples clients (``rounds.ClientSampler``), runs TFF's process on their
data (``rounds.RoundData``), now and then scores the model
(``rounds.Evaluator``) and lets the validation clients decide what is kept
(``training.loop.KeepBest``), and writes it all (``training.loop.RunWriter``).
TFF starts when a run starts, not when this module is imported.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

import tensorflow as tf

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.preprocessing import encode_clients
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.evaluation import summarize
from keyboard_lm.federated.aggregation import upload_bytes
from keyboard_lm.federated.config import FederatedConfig, LoopConfig, default_federated, without_validation_for_dp
from keyboard_lm.federated.rounds import ClientSampler, Evaluator, RoundData
from keyboard_lm.federated.run_start import RunOptions, check_canary_words, resume_settings
from keyboard_lm.federated.server_average import ServerAverage
from keyboard_lm.federated.time_breakdown import TimeBreakdown
from keyboard_lm.federated.round_checkpoints import RoundCheckpoints
from keyboard_lm.models.run_dir import CHECKPOINT_DIR, RunWriteError, drop_metrics_after, totals_so_far
from keyboard_lm.models.run_guard import hold_run_dir, prepare_run_dir
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.language_model import assign_weights, build_model, weights_dict
from keyboard_lm.models.warm_start import describe
from keyboard_lm.text.vocabulary import Vocabulary
from keyboard_lm.training.loop import KeepBest, RunWriter

#: What the demo writes into its run directory after training (``cli.demo``): listed in the run's manifest.
DEMO_FILES = ("model.tflite", "model.tflite.card.json")
EVAL_KEYS = ("loss", "perplexity", "recall_at_1", "recall_at_3", "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate")


def _progress(round_num, rounds, loss, recall3, elapsed, done_this_run) -> str:
    width = 24
    filled = int(width * round_num / rounds)
    per_round = elapsed / max(done_this_run, 1)
    eta = int(per_round * (rounds - round_num))
    r3 = f"{recall3:.4f}" if recall3 is not None else "  -   "
    return (f"[{'#' * filled}{'.' * (width - filled)}] round {round_num}/{rounds}  loss {loss:.3f}  "
            f"recall@3 {r3}  {per_round:.1f}s/round  ETA {eta // 60}:{eta % 60:02d}")


def _dp_clip(aggregator_metrics, fallback):
    """The DP clip the round used: the adaptive estimate TFF reports, else the fixed clip."""
    query = (aggregator_metrics.get("inner") or {}).get("dp_query_metrics") or {}
    return float(query["clip"]) if "clip" in query else fallback


def checkpoint_due(loop: LoopConfig, round_num: int, rounds: int, *, evaluated: bool, improved: bool,
                   since_saved: float) -> bool:
    """Save this round? Every ``checkpoint_every`` rounds or ``checkpoint_seconds`` seconds, and after an
    evaluation (its learning-rate decay lives in the state), a round kept as the best (the weights run.json
    keeps are of a round it can resume from) and the last round."""
    return (round_num % loop.checkpoint_every == 0 or round_num == rounds or evaluated or improved
            or 0 < loop.checkpoint_seconds <= since_saved)


class FederatedRun:
    """One federated run between rounds: its settings, TFF process and state, and what it writes.

    Made by :meth:`start` (a fresh run, one from a base, or a resumed one);
    ``train_federated`` then calls :meth:`train_round`, :meth:`evaluate` and
    :meth:`record` for each round, and :meth:`finish`.
    """

    @classmethod
    def start(cls, corpus: Corpus, run_dir: str, model_config: ModelConfig | None, config: FederatedConfig | None,
              data_config: ClientDataConfig, split: SplitConfig, loop: LoopConfig, options: RunOptions):
        run = cls()
        run.corpus, run.run_dir, run.loop, run.options, run.log = corpus, run_dir, loop, options, options.log
        run.guard = None
        t0 = time.perf_counter()
        try:
            run._settings(model_config, config, data_config, split)
            run._clients()
            run._process()
            run._restore()
            run._announce()
        except BaseException:
            run.release()
            raise
        # Where the run's time goes (run.json's time_breakdown), continuing a resumed run's totals.
        run.timing = TimeBreakdown(run.resumed.get("time_breakdown") if options.resume else None, since=t0)
        run.timing.add("setup", time.perf_counter() - t0)
        return run

    def release(self) -> None:
        """Let go of the run directory (its lock); the run's end, whichever way it ends."""
        if self.guard is not None:
            self.guard.release()

    def _settings(self, model_config, config, data_config, split) -> None:
        """Recipe, vocabulary and model of the run: from its own directory when resumed."""
        o = self.options
        self.split = split
        self.train_ids, self.heldout_ids = split_clients(self.corpus.client_ids, split)
        if config is None:
            config = default_federated(warm_start=o.init is not None, dp=o.dp is not None)
        if o.resume and o.init is not None:
            raise ConfigError("--init-from starts a fresh run; a resumed run continues from its own checkpoint")
        self.dp, self.command, self.resumed, best = o.dp, o.command, {}, None
        if o.resume:
            self.guard = hold_run_dir(self.run_dir)  # refused at once while another run trains here
            r = resume_settings(self.run_dir, self.corpus, self.heldout_ids, config, self.log)
            self.vocab, model_config, config, data_config, self.command, self.dp, self.resumed = (
                r.vocab, r.model_config, r.config, r.data_config, r.command, r.dp, r.info)
            best = r.info.get("best")
        else:
            base = model_config or ModelConfig()
            if o.init is not None:
                o.init.check_model(base.model_type, base.embedding_dim, base.units)
            self.vocab = Vocabulary.from_sentences(self.corpus.sentences(self.train_ids), o.vocab_size)
            if o.init is not None:
                self.vocab = o.init.vocabulary(self.vocab, o.vocab_size)
            if o.audit:
                check_canary_words(o.audit, self.vocab)  # before the run directory is touched
            self.guard = prepare_run_dir(self.run_dir, self.command, overwrite=o.overwrite,
                                         replace_own=self.command == "demo",
                                         planned=DEMO_FILES if self.command == "demo" else (), log=self.log)
            model_config = dataclasses.replace(base, vocab_size=len(self.vocab))
        if self.dp is not None:
            config = without_validation_for_dp(config, refuse=False, log=self.log)
        self.config, self.model_config, self.data_config = config, model_config, data_config
        self.keep = KeepBest(bool(config.validation_fraction), config.lr_decay, best=best)

    def _clients(self) -> None:
        """Training, validation and held-out clients; clients without a sentence cannot train and are counted."""
        config = self.config
        if config.validation_fraction:
            self.fit_ids, self.val_ids = validation_clients(self.train_ids, config.validation_fraction,
                                                            self.split.seed)
        else:
            self.fit_ids, self.val_ids = self.train_ids, []
        encoded = encode_clients({c: self.corpus.clients[c] for c in self.fit_ids}, self.vocab,
                                 self.data_config.max_seq_len)
        self.trainable = [c for c in self.fit_ids if len(encoded[c][0])]
        self.empty_clients = len(self.fit_ids) - len(self.trainable)
        if not self.trainable:
            raise ConfigError("no training client has any sentence")
        self.dp_run = None
        if self.dp is not None:
            from keyboard_lm.federated.dp_run import DPRun

            o = self.options
            start = self.resumed.get("init_from") if o.resume else (
                {"vocab": o.init.vocab} if o.init is not None else None)
            public = bool(start) and start.get("vocab") == "base"
            self.dp_run = DPRun(self.dp, self.trainable, config, public_vocabulary=public)
            if not public:
                self.log("warning: the vocabulary is built from the training clients' text without noise, "
                         "outside the DP guarantee (--init-from base --init-vocab base keeps the base's)")
            # The DP clip is the clip: the non-DP robust clipping is off.
            self.config = dataclasses.replace(config, clip="none")
        elif config.clients_per_round > len(self.trainable):
            raise ConfigError(f"--clients-per-round {config.clients_per_round} is more than the "
                              f"{len(self.trainable)} training clients with text in {self.corpus.name}")
        self.sampler = ClientSampler(self.trainable, self.config.clients_per_round, self.config.seed, self.dp_run)
        o = self.options
        self.data = RoundData({c: encoded[c] for c in self.trainable}, self.data_config, self.config.seed,
                              worker_data=o.worker_data, worker_data_root=o.worker_data_root,
                              vocab_sha256=self.vocab.fingerprint(), corpus_fingerprint=self.corpus.fingerprint(),
                              log=self.log)

    def _process(self) -> None:
        """TFF's process and its first state (the base's weights when started from one)."""
        from keyboard_lm.federated.process import build_process
        from keyboard_lm.federated.runtime import start_runtime

        tff = start_runtime()
        input_spec = (tf.TensorSpec([None, self.data_config.max_seq_len], tf.int32),) * 2
        tf.keras.utils.set_random_seed(self.config.seed)
        # Training computes the loss and example counts only: recall is measured
        # on held-out clients, and per-batch top-k over V words would cost more
        # than the cell itself (TFF should be no slower than plain TensorFlow).
        process = (self.dp_run.process(self.model_config, input_spec, self.config) if self.dp_run is not None
                   else build_process(self.model_config, self.config, input_spec, metrics=False, reuse=True))
        self.process = self.data.wrap(process)
        self.state = self.process.initialize()
        self.keras_model = build_model(self.model_config)
        init = self.options.init
        if init is not None:
            # The server's first model is the base's; clients receive it in round 1.
            assign_weights(self.keras_model, init.initial_weights(self.vocab, self.config.seed))
            self.state = self.process.set_model_weights(
                self.state, tff.learning.models.ModelWeights.from_model(self.keras_model))
            self.log(describe(init.record(self.vocab)))
        shapes = [tuple(w.shape) for w in self.keras_model.trainable_weights]
        self.sent, self.raw = upload_bytes(shapes, self.config.compression)
        self.checkpoint_dir = os.path.join(self.run_dir, CHECKPOINT_DIR)
        manager = tff.program.FileProgramStateManager(self.checkpoint_dir, keep_total=self.loop.keep_checkpoints,
                                                      keep_first=False)
        self.checkpoints = RoundCheckpoints(self.run_dir, manager, self.guard, self.config.weight_average, self.log)

    def _restore(self) -> None:
        """The round to start after, the server average and run.json's record (written now for a fresh run)."""
        config, resume = self.config, self.options.resume
        self.start_round = 0
        # A fresh average starts at the initial model, as the centralized one starts at the initial weights;
        # a resumed one is read from the checkpoint below.
        self.average = (ServerAverage(config.weight_average, self.process.get_model_weights(self.state).trainable)
                        if config.weight_average and not resume else None)
        restored = None
        if resume:
            restored = self.checkpoints.load_newest(self.state)  # past a damaged one, saying so
            self.state, self.start_round = restored.state, restored.round
            if config.weight_average:
                self.average = restored.average
            if restored.record is not None:
                self.keep.best = restored.record["fields"]["best"]  # the kept round as of this checkpoint
            # Runs made before "finished" was recorded ended with their last round's record.
            finished = self.resumed.get("finished", True) and self.resumed.get("rounds_done") == self.start_round
            if config.rounds < self.start_round or (config.rounds == self.start_round and finished):
                raise ConfigError(f"{self.run_dir}: the run has done {self.start_round} rounds already; "
                                  f"give --rounds above {self.start_round} to train further")
            drop_metrics_after(self.run_dir, "round", self.start_round)
            if config.rounds == self.start_round:
                self.log(f"resume: the run stopped after its last round's checkpoint (round {self.start_round}) "
                         "and before its end; finishing it")
            else:
                self.log(f"resuming after round {self.start_round}, up to round {config.rounds}")
            if config.compression or config.dropout:
                what = "compressed uploads round" if config.compression else "dropout draws its masks"
                self.log(f"resume: {what} at random inside TFF's runtime (unseeded), so the rounds "
                         "from here on are not bit-identical to an uninterrupted run's")
        info = self._info()
        self.writer = RunWriter(self.run_dir, self.model_config, self.vocab, info, tensorboard=True,
                                guard=self.guard)
        if not resume:
            self.writer.save(weights_dict(self.keras_model),
                             {"rounds_done": 0, "best": None, "finished": False,
                              "differential_privacy": self.dp_run.info(0) if self.dp_run else None})
        elif restored.record is not None and self.resumed.get("rounds_done") != self.start_round:
            # Stopped between a checkpoint and run.json, or resumed from an earlier checkpoint than
            # run.json names: run.json is written again from the checkpoint's record.
            self.log(f"resume: run.json named round {self.resumed.get('rounds_done')}; written again as of "
                     f"round {self.start_round}'s checkpoint")
            self._write_run_files(restored.record["fields"], restored.record["weights"])
        self.limit = math.log(len(self.vocab)) * self.loop.divergence_factor
        self.evaluator = Evaluator(self.corpus, self.heldout_ids, self.val_ids, self.vocab,
                                   self.data_config.max_seq_len, self.limit, self.run_dir)
        self.last_good = self.start_round
        self.examples_seen, self.elapsed_before = totals_so_far(self.run_dir) if resume else (0, 0.0)
        self.tracked = self._tracked_so_far()
        self.dp_clip = self.dp_run.config.clip if self.dp_run is not None else None
        # The rate clients train at: it lives in TFF's state, so a resumed run continues with its own.
        from keyboard_lm.federated.process import client_learning_rate

        self.client_lr = client_learning_rate(self.process, self.state) if self.val_ids else None
        self.result = self.best_result = None  # the last evaluation; the kept round's, when evaluated here
        self.started = self.last_saved = time.time()

    def _info(self) -> dict:
        """run.json's record of the run (save_run rewrites it whole; a resumed run keeps where it started)."""
        config, o, init = self.config, self.options, self.options.init
        audit = self.resumed.get("audit") if o.resume else o.audit
        return {
            "trainer": "federated", "command": self.command,
            **({"run_id": self.guard.run_id} if self.guard.run_id else {}),
            # Compression's stochastic rounding, dropout's masks and DP noise are
            # drawn by random ops inside TFF's runtime that no seed of ours reaches
            # (DP noise must not be predictable).
            "reproducible": not config.compression and not config.dropout and self.dp_run is None,
            "data": {"corpus": self.corpus.name, "source": o.data_source or {},
                     "fingerprint": self.corpus.fingerprint(),
                     "train_clients": len(self.train_ids), "validation_clients": len(self.val_ids),
                     "heldout_clients": len(self.heldout_ids), "empty_train_clients": self.empty_clients,
                     "heldout_ids_head": self.heldout_ids[:5], "split": dataclasses.asdict(self.split)},
            "federated": dataclasses.asdict(config),
            "client_data": dataclasses.asdict(self.data_config),
            "loop": dataclasses.asdict(self.loop),
            "hyperparameters": {"seq_len": self.data_config.max_seq_len},
            "parameters": self.keras_model.count_params(),
            "upload_bytes_per_client": self.sent, "upload_bytes_float32": self.raw,
            "workers": o.workers,
            "init_from": (self.resumed.get("init_from") if o.resume
                          else init.record(self.vocab) if init is not None else None),
            **({"audit": audit} if audit else {}),
        }

    def _tracked_so_far(self) -> dict:
        """Rounds each tracked client trained in: none yet, or a resumed run's up to its checkpoint."""
        ids = self.options.track_clients
        if not self.options.resume:
            return {c: [] for c in ids}
        saved = self.resumed.get("participation") or {}
        missing = [c for c in ids if c not in saved]
        if missing:
            raise ConfigError(f"{self.run_dir}: the run did not record the participation of {len(missing)} of the "
                              f"{len(ids)} clients to track (e.g. {missing[0]!r}); it cannot be resumed as an audit")
        return {c: [r for r in saved[c] if r <= self.start_round] for c in ids}

    def _announce(self) -> None:
        config = self.config
        server = config.server_optimizer if config.algorithm != "fedatt" else "attentive"
        self.log(f"federated {config.algorithm} ({server}) {self.model_config.model_type}: "
                 f"{self.keras_model.count_params():,} parameters, V={len(self.vocab):,}, "
                 f"{len(self.trainable)} training clients ({self.empty_clients} without text), "
                 + (f"{len(self.val_ids)} for validation, " if self.val_ids else "")
                 + f"{len(self.heldout_ids)} held-out, "
                 f"{config.clients_per_round}/round; upload {self.sent:,} B/client/round vs {self.raw:,} B float32")
        if self.dp_run is not None:
            self.log(self.dp_run.summary(config.rounds))

    def _assign(self) -> None:
        """Put the round's model into the Keras model: the server's weights, or their average across rounds."""
        self.process.get_model_weights(self.state).assign_weights_to(self.keras_model)
        if self.average is not None:
            for var, value in zip(self.keras_model.trainable_weights, self.average.weights):
                var.assign(value)

    def train_round(self, round_num: int) -> dict:
        """One round of training; returns its metrics row (evaluation columns empty)."""
        self.t0 = time.time()
        with self.timing.phase("client_data"):
            sampled = self.sampler(round_num)
            arguments, failed = self.data.arguments(sampled, round_num)
        if arguments:
            with self.timing.phase("tff_round"):
                output = self.data.run(self.process, self.state, arguments, round_num)
            train = output.metrics["client_work"]["train"]
            train_loss, examples = float(train["loss"]), int(train["num_examples"])
            zeroed = int(output.metrics["aggregator"]["non_finite_zeroed"])
            if self.dp_run is not None:
                self.dp_clip = _dp_clip(output.metrics["aggregator"], self.dp_run.config.clip)
            self.evaluator.check_training(train_loss, round_num, self.last_good)
            self.state = output.state
            if self.average is not None:
                with self.timing.phase("server_average"):
                    self.average.update(self.process.get_model_weights(self.state).trainable)
        elif sampled and failed == len(sampled):
            raise ConfigError(f"round {round_num}: every sampled client failed")
        else:
            # Poisson sampling drew nobody: no TFF round (it cannot aggregate zero
            # clients), but the round counts for the accountant all the same.
            self.log(f"round {round_num}: Poisson sampling drew no client; the model is unchanged")
            train_loss, examples, zeroed = float("nan"), 0, 0
        self.train_loss = train_loss
        self.examples_seen += examples
        for cid in sampled:
            if cid in self.tracked:
                self.tracked[cid].append(round_num)
        row = {"round": round_num, "train_loss": train_loss if arguments else "", "examples": examples,
               "examples_seen": self.examples_seen, "clients": len(arguments),
               "failed_clients": failed, "non_finite_zeroed": zeroed,
               "upload_bytes_per_client": self.sent, "seconds": 0.0, **{k: "" for k in EVAL_KEYS}}
        if self.dp_run is not None:
            eps, rho = self.dp_run.epsilon(round_num)
            row["epsilon"] = eps
            row["dp_clip"] = self.dp_clip
            if rho is not None:
                row["rho"] = rho
        if self.val_ids:
            row.update(learning_rate=self.client_lr, val_loss="", val_recall_at_3="", best_round="")
        return row

    def evaluate(self, round_num: int, row: dict) -> tuple[float | None, bool]:
        """Score the round's model when it is due; returns (held-out recall@3 or None, kept as the best)."""
        if not (round_num % self.loop.eval_every == 0 or round_num == self.config.rounds):
            return None, False
        with self.timing.phase("evaluation"):
            return self._evaluate(round_num, row)

    def _evaluate(self, round_num: int, row: dict) -> tuple[float | None, bool]:
        self._assign()
        self.result = self.evaluator.heldout(self.keras_model, round_num, self.last_good)
        row.update({k: self.result["pooled"][k] for k in EVAL_KEYS})
        val = self.evaluator.validation(self.keras_model)
        if val is None:
            return self.result["pooled"]["recall_at_3"], False
        row.update(val_loss=val["loss"], val_recall_at_3=val["recall_at_3"])
        verdict = self.keep.observe(round_num, val, self.result["pooled"])
        if verdict.improved:
            self.best_result = self.result
        elif verdict.decay:
            # The next round trains slower; so does this round's checkpoint, even after the
            # last round, so a run extended by --resume goes on as an uninterrupted one would.
            from keyboard_lm.federated.process import decayed_hparams

            self.state, self.client_lr = decayed_hparams(self.process, self.state, self.config.lr_decay)
            self.log(f"round {round_num}: no validation gain over round {self.keep.step}; "
                     f"learning rate now {self.client_lr:.4g}")
        row["best_round"] = self.keep.step
        return self.result["pooled"]["recall_at_3"], verdict.improved

    def record(self, round_num: int, row: dict, recall3: float | None, improved: bool) -> None:
        """Row, checkpoint, then run files: a checkpoint of round r always has its metrics row (rows after
        the checkpoint are dropped on resume), and run.json never names a round without its checkpoint."""
        row["seconds"] = round(time.time() - self.t0, 2)
        row["elapsed_seconds"] = round(self.elapsed_before + time.time() - self.started, 2)
        self.writer.row("round", row)
        # A round kept as the best is checkpointed too: the weights run.json keeps are of a round it can resume from.
        if checkpoint_due(self.loop, round_num, self.config.rounds, evaluated=recall3 is not None, improved=improved,
                          since_saved=time.time() - self.last_saved):
            best = self.keep.best
            kept = best["heldout"] if best is not None else (self.result["pooled"] if self.result is not None else None)
            fields = {"rounds_done": round_num, "best": best, "final_metrics": kept, "finished": False,
                      "differential_privacy": self.dp_run.info(round_num) if self.dp_run is not None else None,
                      "time_breakdown": self.timing.record(),
                      **({"participation": self.tracked} if self.options.track_clients else {})}
            weights = not (self.val_ids and not improved)  # with validation, weights.npz stays the best round's
            with self.timing.phase("checkpoint"):
                self.checkpoints.save(round_num, self.state, self.average, {"fields": fields, "weights": weights})
                self.last_good = round_num
                self._write_run_files(fields, weights)
            self.last_saved = time.time()
        if self.options.on_round is not None:
            self.options.on_round(round_num, row["seconds"])
        line = _progress(round_num, self.config.rounds, self.train_loss, recall3, time.time() - self.started,
                         round_num - self.start_round)
        self.log(line + (f"  eps {row['epsilon']:.3g}" if self.dp_run is not None else "")
                 + f"  [{self.timing.progress()}]")

    def _write_run_files(self, fields: dict, weights: bool) -> None:
        """run.json's record of a checkpointed round; with ``weights``, that round's model as weights.npz."""
        if weights:
            self._assign()
            self.writer.save(weights_dict(self.keras_model), fields)
        else:
            self.writer.update({**self.writer.info, **fields})

    def finish(self) -> dict:
        """Flush and plot, and mark the run finished; returns the held-out evaluation of the round it keeps.

        A run resumed only to finish (stopped after its last round's checkpoint) is evaluated here."""
        if self.result is None:
            with self.timing.phase("evaluation"):
                self._assign()
                self.result = self.evaluator.heldout(self.keras_model, self.config.rounds, self.last_good)
        self.writer.close(plot="round")
        breakdown = self.timing.record()
        self.writer.update({"finished": True, "time_breakdown": breakdown})
        self.log("time: " + ", ".join(f"{k} {v:,.0f} s ({breakdown['share'][k]:.0%})"
                                      for k, v in breakdown["seconds"].items() if v >= 0.5))
        result, best = self.result, self.keep.best
        self.log(f"held-out after round {self.config.rounds}: {summarize(result)}")
        if best is not None:
            self.log(f"keeping round {best['round']} (best validation recall@3 {best['val_recall_at_3']:.4f}); "
                     f"its held-out recall@3 {best['heldout']['recall_at_3']:.4f}, "
                     f"perplexity {best['heldout']['perplexity']:.1f}")
            result = self.best_result if self.best_result is not None else {"pooled": best["heldout"]}
        if self.dp_run is not None:
            self.log(self.dp_run.report(self.config.rounds))
        return result or {}


def train_federated(corpus: Corpus, run_dir: str, model_config: ModelConfig | None = None,
                    config: FederatedConfig | None = None, data_config: ClientDataConfig = ClientDataConfig(),
                    split: SplitConfig = SplitConfig(), loop: LoopConfig = LoopConfig(),
                    options: RunOptions = RunOptions()) -> dict:
    """Run federated training into ``run_dir``; returns the held-out evaluation of the round it keeps.

    With ``config.validation_fraction`` > 0 a share of the training clients
    never trains: at every evaluation their recall@3 decides whether the
    round is the best so far (its weights are the run's weights.npz and
    ``best`` in run.json), and a round without gain multiplies the client
    learning rate by ``config.lr_decay``.  Without it (and always under DP)
    the run keeps its last round.  ``config`` None is ``default_federated``:
    the recipe from random weights, or from a base when ``options.init`` is
    given (without DP, its server optimizer too).  ``options`` (``RunOptions``)
    says how the run starts (fresh, from a base, resumed), with DP or not,
    what it records and where the data is read.
    """
    run = FederatedRun.start(corpus, run_dir, model_config, config, data_config, split, loop, options)
    try:
        for round_num in range(run.start_round + 1, run.config.rounds + 1):
            row = run.train_round(round_num)
            recall3, improved = run.evaluate(round_num, row)
            run.record(round_num, row, recall3, improved)
        return run.finish()
    except RunWriteError as e:
        raise RunWriteError(f"{e}; the run is kept as of round {run.last_good} (--resume continues it once the "
                            "file can be written)") from None
    finally:
        run.release()

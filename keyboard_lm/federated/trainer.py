"""The federated training loop: a loop over explicit collaborators, asking each for its part.

One run directory holds everything (see ``keyboard_lm.models.run_dir``):
run.json, vocab.txt, weights.npz, metrics.csv, plus ``checkpoints/`` (the
saved program state every N rounds, for ``--resume``), ``tensorboard/`` and
``metrics.png``. The run holds the directory's lock while it trains and lists
what it writes in its manifest (``models.run_guard``).

``train_federated`` has the shape of fedjax's ``run_federated_experiment`` and
TFF's ``tff.learning.programs.train_model``: ``run_setup.start_run`` builds the
collaborators and the program state to start from; :func:`run_rounds` then, each
round, asks the client sampler for a cohort, the algorithm to apply a round
(``algorithm.FederatedAlgorithm``), the evaluator and keep-best for a verdict
when one is due, the checkpoint manager to save the program state
(``round_checkpoints``: before run.json names the round), and the run writer
to write metrics.csv and run.json. TFF starts when a run starts, not when this
module is imported.
"""

from __future__ import annotations

import logging
import time

from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.split import SplitConfig
from keyboard_lm.evaluation import summarize
from keyboard_lm.federated.config import FederatedConfig, LoopConfig
from keyboard_lm.federated.round_checkpoints import ProgramState, checkpoint_due
from keyboard_lm.federated.run_setup import DEMO_FILES, FederatedParts, start_run, write_round
from keyboard_lm.federated.run_start import RunOptions
from keyboard_lm.federated.time_breakdown import TimeBreakdown
from keyboard_lm.log import lines_to
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.run_dir import RunWriteError, totals_so_far
from keyboard_lm.training.loop import progress_line

__all__ = ["DEMO_FILES", "EVAL_KEYS", "checkpoint_due", "run_rounds", "train_federated"]

logger = logging.getLogger(__name__)

EVAL_KEYS = ("loss", "perplexity", "recall_at_1", "recall_at_3", "iv_accuracy_at_1", "iv_accuracy_at_3", "oov_rate")


def train_federated(corpus: Corpus, run_dir: str, model_config: ModelConfig | None = None,
                    config: FederatedConfig | None = None, split: SplitConfig = SplitConfig(),
                    options: RunOptions = RunOptions(), *, data_config: ClientDataConfig = ClientDataConfig(),
                    loop: LoopConfig = LoopConfig()) -> dict:
    """Run federated training into ``run_dir``; returns the held-out evaluation of the round it keeps.

    With ``config.validation_fraction`` > 0 a share of the training clients
    never trains: at every evaluation their recall@3 decides whether the
    round is the best so far (its weights are the run's weights.npz and
    ``best`` in run.json), and a round without gain multiplies the client
    learning rate by ``config.lr_decay``.  Without it (and always under DP)
    the run keeps its last round.  ``config`` None is ``default_federated``:
    the recipe from random weights, or from a base when ``options.init`` is
    given (without DP, its server optimizer too).  ``options`` (``RunOptions``)
    says how the run starts (fresh, from a base, resumed: then every setting
    but the round count is the run's own), with DP or not, what it records
    and where the data is read. Progress lines go to ``logging``.

    The signature is ``train_centralized``'s, with a federated run's own settings after it, by keyword:
    ``data_config`` (each client's batches) and ``loop`` (evaluation and checkpoint cadence).
    """
    with lines_to(options.log):
        t0 = time.perf_counter()
        parts = start_run(corpus, run_dir, model_config, config, data_config, split, loop, options)
        try:
            # Where the run's time goes (run.json's time_breakdown), continuing a resumed run's totals.
            timing = TimeBreakdown(parts.resumed.time_breakdown if parts.resumed else None, since=t0)
            timing.add("setup", time.perf_counter() - t0)
            return run_rounds(parts, timing, on_round=options.on_round)
        finally:
            parts.guard.release()


def run_rounds(parts: FederatedParts, timing: TimeBreakdown, on_round=None) -> dict:
    """The rounds from ``parts.start`` to ``parts.config.rounds``, then the run's end; returns the held-out
    evaluation of the round the run keeps."""
    p, config, algorithm, program = parts, parts.config, parts.algorithm, parts.start
    examples_seen, elapsed_before = totals_so_far(p.run_dir) if p.resumed else (0, 0.0)
    last = _Last(program.round, algorithm.client_learning_rate(program.server) if p.validating else None,
                 p.dp_run.config.clip if p.dp_run is not None else None)
    started = last_saved = time.time()
    try:
        for round_num in range(program.round + 1, config.rounds + 1):
            t0 = time.time()
            with timing.phase("client_data"):
                clients = p.sampler(round_num)
            server, metrics = algorithm.apply(program.server, clients, round_num, timing)
            if metrics.trained:
                p.evaluator.check_training(metrics.train_loss, round_num, last.good)
                if program.average is not None:
                    with timing.phase("server_average"):
                        program.average.update(algorithm.trainable(server))
            program = ProgramState(round_num, server, program.average)
            examples_seen += metrics.examples
            for cid in clients:
                if p.tracked is not None and cid in p.tracked:
                    p.tracked[cid].append(round_num)
            row = _row(p, round_num, metrics, examples_seen, last)
            recall3 = improved = None
            if round_num % p.loop.eval_every == 0 or round_num == config.rounds:
                with timing.phase("evaluation"):
                    recall3, improved = _evaluate(p, program, round_num, row, last)
            row["seconds"] = round(time.time() - t0, 2)
            row["elapsed_seconds"] = round(elapsed_before + time.time() - started, 2)
            p.writer.row("round", row)
            # A round kept as the best is checkpointed too: the weights run.json keeps are of a round it can
            # resume from. The checkpoint first: run.json never names a round without its checkpoint.
            if checkpoint_due(p.loop, round_num, config.rounds, evaluated=recall3 is not None,
                              improved=bool(improved), since_saved=time.time() - last_saved):
                with timing.phase("checkpoint"):
                    _save(p, program, round_num, bool(improved), timing, last)
                last_saved = time.time()
            if on_round is not None:
                on_round(round_num, row["seconds"])
            logger.info(progress_line(round_num, config.rounds, metrics.train_loss, recall3, time.time() - started,
                                      round_num - p.start.round)
                        + (f"  eps {row['epsilon']:.3g}" if p.dp_run is not None else "")
                        + f"  [{timing.progress()}]")
        return _finish(p, program, timing, last)
    except RunWriteError as e:
        raise RunWriteError(f"{e}; the run is kept as of round {last.good} (--resume continues it once the "
                            "file can be written)") from None


class _Last:
    """What the loop carries from round to round besides the program state: the newest checkpointed round
    (``good``), the client learning rate and DP clip now, and the newest evaluations (``result``; ``best``:
    the kept round's, when it was evaluated in this session)."""

    def __init__(self, good: int, client_lr, dp_clip):
        self.good, self.client_lr, self.dp_clip = good, client_lr, dp_clip
        self.result = self.best = None


def _row(p: FederatedParts, round_num: int, metrics, examples_seen: int, last: _Last) -> dict:
    """The round's metrics.csv row (evaluation columns empty until one is due)."""
    row = {"round": round_num, "train_loss": metrics.train_loss if metrics.trained else "",
           "examples": metrics.examples, "examples_seen": examples_seen, "clients": metrics.clients,
           "failed_clients": metrics.failed, "non_finite_zeroed": metrics.zeroed,
           "upload_bytes_per_client": p.algorithm.upload_bytes, "seconds": 0.0, **{k: "" for k in EVAL_KEYS}}
    if p.dp_run is not None:
        if metrics.dp_clip is not None:
            last.dp_clip = metrics.dp_clip
        eps, rho = p.dp_run.epsilon(round_num)
        row["epsilon"] = eps
        row["dp_clip"] = last.dp_clip
        if rho is not None:
            row["rho"] = rho
    if p.validating:
        row.update(learning_rate=last.client_lr, val_loss="", val_recall_at_3="", best_round="")
    return row


def _evaluate(p: FederatedParts, program: ProgramState, round_num: int, row: dict, last: _Last):
    """Score the round's model; returns (held-out recall@3, kept as the best). A round without validation
    gain decays the client rate in ``program``'s server state."""
    model = p.algorithm.model(program.server, program.average)
    last.result = p.evaluator.heldout(model, round_num, last.good)
    pooled = last.result["pooled"]
    row.update({k: pooled[k] for k in EVAL_KEYS})
    val = p.evaluator.validation(model)
    if val is None:
        return pooled["recall_at_3"], False
    row.update(val_loss=val["loss"], val_recall_at_3=val["recall_at_3"])
    verdict = p.keep.observe(round_num, val, pooled)
    if verdict.improved:
        last.best = last.result
    elif verdict.decay:
        # The next round trains slower; so does this round's checkpoint, even after the
        # last round, so a run extended by --resume goes on as an uninterrupted one would.
        program.server, last.client_lr = p.algorithm.decay(program.server, p.config.lr_decay)
        logger.info(f"round {round_num}: no validation gain over round {p.keep.step}; "
                    f"learning rate now {last.client_lr:.4g}")
    row["best_round"] = p.keep.step
    return pooled["recall_at_3"], verdict.improved


def _save(p: FederatedParts, program: ProgramState, round_num: int, improved: bool, timing, last: _Last) -> None:
    """The round's program state, then run.json (and, when the round is the kept one, weights.npz)."""
    best = p.keep.best
    kept = best["heldout"] if best is not None else (last.result["pooled"] if last.result is not None else None)
    fields = {"rounds_done": round_num, "best": best, "final_metrics": kept, "finished": False,
              "differential_privacy": p.dp_run.info(round_num) if p.dp_run is not None else None,
              "time_breakdown": timing.record(), **({"participation": p.tracked} if p.tracked is not None else {})}
    weights = not (p.validating and not improved)  # with validation, weights.npz stays the best round's
    program.record = {"fields": fields, "weights": weights}
    p.checkpoints.save(program)
    last.good = round_num
    write_round(p.writer, p.algorithm, program, fields, weights)


def _finish(p: FederatedParts, program: ProgramState, timing, last: _Last) -> dict:
    """Flush and plot, and mark the run finished; returns the held-out evaluation of the round it keeps.

    A run resumed only to finish (stopped after its last round's checkpoint) is evaluated here."""
    rounds = p.config.rounds
    if last.result is None:
        with timing.phase("evaluation"):
            last.result = p.evaluator.heldout(p.algorithm.model(program.server, program.average), rounds, last.good)
    p.writer.close(plot="round")
    breakdown = timing.record()
    p.writer.update({"finished": True, "time_breakdown": breakdown})
    logger.info("time: " + ", ".join(f"{k} {v:,.0f} s ({breakdown['share'][k]:.0%})"
                                     for k, v in breakdown["seconds"].items() if v >= 0.5))
    result, best = last.result, p.keep.best
    logger.info(f"held-out after round {rounds}: {summarize(result)}")
    if best is not None:
        logger.info(f"keeping round {best['round']} (best validation recall@3 {best['val_recall_at_3']:.4f}); "
                    f"its held-out recall@3 {best['heldout']['recall_at_3']:.4f}, "
                    f"perplexity {best['heldout']['perplexity']:.1f}")
        result = last.best if last.best is not None else {"pooled": best["heldout"]}
    if p.dp_run is not None:
        logger.info(p.dp_run.report(rounds))
    return result or {}

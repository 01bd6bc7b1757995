"""The federated loop's collaborators: run.json read once through RunRecord with one set of defaults, the
library's lines through logging (and a deprecated ``log=`` callable), the sampler's position, and the one
saved program state written and read back by the checkpoint manager."""

import io
import json
import logging
import os
import sys

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.log import lines_to, show_on_stdout
from keyboard_lm.models.run_dir import FEDERATED_DEFAULTS, RunRecord


def _write(run_dir, info) -> str:
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "run.json"), "w", encoding="utf-8") as f:
        json.dump(info, f)
    return str(run_dir)


def test_a_run_made_before_a_federated_field_existed_resumes_with_the_one_set_of_defaults(tmp_path):
    run = _write(tmp_path / "old", {"trainer": "federated", "federated": {"rounds": 5, "seed": 1, "dropout": 0.3},
                                    "data": {"split": {"heldout_fraction": 0.1, "seed": 0}}})
    record = RunRecord.read(run)
    assert record.federated == {"rounds": 5, "seed": 1, "dropout": 0.3}  # as written
    assert record.federated_recipe == {**FEDERATED_DEFAULTS, "rounds": 5, "seed": 1, "dropout": 0.3}
    assert record.finished is True and record.loop == {} and record.client_data == {}
    assert record.command == "train" and record.split == {"heldout_fraction": 0.1, "seed": 0}


def test_a_recorded_field_wins_over_its_default(tmp_path):
    run = _write(tmp_path / "new", {"trainer": "federated", "finished": False,
                                    "federated": {"validation_fraction": 0.1, "lr_decay": 0.5}})
    record = RunRecord.read(run)
    assert record.federated_recipe["validation_fraction"] == 0.1 and record.federated_recipe["lr_decay"] == 0.5
    assert record.finished is False


@pytest.mark.parametrize("content, message", [
    (None, "run.json is missing"),
    ("{not json", "corrupt"),
    ("[1, 2]", "not a keyboard_lm run"),
])
def test_an_unreadable_run_json_is_one_line_naming_it(tmp_path, content, message):
    os.makedirs(tmp_path / "run")
    if content is not None:
        (tmp_path / "run" / "run.json").write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        RunRecord.read(str(tmp_path / "run"))
    assert RunRecord.peek(str(tmp_path / "run")) is None


def test_a_log_callable_gets_the_lines_alone_and_can_stop_the_caller():
    got = []
    logger = logging.getLogger("keyboard_lm.federated.trainer")
    with lines_to(got.append):
        logger.info("round 1/2")
        logger.warning("warning: something")
    assert got == ["round 1/2", "warning: something"]

    class Stop(Exception):
        pass

    def stop(line):
        raise Stop(line)

    with pytest.raises(Stop, match="epoch 2/2"), lines_to(stop):
        logging.getLogger("keyboard_lm.training.centralized").info("epoch 2/2")


def test_the_command_line_shows_each_line_once_as_its_message(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    root = logging.getLogger("keyboard_lm")
    saved = root.handlers[:], root.level, root.propagate
    try:
        show_on_stdout()
        show_on_stdout()  # idempotent: main() may run many times in one process
        logging.getLogger("keyboard_lm.federated.run_setup").info("federated fedavg: 3,344 parameters")
        logging.getLogger("keyboard_lm.federated.run_setup").debug("not shown")
    finally:
        root.handlers[:], root.propagate = saved[0], saved[2]
        root.setLevel(saved[1])
    assert out.getvalue() == "federated fedavg: 3,344 parameters\n"


def test_a_cohort_depends_on_the_seed_and_round_alone():
    from keyboard_lm.federated.rounds import ClientSampler

    clients = [f"c{i}" for i in range(50)]
    sampler = ClientSampler(clients, 5, seed=3)
    later = ClientSampler(clients, 5, seed=3)  # a resumed run's sampler: nothing but the round is restored
    assert [later(r) for r in (4, 2)] == [sampler(4), sampler(2)]
    assert sampler(1) != sampler(2)


def test_the_program_state_a_round_saves_is_what_a_resume_reads_back(default_corpus, tmp_path):
    """Real TFF: the algorithm's init/apply on two clients, saved by the checkpoint manager, read back whole."""
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.data.preprocessing import encode_clients
    from keyboard_lm.federated.algorithm import FederatedAlgorithm
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.federated.round_checkpoints import ProgramState, RoundCheckpoints
    from keyboard_lm.federated.rounds import RoundData
    from keyboard_lm.federated.server_average import ServerAverage
    from keyboard_lm.federated.time_breakdown import TimeBreakdown
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.models.run_guard import prepare_run_dir
    from keyboard_lm.text.vocabulary import Vocabulary

    ids = default_corpus.client_ids[:40]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(ids), 200)
    data_config = ClientDataConfig(max_batches=1)
    encoded = encode_clients({c: default_corpus.clients[c] for c in ids}, vocab, data_config.max_seq_len)
    clients = [c for c in ids if len(encoded[c][0])][:2]
    config = FederatedConfig(rounds=1, clients_per_round=2, dropout=0.0, weight_average=0.9)
    algorithm = FederatedAlgorithm(ModelConfig("cifg", len(vocab), 8, 16), config,
                                   RoundData({c: encoded[c] for c in clients}, data_config, config.seed))
    initial = algorithm.init()
    state, metrics = algorithm.apply(initial, clients, 1, TimeBreakdown())
    assert metrics.clients == 2 and metrics.examples > 0 and np.isfinite(metrics.train_loss)
    # the weights read off the state on the driver are those TFF's own computation returns
    assert hasattr(state, "global_model_weights")
    for a, b in zip(algorithm.trainable(state), algorithm.process.get_model_weights(state).trainable, strict=True):
        np.testing.assert_array_equal(a, b)
    average = ServerAverage(config.weight_average, algorithm.trainable(initial))
    average.update(algorithm.trainable(state))

    run_dir = str(tmp_path / "run")
    guard = prepare_run_dir(run_dir, "train")
    try:
        checkpoints = RoundCheckpoints(run_dir, algorithm.checkpoint_manager(os.path.join(run_dir, "checkpoints"), 2),
                                       guard, config.weight_average)
        record = {"fields": {"rounds_done": 1, "best": None}, "weights": True}
        checkpoints.save(ProgramState(1, state, average, record))
        back = checkpoints.load_newest(initial)
    finally:
        guard.release()
    assert back.round == 1 and back.record["round"] == 1 and back.fields == record["fields"]
    for a, b in zip(algorithm.trainable(back.server), algorithm.trainable(state)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(back.average.weights, average.weights):
        np.testing.assert_allclose(a, b, rtol=1e-6)

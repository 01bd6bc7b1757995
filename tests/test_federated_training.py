"""Federated training end to end through the real CLI entry point and TFF."""

import csv
import json
import os

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.federated.aggregation import upload_bytes
from keyboard_lm.federated.config import FederatedConfig
from keyboard_lm.federated.rounds import sample_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.models.run_dir import load_run

SMALL = ["--no-phrases", "--units", "24", "--embedding-dim", "16", "--vocab-size", "600", "--clients-per-round", "4",
         "--max-batches", "3", "--seed", "3"]


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_checkpoints_are_due_by_rounds_by_time_and_at_what_must_be_resumable():
    from keyboard_lm.federated.config import LoopConfig
    from keyboard_lm.federated.trainer import checkpoint_due

    loop = LoopConfig()  # at least every 25 rounds, and once a minute
    due = lambda r, evaluated=False, improved=False, since=1.0: checkpoint_due(  # noqa: E731
        loop, r, 350, evaluated=evaluated, improved=improved, since_saved=since)
    assert not due(7) and due(25) and due(350)
    assert due(7, evaluated=True) and due(7, improved=True) and due(7, since=60.0) and not due(7, since=59.9)
    by_rounds = LoopConfig(checkpoint_every=1, checkpoint_seconds=0)
    assert all(checkpoint_due(by_rounds, r, 9, evaluated=False, improved=False, since_saved=0) for r in range(1, 10))
    assert not checkpoint_due(LoopConfig(checkpoint_seconds=0), 7, 9, evaluated=False, improved=False,
                              since_saved=1e6)
    with pytest.raises(ConfigError, match="checkpoint_seconds"):
        LoopConfig(checkpoint_seconds=-1)


def test_two_round_smoke_run_writes_a_complete_run_directory(tmp_path):
    out = str(tmp_path / "fed")
    assert main(["train", "--out", out, "--rounds", "2", "--checkpoint-seconds", "0", *SMALL]) == 0
    for name in ("run.json", "vocab.txt", "weights.npz", "metrics.csv", "metrics.png"):
        assert os.path.isfile(os.path.join(out, name)), name
    # Program states, and beside each the moving average of the global model (train's default) and the
    # record run.json gets for that round: round 2 only (the last, evaluated; round 1 is neither due by its
    # number nor, with --checkpoint-seconds 0, by time).
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["average_2.npz", "program_state_2",
                                                                     "record_2.json"]
    assert json.load(open(os.path.join(out, "run.json")))["loop"]["checkpoint_seconds"] == 0
    assert os.listdir(os.path.join(out, "tensorboard"))
    rows = _rows(out)
    assert [r["round"] for r in rows] == ["1", "2"]
    assert all(r["clients"] == "4" and r["non_finite_zeroed"] == "0" for r in rows)
    run = load_run(out)
    assert run.info["trainer"] == "federated" and run.info["rounds_done"] == 2
    assert np.isfinite(run.info["final_metrics"]["perplexity"])
    # Where the time went: every phase measured, the shares of a total that covers the run's wall time.
    t = run.info["time_breakdown"]
    assert set(t["seconds"]) == {"setup", "client_data", "tff_round", "server_average", "evaluation", "checkpoint",
                                 "other"}
    assert all(t["seconds"][k] > 0 for k in ("setup", "client_data", "tff_round", "evaluation", "checkpoint"))
    assert sum(t["share"].values()) == pytest.approx(1.0, abs=1e-3)
    assert t["total_seconds"] >= float(rows[-1]["elapsed_seconds"])  # setup comes on top of the rounds' time


def test_eval_accepts_a_federated_run(uninterrupted, capsys):
    out = uninterrupted
    capsys.readouterr()
    assert main(["eval", out, "--json"]) == 0
    pooled = json.loads(capsys.readouterr().out)["pooled"]
    assert np.isclose(pooled["perplexity"], load_run(out).info["final_metrics"]["perplexity"])


# Dropout masks are drawn unseeded inside TFF's runtime (run.json: "reproducible": false); without it a
# resumed run is bit-identical.
RESUMABLE = [*SMALL, "--server-optimizer", "adam", "--server-lr", "0.01", "--dropout", "0", "--eval-every", "1"]


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory):
    """Four rounds of RESUMABLE without a stop: what a stopped or killed and resumed run must end like."""
    from tests.conftest import build_once

    def build(root):
        assert main(["train", "--out", str(root / "run"), "--rounds", "4", *RESUMABLE]) == 0

    return str(build_once(tmp_path_factory, "federated_uninterrupted", build) / "run")


def test_resumed_run_ends_like_an_uninterrupted_run(uninterrupted, tmp_path):
    """Also the validation state: the kept round and the decayed client rate carry over a resume."""
    full, part = uninterrupted, str(tmp_path / "part")
    assert main(["train", "--out", part, "--rounds", "2", *RESUMABLE]) == 0  # stopped after round 2
    assert main(["train", "--out", part, "--resume", "--rounds", "4"]) == 0
    a, b = _rows(full), _rows(part)
    assert [r["round"] for r in b] == ["1", "2", "3", "4"]
    for key in ("train_loss", "loss", "recall_at_3", "val_recall_at_3"):
        assert float(a[-1][key]) == pytest.approx(float(b[-1][key]), rel=1e-4, abs=1e-6), key
    assert [(r["learning_rate"], r["best_round"]) for r in a] == [(r["learning_rate"], r["best_round"]) for r in b]
    assert load_run(full).info["best"]["round"] == load_run(part).info["best"]["round"]
    # The time breakdown carries over: the resumed run's totals include both sessions' setup.
    first = json.load(open(os.path.join(part, "checkpoints", "record_2.json")))["fields"]["time_breakdown"]
    both = load_run(part).info["time_breakdown"]
    assert all(both["seconds"][k] >= first["seconds"][k] for k in first["seconds"])
    assert both["seconds"]["tff_round"] > first["seconds"]["tff_round"]
    wa, wb = load_run(full).weights, load_run(part).weights
    for name in wa:
        np.testing.assert_allclose(wa[name], wb[name], rtol=1e-4, atol=1e-6)


def test_existing_run_is_not_overwritten_without_resume(tmp_path, capsys):
    out = str(tmp_path / "fed")
    assert main(["train", "--out", out, "--rounds", "1", *SMALL]) == 0
    assert main(["train", "--out", out, "--rounds", "1", *SMALL]) == 2
    assert "already holds a 'train' run (--resume continues it)" in capsys.readouterr().err


def test_divergence_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, capsys):
    out = str(tmp_path / "fed")
    # A server learning rate of 1e4 multiplies every averaged update: the loss explodes.
    code = main(["train", "--out", out, "--rounds", "6", *SMALL, "--server-lr", "10000"])
    err = capsys.readouterr().err
    assert code == 2 and "training diverged at round" in err
    last_good = int(err.split("last good checkpoint (round ")[1].split(")")[0])
    versions = sorted(int(n.rsplit("_", 1)[1]) for n in os.listdir(os.path.join(out, "checkpoints"))
                      if n.startswith("program_state_"))
    assert (versions[-1] if versions else 0) == last_good
    run = load_run(out)
    assert run.info["rounds_done"] == last_good
    assert all(np.isfinite(w).all() for w in run.weights.values())


@pytest.mark.parametrize("algorithm,extra", [
    ("fedsgd", []),
    ("fedatt", ["--fedatt-eps", "1.0", "--fedatt-p", "2"]),
    ("fedavg", ["--server-optimizer", "nesterov"]),
    ("fedavg", ["--compression", "--embedding-dim", "48"]),  # a 600 x 48 embedding is large enough to quantize
    ("fedavg", ["--client-clipnorm", "1.0"]),
])
def test_each_algorithm_runs_a_round(tmp_path, algorithm, extra):
    out = str(tmp_path / algorithm)
    assert main(["train", "--out", out, "--rounds", "1", "--algorithm", algorithm, *SMALL, *extra]) == 0
    run = load_run(out)
    assert run.info["federated"]["algorithm"] == algorithm
    assert run.info["federated"]["client_clipnorm"] == (1.0 if "--client-clipnorm" in extra else None)
    if "--compression" in extra:
        assert run.info["upload_bytes_per_client"] < 0.6 * run.info["upload_bytes_float32"]


def test_client_sampling_is_uniform_seeded_and_per_round():
    ids = [f"c{i}" for i in range(50)]
    assert sample_clients(ids, 10, 1, 5) == sample_clients(ids, 10, 1, 5)
    assert sample_clients(ids, 10, 1, 5) != sample_clients(ids, 10, 1, 6)
    assert len(set(sample_clients(ids, 10, 1, 5))) == 10
    assert sample_clients(ids[:3], 10, 1, 1) == ids[:3]


def test_upload_bytes_of_the_paper_cifg():
    shapes = [(10000, 96), (96 + 96, 3 * 670), (3 * 670,), (670, 96)]
    sent, raw = upload_bytes(shapes, compression=True)
    assert raw == 1_412_250 * 4
    # The three large tensors go as 8-bit codes plus min/max; the bias stays float32.
    assert sent == (960_000 + 8) + (385_920 + 8) + 2010 * 4 + (64_320 + 8)


@pytest.mark.parametrize("kwargs,match", [
    ({"algorithm": "fedprox"}, "unknown algorithm"),
    ({"server_optimizer": "rmsprop"}, "unknown server optimizer"),
    ({"client_lr": 0}, "client_lr"),
    ({"client_clipnorm": 0.0}, "client_clipnorm"),
    ({"clients_per_round": 0}, "clients_per_round"),
    ({"algorithm": "fedatt", "compression": True}, "not combined with FedAtt"),
])
def test_federated_config_rejects_bad_settings(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        FederatedConfig(**kwargs)


@pytest.mark.shakespeare
def test_federated_round_on_shakespeare_roles(shakespeare_path, tmp_path):
    out = str(tmp_path / "sh")
    assert main(["train", "--out", out, "--data", shakespeare_path, "--format", "shakespeare",
                 "--rounds", "1", *SMALL]) == 0
    assert load_run(out).info["data"]["train_clients"] == 269


@pytest.mark.heavy
def test_run_killed_mid_training_resumes_to_the_same_result(uninterrupted, tmp_path):
    """A real kill (SIGKILL of the training process) at an arbitrary round, then --resume."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    full, killed = uninterrupted, str(tmp_path / "killed")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen([sys.executable, "-m", "keyboard_lm.cli", "train", "--out", killed, "--rounds", "4",
                             *RESUMABLE],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    marker = os.path.join(killed, "checkpoints", "program_state_2")
    deadline = time.time() + 400
    while not os.path.exists(marker) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the trainer and its TFF worker
    proc.wait()
    assert os.path.exists(marker), "training never reached round 2"
    assert main(["train", "--out", killed, "--resume", "--no-phrases", "--rounds", "4"]) == 0
    a, b = _rows(full), _rows(killed)
    assert [r["round"] for r in b] == ["1", "2", "3", "4"]
    assert float(a[-1]["recall_at_3"]) == pytest.approx(float(b[-1]["recall_at_3"]), rel=1e-4, abs=1e-6)
    assert float(a[-1]["loss"]) == pytest.approx(float(b[-1]["loss"]), rel=1e-4)


def test_a_failing_client_is_skipped_and_counted(default_corpus):
    from keyboard_lm.data.preprocessing import encode_clients
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.federated.client_data import example_client_data
    from keyboard_lm.federated.rounds import round_datasets
    from keyboard_lm.text import Vocabulary

    ids = default_corpus.client_ids[:3]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(ids), 100)
    examples = example_client_data(encode_clients({c: default_corpus.clients[c] for c in ids}, vocab, 10))
    messages = []
    datasets, failed = round_datasets(examples, [ids[0], "client-that-left", ids[1]],
                                      ClientDataConfig(max_seq_len=10), 0, 1, messages.append)
    assert len(datasets) == 2 and failed == 1
    assert "client-that-left" in messages[0]


def test_quantization_aware_federated_run_exports_exactly(tmp_path):
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.evaluation import log_softmax
    from keyboard_lm.inference.model_file import ModelFile
    from keyboard_lm.models.run_dir import build_loaded_model

    out = str(tmp_path / "fed")
    assert main(["train", "--out", out, "--rounds", "2", "--quantization-aware", *SMALL]) == 0
    run = load_run(out)
    assert run.model_config.quantization == "dynamic-range"
    card = export_run(out, str(tmp_path / "fed.tflite"), budget_bytes=None)
    # The server model of a quantization-aware run is exported as it was evaluated.
    assert card["quantization"]["mode"] == "dynamic-range" and card["quantization"]["exact"]
    x = np.array([[1, 8, 30, 5, 12]], np.int32)
    logp = log_softmax(build_loaded_model(run)(x))[0]
    np.testing.assert_allclose(ModelFile.load(str(tmp_path / "fed.tflite")).predict_log_probs(x)[0], logp, atol=1e-4)

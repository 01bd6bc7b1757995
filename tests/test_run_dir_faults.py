"""Run directories under faults: a damaged checkpoint, a second run on the same directory, a run stopped after
its last checkpoint, a full disk, and --overwrite of a directory whose files are not all the run's."""

import csv
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.models.run_dir import load_run

# The flags of tests/test_run_directories.py's tiny runs, so a test process builds their TFF process once.
TINY_CENTRAL = ["--centralized", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--optimizer", "adam",
                "--lr", "0.01", "--ngram-teacher", "0", "--batch-size", "64"]


def _rounds(run_dir, key="round"):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return [int(r[key]) for r in csv.DictReader(f)]


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


class _Stop(Exception):
    """Where a kill would stop the process: raised from the run's own per-round or per-epoch callback."""


@pytest.fixture(scope="module")
def stopped_fed(tmp_path_factory):
    """A 2-round federated run stopped after round 2's checkpoint and run.json, before its end (plot,
    ``finished``); beside it, run.json and weights.npz as round 1 left them."""
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.federated.config import LoopConfig, default_federated
    from keyboard_lm.federated.run_start import RunOptions
    from keyboard_lm.federated.trainer import train_federated
    from keyboard_lm.models.config import ModelConfig

    root = tmp_path_factory.mktemp("fed")
    out = str(root / "run")

    def on_round(round_num, seconds):
        if round_num == 1:
            for name in ("run.json", "weights.npz"):
                shutil.copy(os.path.join(out, name), root / f"round1-{name}")
        else:
            raise _Stop

    with pytest.raises(_Stop):
        train_federated(load_default(), out, ModelConfig(embedding_dim=8, units=16),
                        dataclasses.replace(default_federated(), rounds=2, clients_per_round=3),
                        data_config=ClientDataConfig(max_batches=2), loop=LoopConfig(eval_every=1),
                        options=RunOptions(vocab_size=300, data_source={"path": None, "format": "default"},
                                           on_round=on_round, log=lambda line: None))
    return root


def _copy(src, dst) -> str:
    shutil.copytree(src, dst)
    return str(dst)


def test_resume_finishes_a_federated_run_stopped_between_its_last_checkpoint_and_run_json(stopped_fed, tmp_path,
                                                                                            capsys):
    out = _copy(stopped_fed / "run", tmp_path / "run")
    after_round_2 = load_run(out)
    assert after_round_2.info["rounds_done"] == 2
    for name in ("run.json", "weights.npz"):  # as round 1 left them: the checkpoint of round 2 is ahead
        shutil.copy(stopped_fed / f"round1-{name}", os.path.join(out, name))
    assert main(["train", "--out", out, "--resume", "--no-phrases"]) == 0
    assert "stopped after its last round's checkpoint (round 2)" in capsys.readouterr().out
    run = load_run(out)
    assert run.info["finished"] is True and run.info["rounds_done"] == 2
    for field in ("best", "final_metrics"):  # what the uninterrupted end wrote
        assert run.info[field] == after_round_2.info[field] and run.info[field] is not None
    for name, w in after_round_2.weights.items():
        np.testing.assert_array_equal(run.weights[name], w)
    assert _rounds(out) == [1, 2] and os.path.isfile(os.path.join(out, "metrics.png"))
    assert main(["export", out, "--out", str(tmp_path / "m.tflite")]) == 0
    # Finished now: a further --resume without more rounds is refused.
    assert main(["train", "--out", out, "--resume"]) == 2
    assert "has done 2 rounds already" in _one_line(capsys.readouterr().err)


def test_resume_skips_a_truncated_checkpoint_for_the_newest_intact_one(stopped_fed, tmp_path, capsys):
    out = _copy(stopped_fed / "run", tmp_path / "run")
    data = os.path.join(out, "checkpoints", "program_state_2", "variables", "variables.data-00000-of-00001")
    os.truncate(data, os.path.getsize(data) // 2)
    assert main(["train", "--out", out, "--resume", "--no-phrases"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "damaged" in line]
    assert len(said) == 1 and "round 2" in said[0] and "resuming from round 1's" in said[0], said
    assert _rounds(out) == [1, 2]  # round 2 trained again, its first row dropped
    assert load_run(out).info["rounds_done"] == 2 and load_run(out).info["finished"] is True


@pytest.mark.heavy
def test_a_full_disk_during_resume_is_one_line_and_run_json_stays_at_its_checkpoint(stopped_fed, tmp_path):
    """A real write error: the resumed process may not grow a file past a limit (RLIMIT_FSIZE; Python ignores
    SIGXFSZ, so the write fails with EFBIG as on a full disk) that round 3's program state exceeds."""
    out = _copy(stopped_fed / "run", tmp_path / "run")
    checkpoints = os.path.join(out, "checkpoints")
    small = max(os.path.getsize(p) for p in (os.path.join(out, "weights.npz"), os.path.join(out, "run.json"),
                                             os.path.join(out, "manifest.json"), os.path.join(checkpoints,
                                                                                              "average_2.npz"))
                if os.path.exists(p))  # what the resume writes besides round 3's program state
    state = os.path.join(checkpoints, "program_state_2")
    big = max(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(state) for f in fs)
    limit = small + 1024
    assert limit < big
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (%d, %d)); "
            "from keyboard_lm.cli import main; sys.exit(main(sys.argv[1:]))" % (limit, limit))
    from tests.conftest import REPO

    proc = subprocess.run([sys.executable, "-c", code, "train", "--out", out, "--resume", "--rounds", "3"],
                          cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = _one_line(proc.stderr)
    assert "program_state_3" in line and "File too large" in line and "kept as of round 2" in line
    info = load_run(out).info
    assert info["rounds_done"] == 2  # run.json names no round without its checkpoint
    assert sorted(n for n in os.listdir(checkpoints) if n.startswith("program_state")) == [
        "program_state_1", "program_state_2"]


@pytest.mark.heavy
def test_a_second_run_on_a_held_directory_is_refused_at_once(tmp_path, capsys):
    """A real second process: `train` on a directory another `train` holds is refused in one line naming it,
    without a row written; once the holder is killed (kill -9), the directory is free and resumes whole."""
    from tests.conftest import REPO

    out = str(tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-m", "keyboard_lm.cli", "train", "--out", out, *TINY_CENTRAL,
                               "--epochs", "1000"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), start_new_session=True)
    try:
        state = os.path.join(out, "checkpoints", "state-1.json")  # state.json exists from epoch 0
        deadline = time.time() + 600
        while not os.path.exists(state) and holder.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(state), "the first run never finished an epoch"
        capsys.readouterr()
        for argv in (["--resume", "--epochs", "3"], [*TINY_CENTRAL, "--overwrite", "--epochs", "1"]):
            assert main(["train", "--out", out, *argv]) == 2
            line = _one_line(capsys.readouterr().err)
            assert f"{out}: in use by another keyboard-lm run (pid {holder.pid})" in line, line
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    epochs = _rounds(out, "epoch")
    assert epochs == list(range(1, len(epochs) + 1))  # the refused runs wrote nothing
    with open(os.path.join(out, "checkpoints", "state.json"), encoding="utf-8") as f:
        done = json.load(f)["epoch"]
    assert main(["train", "--out", out, "--resume", "--epochs", str(done + 1)]) == 0
    assert _rounds(out, "epoch") == list(range(1, done + 2))


def test_centralized_resume_skips_a_damaged_checkpoint_and_finishes_a_stopped_run(default_corpus, tmp_path,
                                                                                   capsys):
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.training.centralized import train_centralized
    from keyboard_lm.models.config import ModelConfig
    from keyboard_lm.training.config import CentralizedConfig, TrainOptions

    out = str(tmp_path / "run")

    def log(line):
        if line.startswith("epoch 1/"):
            shutil.copy(os.path.join(out, "run.json"), tmp_path / "round1-run.json")
        elif line.startswith("epoch 2/"):
            raise _Stop  # after epoch 2's checkpoint and run.json, before the run's end

    config = CentralizedConfig(epochs=2, optimizer="adam", learning_rate=0.01, ngram_teacher=0.0, batch_size=64,
                               dropout=0.0, weight_drop=0.0, validation_fraction=0.0)
    with pytest.raises(_Stop):
        train_centralized(default_corpus, out, ModelConfig(embedding_dim=8, units=16), config=config,
                          split=SplitConfig(), options=TrainOptions(vocab_size=300, log=log,
                                                                    data_source={"path": None, "format": "default"}))
    stopped = str(tmp_path / "stopped")
    shutil.copytree(out, stopped)
    shutil.copy(tmp_path / "round1-run.json", os.path.join(stopped, "run.json"))  # run.json behind epoch 2
    assert main(["train", "--out", stopped, "--resume"]) == 0
    assert "stopped after its last epoch's checkpoint (epoch 2)" in capsys.readouterr().out
    run = load_run(stopped)
    assert run.info["finished"] is True and run.info["epochs_done"] == 2 and run.info["final_metrics"]
    assert _rounds(stopped, "epoch") == [1, 2]

    data = os.path.join(out, "checkpoints", "ckpt-2.data-00000-of-00001")
    os.truncate(data, os.path.getsize(data) // 2)
    assert main(["train", "--out", out, "--resume"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "damaged" in line]
    assert len(said) == 1 and "epoch 2" in said[0] and "resuming from epoch 1's" in said[0], said
    assert _rounds(out, "epoch") == [1, 2] and load_run(out).info["finished"] is True


def test_overwrite_deletes_only_what_the_runs_manifest_lists(tmp_path, capsys):
    # A run.json keyboard_lm did not write, with the user's files where a run keeps checkpoints and events.
    foreign = tmp_path / "foreign"
    for name in ("tensorboard/mine.txt", "checkpoints/mine.txt", "run.json"):
        (foreign / name).parent.mkdir(parents=True, exist_ok=True)
        (foreign / name).write_text('{"trainer": "mine"}' if name == "run.json" else "keep me", encoding="utf-8")
    before = sorted(str(p.relative_to(foreign)) for p in foreign.rglob("*"))
    capsys.readouterr()
    assert main(["train", "--out", str(foreign), "--overwrite", *TINY_CENTRAL, "--epochs", "1"]) == 2
    assert "run.json is not keyboard_lm's" in _one_line(capsys.readouterr().err)
    assert sorted(str(p.relative_to(foreign)) for p in foreign.rglob("*")) == before

    # A run of ours: --overwrite removes what it wrote and keeps what the user put beside and inside it.
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), *TINY_CENTRAL, "--epochs", "2"]) == 0
    (out / "checkpoints" / "notes.txt").write_text("keep me", encoding="utf-8")
    (out / "tensorboard").mkdir()
    (out / "tensorboard" / "notes.txt").write_text("keep me", encoding="utf-8")
    forged = tmp_path / "forged"
    shutil.copytree(out, forged)
    assert main(["train", "--out", str(out), "--overwrite", *TINY_CENTRAL, "--epochs", "1"]) == 0
    assert "kept 2 file(s) the replaced run did not write" in capsys.readouterr().out
    assert (out / "checkpoints" / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert (out / "tensorboard" / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert not (out / "checkpoints" / "ckpt-2.index").exists() and load_run(str(out)).info["epochs_done"] == 1

    # Without the run's own manifest (a run made before manifests, or a manifest of another run): refused.
    manifest = json.loads((forged / "manifest.json").read_text(encoding="utf-8"))
    for doc, why in ((None, "no manifest.json"), ({**manifest, "run_id": "0" * 32}, "belongs to another run"),
                     ({**manifest, "format": "other"}, "manifest.json is not keyboard_lm's")):
        if doc is None:
            (forged / "manifest.json").unlink()
        else:
            (forged / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
        assert main(["train", "--out", str(forged), "--overwrite", *TINY_CENTRAL, "--epochs", "1"]) == 2
        assert why in _one_line(capsys.readouterr().err)
        assert (forged / "checkpoints" / "ckpt-2.index").exists()


def test_resume_of_a_run_still_in_its_first_epoch_is_refused_as_in_use(tmp_path, capsys):
    """Before its first epoch ends a run has its lock but no run.json: a --resume then is refused as "in use",
    naming the holder, not as a flag the trainer it cannot yet read would refuse."""
    from keyboard_lm.models.run_guard import lock_run_dir

    out = tmp_path / "run"
    out.mkdir()
    fd = lock_run_dir(str(out))  # held as a starting run holds it
    try:
        assert main(["train", "--out", str(out), "--resume", "--epochs", "3"]) == 2
        assert f"{out}: in use by another keyboard-lm run (pid {os.getpid()})" in _one_line(capsys.readouterr().err)
    finally:
        os.close(fd)
    assert main(["train", "--out", str(out), "--resume", "--epochs", "3"]) == 2  # free now: no run to resume
    assert "in use" not in _one_line(capsys.readouterr().err)

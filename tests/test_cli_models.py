"""train --centralized, eval and baseline ngram through the real CLI entry point."""

import json
import os
import shutil

import numpy as np
import pytest

from keyboard_lm.cli import main
from keyboard_lm.models.run_dir import load_run

SMALL = ["--units", "32", "--embedding-dim", "16", "--vocab-size", "800", "--epochs", "2", "--optimizer", "sgd",
         "--lr", "1.0", "--batch-size", "32"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("runs") / "cifg")
    assert main(["train", "--centralized", "--model", "cifg", "--out", out, *SMALL]) == 0
    return out


def test_centralized_run_directory_is_complete(run_dir):
    for name in ("run.json", "vocab.txt", "weights.npz", "metrics.csv"):
        assert os.path.isfile(os.path.join(run_dir, name)), name
    run = load_run(run_dir)
    assert run.model_config.vocab_size == len(run.vocab) == 800
    assert run.info["trainer"] == "centralized" and run.info["epochs_done"] == 2
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) == 3 and lines[0].startswith("epoch,train_loss")


def test_centralized_training_learns(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    first_loss, last_loss = float(rows[0][1]), float(rows[-1][1])
    assert last_loss < first_loss
    final = load_run(run_dir).info["final_metrics"]
    assert final["recall_at_3"] > 0.10  # a unigram "i, you, the" strip would be lower on this corpus


def test_eval_reproduces_training_metrics(run_dir, capsys):
    assert main(["eval", run_dir, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    final = load_run(run_dir).info["final_metrics"]
    assert np.isclose(result["pooled"]["recall_at_3"], final["recall_at_3"])
    assert np.isclose(result["pooled"]["perplexity"], final["perplexity"], rtol=1e-5)
    assert len(result["clients"]) == 184


def test_eval_intervals_over_held_out_users(run_dir, capsys):
    assert main(["eval", run_dir, "--intervals", "200"]) == 0
    out = capsys.readouterr().out
    assert "95% intervals over held-out users (200 bootstrap draws): recall@1 [" in out
    assert "no EOS/OOV [" in out and "perplexity " in out and "(no EOS " in out
    assert main(["eval", run_dir, "--json", "--intervals", "200"]) == 0
    result = json.loads(capsys.readouterr().out)
    lo, hi = result["intervals"]["recall_at_3"]
    assert lo <= result["pooled"]["recall_at_3"] <= hi
    assert main(["eval", run_dir, "--intervals", "50"]) == 2  # too few draws for a 95% interval
    assert "--intervals 50: at least 100" in capsys.readouterr().err


def test_eval_rejects_vocabulary_mismatch(run_dir, tmp_path, capsys):
    bad = str(tmp_path / "bad")
    shutil.copytree(run_dir, bad)
    with open(os.path.join(bad, "vocab.txt"), "a", encoding="utf-8") as f:
        f.write("extra\n")
    assert main(["eval", bad]) == 2
    assert "does not match the vocabulary" in capsys.readouterr().err


def test_eval_rejects_checkpoint_of_other_model_type(run_dir, tmp_path, capsys):
    bad = str(tmp_path / "other")
    shutil.copytree(run_dir, bad)
    path = os.path.join(bad, "run.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc["model"]["model_type"] = "gru"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    assert main(["eval", bad]) == 2
    assert "another model type" in capsys.readouterr().err


@pytest.mark.parametrize("damage,match", [
    ("missing_weights", "weights.npz is missing"),
    ("corrupt_weights", "corrupt"),
    ("corrupt_run", "corrupt"),
    ("not_a_run", "not a run directory"),
])
def test_eval_rejects_damaged_run_directories(run_dir, tmp_path, capsys, damage, match):
    bad = str(tmp_path / damage)
    shutil.copytree(run_dir, bad)
    if damage == "missing_weights":
        os.remove(os.path.join(bad, "weights.npz"))
    elif damage == "corrupt_weights":
        with open(os.path.join(bad, "weights.npz"), "wb") as f:
            f.write(b"PK\x03\x04garbage")
    elif damage == "corrupt_run":
        with open(os.path.join(bad, "run.json"), "w", encoding="utf-8") as f:
            f.write("{not json")
    else:
        os.remove(os.path.join(bad, "run.json"))
    assert main(["eval", bad]) == 2
    assert match in capsys.readouterr().err


def test_unknown_model_name_is_a_clear_error(tmp_path, capsys):
    assert main(["train", "--centralized", "--model", "transformer", "--out", str(tmp_path / "x")]) == 2
    assert "unknown model type 'transformer'" in capsys.readouterr().err


def test_si_cifg_trains_with_plain_sgd(tmp_path):
    out = str(tmp_path / "si")
    assert main(["train", "--centralized", "--model", "si-cifg", "--out", out, *SMALL]) == 0
    assert load_run(out).info["final_metrics"]["recall_at_3"] > 0.10


def test_baseline_ngram_cli(capsys):
    assert main(["baseline", "ngram", "--order", "3", "--vocab-size", "800", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 0 < result["pooled"]["recall_at_3"] <= 1
    assert result["pooled"]["num_events"] > 1000


@pytest.mark.shakespeare
def test_eval_on_shakespeare_with_all_clients(run_dir, shakespeare_path, capsys):
    # A run of the embedded corpus, evaluated on every role of another corpus (which eval allows when told).
    capsys.readouterr()
    assert main(["eval", run_dir, "--data", shakespeare_path, "--format", "shakespeare", "--clients", "all",
                 "--allow-other-data", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["clients"]) == 299 and result["pooled"]["num_events"] > 100_000

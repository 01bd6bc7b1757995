"""Commands never delete or overwrite what they did not create; resume, eval and seeds do what they say."""

import json
import os

import pytest

from keyboard_lm.cli import main
from keyboard_lm.models.run_dir import load_run

TINY_CENTRAL = ["--centralized", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--epochs", "1",
                "--optimizer", "adam", "--lr", "0.01", "--ngram-teacher", "0"]
TINY_FED = ["--no-phrases", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--clients-per-round", "3",
            "--max-batches", "2"]


def _jsonl(path, users, lines_per_user=4, tag=""):
    with open(path, "w", encoding="utf-8") as f:
        for u in range(users):
            for i in range(lines_per_user):
                f.write(json.dumps({"user": f"user{u}", "text": f"how are you {tag} doing today friend number {i}"})
                        + "\n")
    return str(path)


def test_demo_refuses_a_directory_it_did_not_create(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.txt").write_text("years of work", encoding="utf-8")
    assert main(["demo", "--out", str(out), "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert "refusing to write into it" in err and "--overwrite" in err
    assert (out / "thesis.txt").read_text(encoding="utf-8") == "years of work"
    assert sorted(os.listdir(out)) == ["thesis.txt"]


def test_centralized_training_refuses_to_overwrite_a_federated_run(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "--out", out, "--rounds", "1", *TINY_FED]) == 0
    before = open(os.path.join(out, "metrics.csv"), encoding="utf-8").read()
    assert main(["train", "--out", out, *TINY_CENTRAL]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds a 'train' run" in err[0] and "--overwrite" in err[0]
    assert load_run(out).info["trainer"] == "federated"
    assert open(os.path.join(out, "metrics.csv"), encoding="utf-8").read() == before


def test_overwrite_replaces_only_the_runs_own_files(tmp_path):
    out = tmp_path / "run"
    small = ["--data", _jsonl(tmp_path / "a.jsonl", users=12), "--format", "jsonl", *TINY_CENTRAL]  # files, not text
    assert main(["train", "--out", str(out), *small]) == 0
    (out / "notes.md").write_text("keep me", encoding="utf-8")
    assert main(["train", "--out", str(out), *small]) == 2  # same command: still refused
    assert main(["train", "--out", str(out), "--overwrite", *small, "--epochs", "2"]) == 0
    assert load_run(str(out)).info["epochs_done"] == 2
    assert (out / "notes.md").read_text(encoding="utf-8") == "keep me"


def test_resume_without_rounds_continues_to_the_runs_own_count(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--rounds", "3", "--checkpoint-every", "2", *TINY_FED]) == 0
    # As if killed after round 2's checkpoint: drop round 3's program state.
    import shutil

    shutil.rmtree(out / "checkpoints" / "program_state_3")
    capsys.readouterr()
    assert main(["train", "--out", str(out), "--resume"]) == 0
    assert "resuming after round 2, up to round 3" in capsys.readouterr().out
    assert load_run(str(out)).info["rounds_done"] == 3
    assert main(["train", "--out", str(out), "--resume", "--rounds", "3"]) == 2
    assert "has done 3 rounds already; give --rounds above 3" in capsys.readouterr().err


def test_eval_defaults_to_the_runs_corpus_and_refuses_another(tmp_path, capsys):
    data = _jsonl(tmp_path / "a.jsonl", users=12)
    other = _jsonl(tmp_path / "b.jsonl", users=12, tag="really")
    out = str(tmp_path / "run")
    assert main(["train", "--out", out, "--data", data, "--format", "jsonl", *TINY_CENTRAL]) == 0
    info = load_run(out).info
    assert info["data"]["source"] == {"path": os.path.abspath(data), "format": "jsonl"}
    assert len(info["data"]["fingerprint"]) == 64
    capsys.readouterr()
    assert main(["eval", out, "--json"]) == 0  # no --data: the run's own corpus
    assert json.loads(capsys.readouterr().out)["pooled"]["num_events"] > 0
    assert main(["eval", out, "--data", other, "--format", "jsonl"]) == 2
    assert "not the corpus" in capsys.readouterr().err
    assert main(["eval", out, "--data", other, "--format", "jsonl", "--allow-other-data"]) == 0


def test_split_seed_is_apart_from_the_training_seed(tmp_path, default_corpus):
    """The training seed leaves the held-out clients where the split's own seed puts them; --split-seed moves them."""
    from keyboard_lm.data.split import SplitConfig, split_clients

    runs = {}
    for name, extra in {"b": ["--seed", "2"], "c": ["--split-seed", "7"]}.items():
        out = str(tmp_path / name)
        assert main(["train", "--out", out, "--rounds", "1", *TINY_FED, *extra]) == 0
        runs[name] = load_run(out).info
    default_split, split_7 = (split_clients(default_corpus.client_ids, SplitConfig(seed=s))[1][:5] for s in (0, 7))
    assert SplitConfig().seed == 0 and default_split != split_7
    assert runs["b"]["federated"]["seed"] == 2 and runs["b"]["data"]["split"]["seed"] == 0
    assert runs["b"]["data"]["heldout_ids_head"] == default_split  # not moved by --seed 2
    assert runs["c"]["data"]["split"]["seed"] == 7 and runs["c"]["data"]["heldout_ids_head"] == split_7


@pytest.mark.parametrize("argv,expected", [
    (["predict", "{model}", "hello", "-k", "0"], "-k: must be >= 1"),
    (["train", "--out", "{tmp}/r", "--rounds", "-3"], "--rounds: must be >= 1"),
    (["train", "--out", "{tmp}/r", "--clients-per-round", "100000", "--rounds", "1"],
     "--clients-per-round 100000 is more than the"),
    (["export", "{tmp}/nowhere", "--out", "{tmp}/m.tflite", "--budget-bytes", "-5"], "--budget-bytes: must be >= 0"),
    (["train", "--out", "{tmp}/r", "--model", "transformer"], "unknown model type 'transformer'"),
    (["data", "stats", "--format", "csv"], "invalid choice: 'csv'"),
    (["train", "--out", "{tmp}/r", "--clip", "-1"], "clip norm must be a positive number"),
    (["train", "--out", "{tmp}/r", "--clip", "sometimes"], "clip must be 'adaptive', 'none' or a positive"),
    (["eval", "{tmp}/no-such-run"], "not a run directory"),
    (["bench", "{tmp}/missing.tflite"], "cannot read the model file"),
    (["baseline", "ngram", "--order", "0"], "--order: must be >= 1"),
    (["demo", "--rounds", "0"], "--rounds: must be >= 1"),
    (["train", "--out", "{tmp}/r", "--centralized", "--optimizer", "lbfgs"], "invalid choice: 'lbfgs'"),
    (["export", "{tmp}/nowhere", "--out", "{tmp}/m.tflite"], "not a run directory"),
])
def test_bad_values_give_one_line_and_no_traceback(tmp_path, capsys, small_tflite, argv, expected):
    argv = [a.format(tmp=tmp_path, model=small_tflite) for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse exits; main() returns for everything else
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], err

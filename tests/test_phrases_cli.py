"""`keyboard-lm phrases` learns a run's table federatedly; `export` ships it inside the 1.4 MiB file; a predictor uses it."""

from __future__ import annotations

import json
import os

import pytest

from keyboard_lm.cli import main

pytestmark = pytest.mark.heavy


@pytest.fixture(scope="module")
def mail_like_run(tmp_path_factory, default_corpus):
    """A small run on 60 users of the embedded corpus (real text), with validation users for the gate."""
    work = tmp_path_factory.mktemp("phrases")
    data = work / "users.jsonl"
    ids = default_corpus.client_ids
    with open(data, "w", encoding="utf-8") as f:
        for i in range(60):  # 60 users, each with 25 of the corpus' conversations: phrases recur across users
            for c in ids[(i * 11) % len(ids):][:25]:
                for line in default_corpus.clients[c]:
                    f.write(json.dumps({"user": f"u{i}", "text": line}) + "\n")
    run = str(work / "run")
    assert main(["train", "--centralized", "--data", str(data), "--format", "jsonl", "--out", run, "--units", "32",
                 "--embedding-dim", "16", "--vocab-size", "600", "--epochs", "2", "--batch-size", "32",
                 "--optimizer", "adam", "--lr", "0.01", "--validation-fraction", "0.2", "--dropout", "0",
                 "--weight-drop", "0", "--weight-average", "0", "--ngram-teacher", "0"]) == 0
    return run, str(data)


def test_phrases_learns_a_table_that_export_ships_and_the_predictor_uses(mail_like_run, tmp_path, capsys):
    from keyboard_lm.inference.predictor import Predictor

    run, data = mail_like_run
    assert main(["phrases", run, "--k-anonymity", "2"]) == 0
    fitted = json.load(open(os.path.join(run, "phrase_gate.json")))
    assert fitted["discovery"]["k_anonymity"] == 2 and fitted["table"]["contexts"] > 0
    assert fitted["vocab_size"] == 600  # a small model leaves room: nothing pruned
    record = json.load(open(os.path.join(run, "run.json")))["phrases"]  # what was learnt, in the run's record
    assert record["learn"] and record["k_anonymity"] == 2 and record["contexts"] == fitted["table"]["contexts"]
    out = str(tmp_path / "m.tflite")
    assert main(["export", run, "--out", out]) == 0
    assert "phrase_table" in capsys.readouterr().out
    p = Predictor.load(out)
    assert len(p.ranker.phrases) == fitted["table"]["contexts"]
    # eval --stack: the file as a keyboard runs it, against the 5-gram, on the held-out users.
    capsys.readouterr()
    assert main(["eval", out, "--data", data, "--format", "jsonl", "--stack", "--json", "--intervals", "200"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert list(rows) == ["5-gram", "5-gram + history", "model", "model + phrase table",
                          "model + phrase table + history"]
    assert rows["model + phrase table + history"]["vs"] == "5-gram + history"
    assert len({r["num_events"] for r in rows.values()}) == 1
    assert main(["eval", run, "--stack"]) == 2  # a run directory: export it first
    # A second cut reuses the release (no second discovery) and prunes the rarest words to fit a small budget.
    size = os.path.getsize(out)
    assert main(["phrases", run, "--k-anonymity", "2", "--budget-bytes", str(size - 2000)]) == 0
    assert "reusing the counts released earlier" in capsys.readouterr().out
    fitted = json.load(open(os.path.join(run, "phrase_gate.json")))
    assert fitted["vocab_size"] < 600
    assert main(["export", run, "--out", out, "--budget-bytes", str(size - 2000)]) == 0
    assert os.path.getsize(out) <= size - 2000 and len(Predictor.load(out).vocab) == fitted["vocab_size"]


def test_phrases_refuses_a_run_of_another_corpus_in_one_line(mail_like_run, tmp_path, capsys):
    run, _ = mail_like_run
    other = tmp_path / "other.jsonl"
    other.write_text('{"user": "a", "text": "hello there"}\n{"user": "b", "text": "see you soon"}\n')
    assert main(["phrases", run, "--data", str(other), "--format", "jsonl"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not the corpus" in err[0]


def test_a_run_under_differential_privacy_gets_no_table_outside_its_account(mail_like_run, tmp_path, capsys):
    import shutil

    run, _ = mail_like_run
    assert main(["phrases", run, "--k-anonymity", "2"]) == 0
    dp_run = str(tmp_path / "dp_run")
    shutil.copytree(run, dp_run)
    info = json.load(open(os.path.join(dp_run, "run.json")))
    # The record a --dp run writes (its account covers the model's training alone).
    info["differential_privacy"] = {"mechanism": "ftrl", "noise_multiplier": 1.0, "epsilon": 10.0, "delta": 1e-10}
    with open(os.path.join(dp_run, "run.json"), "w", encoding="utf-8") as f:
        json.dump(info, f)
    capsys.readouterr()
    assert main(["phrases", dp_run]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "differential privacy" in err[0] and dp_run in err[0]
    out = str(tmp_path / "dp.tflite")
    assert main(["export", dp_run, "--out", out]) == 2  # a table lying in the directory is not shipped
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--no-phrases" in err[0] and not os.path.exists(out)
    assert main(["export", dp_run, "--out", out, "--no-phrases"]) == 0
    card = json.load(open(out + ".card.json"))
    assert card["phrases"] is None and card["differential_privacy"]["epsilon"] == 10.0
    # The card travels with the file: the corpus by name, not the training machine's path to it.
    assert card["data"]["source"]["path"] == "users.jsonl"

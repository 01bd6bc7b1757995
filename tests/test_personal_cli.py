"""The personal-words commands as a user runs them: encoder, add, train, predict --personal."""
import json
import os

import pytest

from keyboard_lm.cli import main

from tests.conftest import assert_in_top_k

TEXT = ("i love zorblaxen and quuxifying. the zorblaxen is mine. my good zorblaxen, my lord. "
        "quuxifying is a joy of zorblaxen. give me zorblaxen now. ") * 10


@pytest.fixture(scope="module")
def encoder(small_run, small_tflite, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("personal_cli") / "encoder.tflite")
    assert main(["personal", "encoder", small_run, "--model", small_tflite, "--out", out, "--epochs", "1",
                 "--max-positions", "3000"]) == 0
    return out


def test_encoder_command_writes_a_file_tied_to_the_model(encoder, small_tflite, capsys):
    import hashlib
    import zipfile

    with zipfile.ZipFile(encoder) as z:
        meta = json.loads(z.read("char_encoder.json"))
    assert meta["model_fingerprint"] == hashlib.sha256(open(small_tflite, "rb").read()).hexdigest()


def test_encoder_command_refuses_over_budget_and_writes_nothing(small_run, small_tflite, tmp_path, capsys):
    out = tmp_path / "enc.tflite"
    assert main(["personal", "encoder", small_run, "--model", small_tflite, "--out", str(out), "--epochs", "1",
                 "--max-positions", "500", "--budget-bytes", "60000"]) == 2
    assert "budget" in capsys.readouterr().err and not out.exists()


def test_add_train_predict_round_trip(encoder, small_tflite, tmp_path, capsys):
    state = str(tmp_path / "user.personal")
    common = ["--model", small_tflite, "--char-encoder", encoder, "--state", state]
    assert main(["personal", "add", *common, "Zorblaxen", "the"]) == 0
    out = capsys.readouterr().out
    assert "added: zorblaxen" in out and "in vocabulary: the" in out and os.path.exists(state)
    zero_shot = _strip(small_tflite, encoder, state, capsys)  # the char encoder's guess, before any training
    text = tmp_path / "typed.txt"
    text.write_text(TEXT, encoding="utf-8")
    assert main(["personal", "train", *common, "--text", str(text)]) == 0
    out = capsys.readouterr().out
    assert "new personal words (quuxifying" in out and "adapter:" in out and f"wrote {state}" in out
    trained = _strip(small_tflite, encoder, state, capsys)
    # What personalization guarantees on any CPU (tests/README.md): the word it followed in the user's text
    # enters the strip, far more probable than before training; its exact rank depends on the fixture's bits.
    assert_in_top_k("zorblaxen", trained, 3)
    assert trained["zorblaxen"] > 10 * zero_shot.get("zorblaxen", 0.0), (zero_shot.get("zorblaxen"), trained)
    assert main(["predict", small_tflite, "i love", "--char-encoder", encoder, "--personal", state,
                 "--complete", "quu"]) == 0
    assert capsys.readouterr().out.startswith("quuxifying\t")


def _strip(model, encoder, state, capsys) -> dict:
    """``predict 'i love' --personal STATE --json`` over the whole vocabulary: word -> probability, best first."""
    assert main(["predict", model, "i love", "--char-encoder", encoder, "--personal", state, "-k", "100000",
                 "--json"]) == 0
    return {p["word"]: p["probability"] for p in json.loads(capsys.readouterr().out)}


def test_bad_input_is_one_clear_error(encoder, small_tflite, tmp_path, capsys):
    state = str(tmp_path / "user.personal")
    common = ["--model", small_tflite, "--char-encoder", encoder, "--state", state]
    assert main(["personal", "add", *common, "   "]) == 2
    assert "empty or whitespace" in capsys.readouterr().err and not os.path.exists(state)
    assert main(["personal", "add", *common, "x" * 40]) == 2
    assert "above the encoder's limit" in capsys.readouterr().err
    assert main(["personal", "train", *common, "--text", str(tmp_path / "missing.txt")]) == 2
    assert "cannot read the text" in capsys.readouterr().err
    junk = tmp_path / "junk.personal"
    junk.write_bytes(b"junk")
    assert main(["personal", "add", "--model", small_tflite, "--char-encoder", encoder, "--state", str(junk),
                 "zorblaxen"]) == 2
    assert "not a keyboard_lm personal state file" in capsys.readouterr().err
    assert junk.read_bytes() == b"junk"  # nothing lost
    assert main(["predict", small_tflite, "--personal", state]) == 2


def test_train_history_then_predict_with_it_needs_no_encoder(tmp_path, capsys):
    """`personal train --history` (the default personalization: the user history) on the committed model, then
    `predict --history`: the user's own word follows its context; the file is read, not changed, by predict."""
    from tests.conftest import REPO

    model = str(REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite")
    text, history = tmp_path / "typed.txt", tmp_path / "me.history"
    text.write_text("See you at the zorblaxen. Meet me at the zorblaxen tonight.\n" * 3, encoding="utf-8")
    assert main(["predict", model, "meet me at the", "-k", "3", "--json"]) == 0
    assert "zorblaxen" not in [p["word"] for p in json.loads(capsys.readouterr().out)]
    assert main(["personal", "train", "--model", model, "--history", str(history), "--text", str(text)]) == 0
    out = capsys.readouterr().out
    assert "user history: 33 words learnt" in out and f"wrote {history}" in out
    saved = history.read_bytes()
    assert main(["predict", model, "meet me at the", "-k", "3", "--json", "--history", str(history)]) == 0
    assert "zorblaxen" in [p["word"] for p in json.loads(capsys.readouterr().out)]
    assert history.read_bytes() == saved
    # learning again adds to the same file
    from keyboard_lm.inference.user_history import UserHistory

    assert main(["personal", "train", "--model", model, "--history", str(history), "--text", str(text)]) == 0
    assert "(8 distinct words)" in capsys.readouterr().out
    assert UserHistory.load(str(history)).clock == 2 * 33
    assert UserHistory.load(str(history)).weight is None  # 6 sentences: too few to choose the weight on
    longer = tmp_path / "more.txt"
    longer.write_text("See you at the zorblaxen. Meet me at the zorblaxen tonight.\n" * 6, encoding="utf-8")
    assert main(["personal", "train", "--model", model, "--history", str(history), "--text", str(longer)]) == 0
    out = capsys.readouterr().out
    weight = UserHistory.load(str(history)).weight
    assert weight is not None and f"weight {weight:g}, chosen on 6 held-out words" in out
    assert main(["personal", "train", "--model", model, "--text", str(text)]) == 2
    assert "give --history FILE" in capsys.readouterr().err
    assert main(["personal", "train", "--model", model, "--state", str(tmp_path / "s"), "--text", str(text)]) == 2
    assert "--char-encoder and --state go together" in capsys.readouterr().err
    history.write_text("{not json", encoding="utf-8")
    assert main(["predict", model, "hello", "--history", str(history)]) == 2
    assert str(history) in capsys.readouterr().err

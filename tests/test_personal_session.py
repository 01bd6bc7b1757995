"""Personal words in a Session: the exported step_personal signature, zero-shot words,
on-device personalization, personal words as context, the per-user state file and bad input.

Real components: a model trained and exported by keyboard-lm, a char encoder exported to
TFLite, the TFLite interpreter.
"""
import io
import json
import os
import zipfile

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.personal_words import MAX_PERSONAL_WORDS, PersonalState
from keyboard_lm.inference.predictor import Predictor
from keyboard_lm.char_encoder.model import CharEncoderConfig, build_char_encoder
from tests.conftest import assert_in_top_k

from keyboard_lm.export.char_encoder_export import export_char_encoder

# Made-up words: outside any vocabulary, long enough not to occur by chance in binary files.
WORDS = ["zorblaxen", "quuxifying", "flimbertwig"]
TEXTS = ["i love zorblaxen and quuxifying. the zorblaxen is mine. my good zorblaxen, my lord.",
         "quuxifying is a flimbertwig of zorblaxen. give me zorblaxen now."] * 12


@pytest.fixture(scope="module")
def encoder_path(small_tflite, tmp_path_factory):
    model = ModelFile.load(small_tflite)
    cfg = CharEncoderConfig(embedding_dim=model.embedding_dim, max_bytes=24)
    path = str(tmp_path_factory.mktemp("enc") / "char_encoder.tflite")
    import tensorflow as tf
    tf.keras.utils.set_random_seed(0)
    export_char_encoder(build_char_encoder(cfg), path, max_bytes=cfg.max_bytes, model_fingerprint=model.fingerprint)
    return path


@pytest.fixture()
def predictor(small_tflite, encoder_path):
    return Predictor.load(small_tflite, char_encoder=encoder_path)


def test_step_personal_matches_step_full_and_takes_an_embedding(small_run, tmp_path):
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.models.run_dir import load_run

    path = str(tmp_path / "float.tflite")
    export_run(small_run, path, quantization="none")
    model = ModelFile.load(path)
    table = load_run(small_run).weights["embedding/embeddings:0"]
    state = model.initial_state()
    for token in (1, 7, 42):
        log_probs, s_full = model.step_full(token, state)
        logits, output, s_hidden = model.step_hidden(token, state)
        np.testing.assert_allclose(s_hidden, s_full, atol=1e-6)
        z = logits - logits.max()
        np.testing.assert_allclose(z - np.log(np.exp(z).sum()), log_probs, atol=1e-5)
        np.testing.assert_allclose(output @ table.T, logits, rtol=1e-4, atol=1e-4)  # tied output
        e_logits, e_output, e_state = model.step_embedding(table[token], state)
        np.testing.assert_allclose(e_state, s_hidden, atol=1e-5)
        np.testing.assert_allclose(e_logits, logits, atol=1e-4)
        state = s_full


def test_session_without_personal_words_is_unchanged(small_tflite, predictor):
    plain = Predictor.load(small_tflite).session()
    s = predictor.session()
    for text in ("", "my lord", "to be or not to be, that is"):
        plain.reset(); s.reset()
        plain.commit(text); s.commit(text)
        assert s.suggestions(5) == plain.suggestions(5)
        assert s.complete("th") == plain.complete("th")


def test_add_personal_words_reports_every_word_and_changes_the_distribution(predictor):
    s = predictor.session()
    s.commit("my good")
    before = s.suggestions(3)
    result = s.add_personal_words(["Zorblaxen", "the", "zorblaxen", "quuxifying"])
    assert result == {"added": ["zorblaxen", "quuxifying"], "in_vocabulary": ["the"],
                      "already_personal": ["zorblaxen"], "blocked": []}
    assert s.personal.words == ["zorblaxen", "quuxifying"]
    # the joint softmax gives the personal words some mass, the vocabulary keeps its order
    probs = dict(s.suggestions(len(predictor.vocab) + 2))
    assert 0 < probs["zorblaxen"] < 1 and 0 < probs["quuxifying"] < 1
    specials = float(np.exp(s._log_probs[:4]).sum())  # never suggested, still in the softmax
    assert abs(sum(probs.values()) + specials - 1) < 1e-3
    assert [w for w, _ in s.suggestions(5) if w not in WORDS][:3] == [w for w, _ in before]
    assert [w for w, _ in s.complete("zorb")] == ["zorblaxen"]
    assert s.add_personal_words(["quuxifying"])["already_personal"] == ["quuxifying"]


def _tree_bytes(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out[os.path.relpath(os.path.join(d, f), root)] = fh.read()
    return out


def test_personalize_learns_the_users_words_on_device(small_run, small_tflite, encoder_path, predictor, tmp_path):
    model_bytes, encoder_bytes = open(small_tflite, "rb").read(), open(encoder_path, "rb").read()
    server_side = _tree_bytes(small_run)  # the training run: weights, vocabulary, checkpoints, run.json
    s = predictor.session()
    s.commit("i love")
    zero_shot = dict(s.suggestions(len(predictor.vocab) + 5))
    report = s.personalize(TEXTS, history=False, adapter=True)  # the adapter's effect alone
    assert s.history is None
    assert report["trained"] and set(WORDS) <= set(report["words_added"]) and report["not_added"] == 0
    assert report["validation_positions"] > 0 and report["kept_epoch"] >= 1
    assert min(report["validation_loss"]) < report["train_loss"][0]
    s.reset(); s.commit("i love")
    assert_in_top_k("zorblaxen", s.suggestions(3), 3)  # its exact rank depends on the fixture's bits
    assert dict(s.suggestions(3))["zorblaxen"] > 10 * zero_shot.get("zorblaxen", 0)
    assert s.complete("quux")[0][0] == "quuxifying"
    # a personal word typed as context enters through its embedding, not as <oov>
    a, b = predictor.session(), predictor.session()
    a.personal = s.personal; a.personal_changed()
    b.personal = s.personal; b.personal_changed()
    a.commit("my good zorblaxen")
    b.commit("my good unknownwordzz")  # outside vocabulary and personal words: <oov>
    assert a.suggestions(3) != b.suggestions(3)
    c = Predictor.load(small_tflite).session()
    c.commit("my good unknownwordzz")
    assert [w for w, _ in b.suggestions(3)] != [] and c.steps == b.steps
    # nothing personal reached the shipped files
    assert open(small_tflite, "rb").read() == model_bytes and open(encoder_path, "rb").read() == encoder_bytes
    assert _tree_bytes(small_run) == server_side
    for word in WORDS:
        assert word.encode() not in model_bytes and word.encode() not in encoder_bytes
        assert not any(word.encode() in data for data in server_side.values())
    state_file = tmp_path / "user.personal"
    s.save_personal(str(state_file))
    assert b"zorblaxen" in state_file.read_bytes()  # the one file that holds the personal words


def test_personal_state_saves_and_loads_and_refuses_another_model(predictor, small_tflite, tmp_path):
    s = predictor.session()
    s.personalize(TEXTS, history=False, adapter=True)  # the state file holds the adapter; the history has a file of its own
    s.reset(); s.commit("i love")
    want = s.suggestions(3)
    path = str(tmp_path / "user.personal")
    s.save_personal(path)
    t = predictor.session(personal=path)
    t.commit("i love")
    assert t.suggestions(3) == want
    assert t.complete("flimb") == s.complete("flimb")
    # a state written for another model is refused, and the session keeps what it had
    other = PersonalState("0" * 64, predictor.model.embedding_dim)
    other.add_words(["otherword"], np.zeros((1, predictor.model.embedding_dim)))
    other_path = str(tmp_path / "other.personal")
    other.save(other_path)
    with pytest.raises(ConfigError, match="belongs to model 000000000000"):
        t.load_personal(other_path)
    assert t.personal.words == s.personal.words
    junk = tmp_path / "junk.personal"
    junk.write_bytes(b"not a state")
    with pytest.raises(ConfigError, match="not a keyboard_lm personal state file"):
        t.load_personal(str(junk))
    with pytest.raises(ConfigError, match="no personal words to save"):
        predictor.session().save_personal(str(tmp_path / "x.personal"))


@pytest.mark.parametrize("word, match", [("", "empty or whitespace"), ("   ", "empty or whitespace"),
                                         ("two words", "2 tokens"), ("x" * 25, "above the encoder's limit")])
def test_bad_personal_words_are_refused_and_nothing_is_added(predictor, word, match):
    s = predictor.session()
    s.add_personal_words(["zorblaxen"])
    with pytest.raises(ConfigError, match=match):
        s.add_personal_words(["quuxifying", word])
    assert s.personal.words == ["zorblaxen"]


def test_the_cap_refuses_or_truncates_with_a_count(predictor):
    s = predictor.session()
    with pytest.raises(ConfigError, match=f"cap of {MAX_PERSONAL_WORDS}; nothing was added"):
        s.add_personal_words([f"zzq{i}" for i in range(10_000)])
    assert s.personal is None or s.personal.words == []
    text = " ".join(f"zzq{i} zzq{i}" if i < 5 else f"zzq{i}" for i in range(1_200)) + "."
    report = s.personalize([text], adapter=True, epochs=2)
    assert report["personal_words"] == MAX_PERSONAL_WORDS and report["not_added"] == 200
    assert s.personal.words[:5] == [f"zzq{i}" for i in range(5)]  # the most frequent first


def test_blocklisted_and_in_vocabulary_words_never_become_personal(small_tflite, encoder_path):
    p = Predictor.load(small_tflite, blocklist=["zorblaxen"], char_encoder=encoder_path)
    s = p.session()
    assert s.add_personal_words(["zorblaxen", "quuxifying"])["blocked"] == ["zorblaxen"]
    report = s.personalize(TEXTS, adapter=True, epochs=3)
    assert "zorblaxen" not in s.personal.words and "zorblaxen" not in report["words_added"]
    assert all(w not in dict(s.suggestions(50)) for w in ("zorblaxen",))


def test_encoder_of_another_model_and_missing_encoder_are_refused(small_tflite, tmp_path):
    cfg = CharEncoderConfig(embedding_dim=ModelFile.load(small_tflite).embedding_dim)
    other = str(tmp_path / "other_encoder.tflite")
    export_char_encoder(build_char_encoder(cfg), other, max_bytes=cfg.max_bytes, model_fingerprint="f" * 64)
    with pytest.raises(ConfigError, match="trained for model ffffffffffff"):
        Predictor.load(small_tflite, char_encoder=other)
    with pytest.raises(ConfigError, match="need the char encoder"):
        Predictor.load(small_tflite).session().add_personal_words(["zorblaxen"])


def test_a_model_exported_without_step_personal_is_named(small_tflite, encoder_path, tmp_path):
    data = open(small_tflite, "rb").read()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        files = {n: z.read(n) for n in z.namelist()}
    # the archive is appended after the flatbuffer: rewrite it without the step_personal signature
    flat_end = data.find(b"PK\x03\x04")
    meta = json.loads(files["keyboard_lm.json"])
    del meta["signatures"]["step_personal"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("keyboard_lm.json", json.dumps(meta))
        z.writestr("vocab.txt", files["vocab.txt"])
    old = tmp_path / "old.tflite"
    old.write_bytes(data[:flat_end] + buf.getvalue())
    model = ModelFile.load(str(old))
    assert not model.has_personal_signatures
    s = Predictor(model).session()
    s.commit("my lord")  # suggestions work as before
    assert len(s.suggestions(3)) == 3
    with pytest.raises(ConfigError, match="no step_personal signature"):
        model.step_hidden(1, model.initial_state())


def test_shenoy_grid_is_chosen_on_validation_emr3_and_the_vocab_bias_learns_known_words(predictor, tmp_path):
    # two shapes from Shenoy & Nguyen's grid (the full grid is benchmarks' work): the kept one has the best EMR3
    from keyboard_lm.inference.adapter_research import train_variants

    s = predictor.session()
    grid = [{"hidden": (16,), "layer_norm": True, "init_scale": 0.01}, {"hidden": (8, 16, 8), "layer_norm": True,
                                                                          "init_scale": 1.0}]
    from keyboard_lm.text.tokenizer import sentences

    tokenized = [x for t in TEXTS for x in sentences(t)]
    report = train_variants(s, tokenized[:-10], tokenized[-10:], variants=grid, stop_on="emr3", epochs=30)
    assert len(report["grid_emr3"]) == 2 and report["stop_on"] == "emr3"
    chosen = grid[report["grid_emr3"].index(max(report["grid_emr3"]))]
    assert report["chosen"]["hidden"] == list(chosen["hidden"]) and s.personal.layer_norm
    assert s.personal.hidden == chosen["hidden"]
    s.reset(); s.commit("i love")
    assert_in_top_k("zorblaxen", s.suggestions(3), 3)
    # the output bias alone: no word outside the vocabulary, yet a known word the user favours rises
    user = ["the lord", "my lord", "good lord", "o lord", "a lord"] * 8
    b = predictor.session()
    before = dict(b.suggestions(len(predictor.vocab)))
    report = train_variants(b, [t.split() for t in user[:30]], [t.split() for t in user[30:]],
                            variants=[{"vocab_bias": True}], epochs=40, learning_rate=0.05)
    assert report["trained"] and report["personal_words"] == 0 and b.personal.has_vocab_bias
    b.reset()
    after = dict(b.suggestions(len(predictor.vocab)))
    assert after["lord"] > 2 * before["lord"]
    b.save_personal(str(tmp_path / "bias.personal"))
    c = predictor.session()
    c.load_personal(str(tmp_path / "bias.personal"))
    assert dict(c.suggestions(5)) == pytest.approx(dict(b.suggestions(5)))
    with pytest.raises(ConfigError, match="grid is empty"):
        train_variants(predictor.session(), tokenized, variants=[])


def test_the_char_encoder_is_safe_to_share_between_threads(encoder_path):
    """Eight threads encode batches of different sizes through one CharEncoderFile: each gets exactly what a
    lone call returns (without the lock, one thread's resize or input lands between another's set and read)."""
    import threading

    from keyboard_lm.inference.personal_words import CharEncoderFile

    encoder = CharEncoderFile(encoder_path)
    # batch sizes 1 to 512: a long invoke (TFLite releases the GIL in it) beside another thread's resize
    batches = [[f"w{t}x{i}abcdefgh" for i in range(4 ** (t % 4) * (2 if t % 2 else 1))] for t in range(8)]
    expected = [encoder.encode(b) for b in batches]
    errors, barrier = [], threading.Barrier(len(batches))

    def work(t):
        barrier.wait()
        try:
            for _ in range(100):
                got = encoder.encode(batches[t])
                if got.shape != expected[t].shape or not np.array_equal(got, expected[t]):
                    errors.append((t, got.shape))
                    return
        except Exception as e:  # noqa: BLE001 - TFLite's "reference to internal data" and the like
            errors.append((t, repr(e)[:200]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(batches))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]

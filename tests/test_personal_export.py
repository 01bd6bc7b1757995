"""Char encoder as a second .tflite, run TF-free; the shipped file and saved state hold no personal word."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personal_words import CharEncoderFile, PersonalState
from keyboard_lm.char_encoder.model import CharEncoderConfig, build_char_encoder
from keyboard_lm.text.spelling import encode_spellings

from keyboard_lm.export.char_encoder_export import export_char_encoder


def test_exported_encoder_matches_keras_and_ships_no_personal_word(tmp_path):
    cfg = CharEncoderConfig(embedding_dim=24, max_bytes=16)
    enc = build_char_encoder(cfg)
    path = str(tmp_path / "char_encoder.tflite")
    size = export_char_encoder(enc, path, max_bytes=cfg.max_bytes, model_fingerprint="fp")
    assert size < 200_000  # int8 weights: ~66k parameters
    words = ["Rosalind", "Zyx", "naïve"]
    runtime = CharEncoderFile(path)
    got, want = runtime.encode(words), enc.predict(encode_spellings(words, cfg.max_bytes), verbose=0)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max() + 1e-3
    with pytest.raises(ConfigError, match="above the encoder's limit"):
        runtime.encode(["x" * 17])
    state = PersonalState("fp", 24)
    state.add_words(words, got)
    for w in words:
        assert w.encode("utf-8") not in open(path, "rb").read()


def test_foreign_file_refused(tmp_path):
    p = tmp_path / "x.tflite"
    p.write_bytes(b"junk")
    with pytest.raises(ConfigError, match="not a keyboard_lm char encoder"):
        CharEncoderFile(str(p))


def test_a_char_encoder_with_one_changed_byte_is_refused_before_tflite_reads_it(tmp_path):
    """The exporter seals the encoder with a sha256 of itself; a byte changed in its weights is one line."""
    cfg = CharEncoderConfig(embedding_dim=24, max_bytes=16)
    path = tmp_path / "char_encoder.tflite"
    export_char_encoder(build_char_encoder(cfg), str(path), max_bytes=cfg.max_bytes, model_fingerprint="fp")
    CharEncoderFile(str(path))  # whole: loads
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x40  # inside the flatbuffer's weights
    path.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match="checksum") as e:
        CharEncoderFile(str(path))
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_personal_budget_covers_model_and_encoder_files():
    from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES, DEFAULT_PERSONAL_BUDGET_BYTES, check_personal_budget

    # The default personalization budget is the model's budget plus 0.2 MiB for the char encoder.
    check_personal_budget(DEFAULT_BUDGET_BYTES, int(0.2 * 2**20))
    with pytest.raises(ConfigError):
        check_personal_budget(DEFAULT_BUDGET_BYTES, int(0.2 * 2**20) + 1)
    check_personal_budget(1_400_000, DEFAULT_PERSONAL_BUDGET_BYTES - 1_400_000)  # exactly at the default budget
    with pytest.raises(ConfigError) as e:
        check_personal_budget(1_400_000, 277_722)
    assert "1,400,000 bytes" in str(e.value) and "277,722 bytes" in str(e.value) and "by 1;" in str(e.value)
    with pytest.raises(ConfigError, match="over the personalization budget of 100 bytes by 50"):
        check_personal_budget(100, 50, 100)
    check_personal_budget(10**9, 10**9, None)
    check_personal_budget(10**9, 10**9, 0)


def test_encoder_metadata_takes_numbers_only(tmp_path):
    from keyboard_lm.export.char_encoder_export import char_encoder_bytes

    cfg = CharEncoderConfig(byte_dim=4, channels=8, kernel=3, max_bytes=8, embedding_dim=4)
    enc = build_char_encoder(cfg)
    with pytest.raises(ConfigError, match="metadata.top.words\\[1\\] is str 'rosalind'"):
        char_encoder_bytes(enc, max_bytes=8, model_fingerprint="fp", metadata={"top": {"words": [1, "rosalind"]}})
    with pytest.raises(ConfigError, match="may not set model_fingerprint"):
        char_encoder_bytes(enc, max_bytes=8, model_fingerprint="fp", metadata={"model_fingerprint": 1})
    with pytest.raises(ConfigError, match="needs the fingerprint"):
        char_encoder_bytes(enc, max_bytes=8, model_fingerprint="")
    path = str(tmp_path / "enc.tflite")
    size = export_char_encoder(enc, path, max_bytes=8, model_fingerprint="fp",
                               metadata={"heldout": {"recall": np.float32(0.25), "ce": float("nan"), "n": np.int64(3)}})
    meta = CharEncoderFile(path).meta
    assert meta["heldout"] == {"recall": 0.25, "ce": None, "n": 3} and meta["max_bytes"] == 8
    assert size == (tmp_path / "enc.tflite").stat().st_size and [p.name for p in tmp_path.iterdir()] == ["enc.tflite"]

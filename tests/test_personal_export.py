"""Char encoder as a second .tflite, run TF-free; the shipped file and saved state hold no personal word (issue 13)."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personal import CharEncoderFile, PersonalState, _byte_ids
from keyboard_lm.personal.char_encoder import CharEncoderConfig, build_char_encoder, encode_spellings

try:
    from keyboard_lm.export.char_encoder_export import export_char_encoder
except ImportError:
    from export.char_encoder_export import export_char_encoder


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
    np.testing.assert_array_equal(_byte_ids(words, 16), encode_spellings(words, 16))
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

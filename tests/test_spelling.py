"""The spelling encoding the char encoder reads: one implementation, the same ids in training and on device."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.text.spelling import ALPHABET_SIZE, encode_spellings, fits, spelling_length


def test_ids_are_shifted_utf8_bytes_between_markers_then_padding():
    ids = encode_spellings(["hi", "né"], max_bytes=4)
    np.testing.assert_array_equal(ids, [[1, ord("h") + 3, ord("i") + 3, 2, 0, 0],
                                        [1, ord("n") + 3, 0xC3 + 3, 0xA9 + 3, 2, 0]])
    assert ids.dtype == np.int32 and ids.max() < ALPHABET_SIZE == 259


def test_limit_counts_utf8_bytes_not_letters():
    assert spelling_length("naïve") == 6
    assert fits("naïve", 6) and not fits("naïve", 5)
    with pytest.raises(ConfigError, match=r"word 0 'naïve' is 6 UTF-8 bytes, above the encoder's limit of 5"):
        encode_spellings(["naïve"], 5)


def test_training_and_the_device_use_this_one_encoding():
    """The device's CharEncoderFile and the encoder's fitting call the text layer's function, not copies."""
    from keyboard_lm.char_encoder import fit
    from keyboard_lm.inference import personal_words

    assert personal_words.encode_spellings is encode_spellings
    assert fit.encode_spellings is encode_spellings

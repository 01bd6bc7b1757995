"""The char word encoder: shapes at Shenoy's sizes, bad spellings, and that it learns the tied table."""
import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.char_encoder.fit import train_char_encoder
from keyboard_lm.char_encoder.model import CharEncoderConfig, build_char_encoder, vocabulary_targets
from keyboard_lm.text.spelling import encode_spellings


def test_shenoy_sizes_fix_parameter_count_and_output_shape():
    cfg = CharEncoderConfig()
    enc = build_char_encoder(cfg)
    # bytes 259*100 + conv 4*100*200+200 + projection 200*96+96
    assert enc.count_params() == 259 * 100 + (4 * 100 * 200 + 200) + (200 * 96 + 96)
    out = enc(encode_spellings(["Rosalind", "naïve"], cfg.max_bytes))
    assert out.shape == (2, 96)


@pytest.mark.parametrize("word,what", [("", "empty"), ("   ", "whitespace"), ("x" * 25, "above the encoder's limit")])
def test_bad_spelling_raises_one_clear_error(word, what):
    with pytest.raises(ConfigError, match=what):
        encode_spellings(["ok", word], max_bytes=24)


def test_encoding_keeps_multibyte_spelling_and_markers():
    ids = encode_spellings(["é"], max_bytes=4)[0]
    assert list(ids) == [1, 0xC3 + 3, 0xA9 + 3, 2, 0, 0]


def test_encoder_learns_tied_embeddings_of_a_trained_run(small_run):
    from keyboard_lm.models.run_dir import load_run

    run = load_run(small_run)
    table = next(v for k, v in run.weights.items() if "embedding" in k)
    words, targets = vocabulary_targets(run.vocab, table)
    cfg = CharEncoderConfig(embedding_dim=table.shape[1], max_bytes=max(len(w.encode()) for w in words))
    enc, losses = train_char_encoder(words, targets, config=cfg, epochs=40, seed=0)
    pred = enc.predict(encode_spellings(words, cfg.max_bytes), verbose=0)
    mean_baseline = float(np.mean((targets - targets.mean(0)) ** 2))
    assert losses[-1] < losses[0]
    assert float(np.mean((pred - targets) ** 2)) < 0.7 * mean_baseline


def test_vocabulary_words_leave_out_specials_and_over_long_words():
    from keyboard_lm.char_encoder.model import vocabulary_word_ids

    tokens = ["<pad>", "<bos>", "<eos>", "<oov>", "the", "x" * 9, "naïve"]
    words, ids, too_long = vocabulary_word_ids(tokens, max_bytes=8)
    assert words == ["the", "naïve"] and list(ids) == [4, 6] and too_long == 1


def test_context_statistics_and_top3_threshold_match_brute_force():
    """logsumexp of the other logits, and top-3 membership with specials excluded, on random logits with ties."""
    from keyboard_lm.char_encoder.model import context_statistics, third_best_excluding

    rng = np.random.default_rng(0)
    # halves: every logit is exact in float32 whatever the summation order, and ties occur
    table = (np.round(2 * rng.standard_normal((12, 3))) / 2).astype(np.float32)
    h = (np.round(2 * rng.standard_normal((300, 3))) / 2).astype(np.float32)
    targets = rng.integers(0, 12, 300)
    stats = context_statistics(table, h, targets, chunk=7)
    for n in range(300):
        z = (table @ h[n]).astype(np.float64)
        others = np.delete(z, targets[n])
        assert stats["others_lse"][n] == pytest.approx(np.log(np.exp(others).sum()), rel=1e-5)
        for w in range(4, 12):  # word w's column replaced by a score s: in the top 3 iff fewer than 3 others beat it
            for s in (z[w], z[w] + 0.125, z[w] - 0.125):
                rest = np.delete(z, w)[4:]  # the other non-special columns (w >= 4: the specials stay first)
                want = (rest > s).sum() < 3
                got = s >= third_best_excluding(stats["top_vals"][n], stats["top_ids"][n], np.array(w))
                assert bool(got) == bool(want), (n, w, s)

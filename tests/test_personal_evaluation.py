"""OOV-aware encoding, 8:1:1 split and EMR3/KEMR3/OOV-rate on real text."""
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.char_encoder.evaluation import (
    encode_keeping_spelling, exact_match, oov_rate, personal_vocabulary, split_user)
from keyboard_lm.text.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def sentences_and_vocab(default_corpus):
    from keyboard_lm.text.tokenizer import tokenize

    texts = [t for c in default_corpus.clients.values() for t in c][:400]
    toks = [tokenize(t) for t in texts]
    vocab = Vocabulary.from_sentences(toks, size=200)
    return [encode_keeping_spelling(t, vocab) for t in toks], vocab


def test_spelling_kept_beside_oov_id_and_personal_vocab_lowers_oov_rate(sentences_and_vocab):
    sents, vocab = sentences_and_vocab
    oov = vocab.special.oov_id
    assert any(i == oov for s in sents for i in s.ids), "a 200-word vocabulary leaves OOV words in real text"
    assert all(len(s.ids) == len(s.words) for s in sents)
    train, _, test = split_user(sents, seed=0)
    before = oov_rate(test, oov)
    after = oov_rate(test, oov, personal_vocabulary(train, oov))
    assert 0 < before and after < before


def test_split_is_8_1_1_and_disjoint():
    tr, va, te = split_user(range(100), seed=3)
    assert (len(tr), len(va), len(te)) == (80, 10, 10)
    assert sorted(tr + va + te) == list(range(100))
    with pytest.raises(ConfigError, match="at least 3"):
        split_user([1, 2])


def test_emr3_counts_oov_spellings_kemr3_only_known():
    m = exact_match([["a", "b", "c"], ["zed", "a", "b"], ["a", "b", "c"]], ["b", "zed", "x"], known={"a", "b", "c", "x"})
    assert m["emr3"] == pytest.approx(2 / 3) and m["kemr3"] == pytest.approx(1 / 2)

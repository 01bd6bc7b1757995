"""The base's sentence fingerprint: which of a run's sentences the base saw, recorded and warned about."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from keyboard_lm.data.corpora import load_default
from keyboard_lm.data.overlap import (FINGERPRINT_FILE, MIN_WORDS, SentenceFingerprint, load_fingerprint,
                                      overlap_report, sentence_keys)
from keyboard_lm.data.split import SplitConfig, split_clients
from keyboard_lm.errors import ConfigError
from keyboard_lm.models.warm_start import base_model_dir

# Genesis 1:1-12 of the King James Version (public domain), as the base's corpus holds it (bible-kjv-text).
GENESIS = """In the beginning God created the heaven and the earth.
And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.
And God said, Let there be light: and there was light.
And God saw the light, that it was good: and God divided the light from the darkness.
And God called the light Day, and the darkness he called Night. And the evening and the morning were the first day.
And God said, Let there be a firmament in the midst of the waters, and let it divide the waters from the waters.
And God made the firmament, and divided the waters which were under the firmament from the waters which were above the firmament: and it was so.
And God called the firmament Heaven. And the evening and the morning were the second day.
And God said, Let the waters under the heaven be gathered together unto one place, and let the dry land appear: and it was so.
And God called the dry land Earth; and the gathering together of the waters called he Seas: and God saw that it was good.
And God said, Let the earth bring forth grass, the herb yielding seed, and the fruit tree yielding fruit after his kind, whose seed is in itself, upon the earth: and it was so.
And the earth brought forth grass, and herb yielding seed after his kind, and the tree yielding fruit, whose seed was in itself, after his kind: and God saw that it was good.""".splitlines()

# The opening of Pride and Prejudice (public domain), as the base's corpus holds it (r-cran-janeaustenr).
AUSTEN = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.",
    "\"My dear Mr. Bennet,\" said his lady to him one day, \"have you heard that Netherfield Park is let at last?\"",
    "Mr. Bennet replied that he had not.",
    "\"But it is,\" returned she; \"for Mrs. Long has just been here, and she told me all about it.\"",
    "Mr. Bennet made no answer.",
    "\"Do you not want to know who has taken it?\" cried his wife impatiently.",
    "\"_You_ want to tell me, and I have no objection to hearing it.\"",
    "This was invitation enough.",
    "\"What is his name?\"",
    "\"Is he married or single?\"",
]


def _texts(corpus, ids):
    return [t for cid in ids for t in corpus.clients[cid]]


def test_sentences_shorter_than_five_words_are_not_fingerprinted():
    assert sentence_keys("Thank you very much. See you at the station tomorrow!") == \
        sentence_keys("See you at the station tomorrow")
    assert len(sentence_keys("See you at the station tomorrow")) == 1 and MIN_WORDS == 5
    # Case, apostrophes and punctuation inside a sentence are the text spec's, not the key's business.
    assert sentence_keys("SEE you, at the Station tomorrow") == sentence_keys("see you at the station tomorrow")


def test_a_corpus_cut_from_the_fingerprinted_text_is_flagged_and_a_fresh_one_is_not():
    corpus = load_default()
    train, heldout = split_clients(corpus.client_ids, SplitConfig())
    fp = SentenceFingerprint.build(_texts(corpus, train), sample=1)
    seen = fp.count(_texts(corpus, train[:40]))
    assert seen["checked"] > 50 and seen["share"] == 1.0
    fresh = fp.count(GENESIS)
    assert fresh["checked"] == fresh["sentences"] >= 12 and fresh["share"] == 0.0
    sampled = SentenceFingerprint.build(_texts(corpus, train))  # one sentence in four
    assert sampled.sample == 4 and len(sampled.hashes) < 0.4 * fp.sentences
    assert sampled.count(_texts(corpus, train))["share"] == 1.0


def test_overlap_report_splits_training_and_heldout_and_warns_above_one_percent():
    corpus = load_default()
    train, heldout = split_clients(corpus.client_ids, SplitConfig())
    report = overlap_report(SentenceFingerprint.build(_texts(corpus, heldout), sample=1), corpus, SplitConfig())
    assert report["heldout"]["share"] == 1.0 and report["warning"]
    clean = overlap_report(SentenceFingerprint.build(GENESIS, sample=1), corpus, SplitConfig())
    assert clean["heldout"]["seen"] == clean["train"]["seen"] == 0 and not clean["warning"]


def test_fingerprint_file_round_trips_and_a_bad_one_is_named(tmp_path):
    fp = SentenceFingerprint.build(GENESIS, sample=1)
    fp.save(str(tmp_path / FINGERPRINT_FILE))
    again = load_fingerprint(str(tmp_path))
    assert np.array_equal(again.hashes, fp.hashes) and (again.sample, again.sentences) == (1, fp.sentences)
    assert load_fingerprint(str(tmp_path / "nothing")) is None
    (tmp_path / "bad.npz").write_bytes(b"not a fingerprint")
    with pytest.raises(ConfigError, match="bad.npz: unreadable sentence fingerprint"):
        SentenceFingerprint.load(str(tmp_path / "bad.npz"))


def test_the_shipped_base_flags_its_own_text_and_not_the_embedded_corpus():
    fp = load_fingerprint(base_model_dir())
    assert fp is not None, "the shipped base has no sentence fingerprint"
    with open(os.path.join(base_model_dir(), "run.json"), encoding="utf-8") as f:
        card = json.load(f)["card"]
    assert card["fingerprint"]["stored"] == len(fp.hashes) and card["fingerprint"]["sample"] == fp.sample
    assert os.path.getsize(os.path.join(base_model_dir(), FINGERPRINT_FILE)) < 600_000
    own = fp.count(AUSTEN)
    assert own["checked"] >= 2 and own["share"] == 1.0
    report = overlap_report(fp, load_default(), SplitConfig())
    assert report["heldout"]["share"] <= 0.01 and report["train"]["share"] <= 0.01 and not report["warning"]


def _base_with_fingerprint(small_run, tmp_path, texts):
    base = tmp_path / "base"
    shutil.copytree(small_run, base)
    SentenceFingerprint.build(texts, sample=1).save(str(base / FINGERPRINT_FILE))
    return str(base)


def test_a_warm_started_run_records_and_warns_what_its_base_saw(small_run, tmp_path, capsys):
    """A base whose fingerprint holds the embedded corpus's held-out conversations: train says so on
    screen and in run.json (and so in the model card), and eval repeats it for the clients it scores."""
    from keyboard_lm.cli import main

    corpus = load_default()
    _, heldout = split_clients(corpus.client_ids, SplitConfig(seed=1))
    base = _base_with_fingerprint(small_run, tmp_path, _texts(corpus, heldout))
    out = str(tmp_path / "warm")
    assert main(["train", "--centralized", "--out", out, "--init-from", base, "--epochs", "1", "--split-seed", "1",
                 "--batch-size", "32", "--validation-fraction", "0", "--ngram-teacher", "0",
                 "--weight-average", "0"]) == 0
    printed = capsys.readouterr().out
    assert "held-out 100.0% of" in printed and "WARNING:" in printed
    overlap = json.load(open(os.path.join(out, "run.json"), encoding="utf-8"))["init_from"]["base_overlap"]
    assert overlap["checked"] and overlap["heldout"]["share"] == 1.0 and overlap["warning"]
    assert overlap["train"]["share"] < 1.0
    assert main(["eval", out, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["base_overlap"]["evaluated"]["share"] == 1.0 and result["base_overlap"]["warning"]


def test_a_base_without_a_fingerprint_is_recorded_as_unchecked(small_run, tmp_path, capsys):
    from keyboard_lm.cli import main

    out = str(tmp_path / "warm")
    assert main(["train", "--centralized", "--out", out, "--init-from", small_run, "--epochs", "1",
                 "--split-seed", "1", "--batch-size", "32", "--validation-fraction", "0", "--ngram-teacher", "0",
                 "--weight-average", "0"]) == 0
    assert "base overlap not checked" in capsys.readouterr().out
    overlap = json.load(open(os.path.join(out, "run.json"), encoding="utf-8"))["init_from"]["base_overlap"]
    assert overlap == {"checked": False, "reason": f"the base has no {FINGERPRINT_FILE}"}

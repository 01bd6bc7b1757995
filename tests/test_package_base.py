"""The base model's card as benchmarks.tools.package_base writes it: a license for every source the corpus
builder reads, the overlap check against each evaluation corpus, and the pretraining speed."""

import pytest

from benchmarks.tools.base_corpus.debs import deb_sources
from benchmarks.tools.base_corpus.licenses import license_of
from benchmarks.tools.package_base import _card_overlap, _card_sources, _speed

pytestmark = pytest.mark.bench


def test_every_source_of_the_corpus_builder_has_its_license_recorded():
    missing = [s.name for s in deb_sources() if not license_of(s.name)]
    assert not missing, f"add these to benchmarks/tools/base_corpus/licenses.py: {missing}"
    assert license_of("wesnoth-1.16-httt") == "GPL-2+" and license_of("no-such-package") is None


def test_the_card_names_each_source_with_its_license_and_each_evaluation_corpus_with_what_was_dropped():
    report = {
        "sources": {"fortunes": {"package": "fortunes", "version": "1:1.99.1-7.3", "deb_sha256": "a" * 64,
                                 "words": 10, "kind": "quotes", "dropped": {"gore": {"records": 1}}},
                    "made-up": {"package": "made-up", "version": "1", "deb_sha256": "b" * 64, "words": 5}},
        "rules": {"overlap": {"ngram": 8, "whole_sentence_min_words": 5,
                              "corpora": {"spamassassin": {"file": "ham.mbox", "sentences": 33397},
                                          "default": {"file": None, "sentences": 4156}}}},
        "filtered": {"overlap_spamassassin": {"records": 80, "words": 1785}, "gore": {"records": 1, "words": 3}},
    }
    sources = {s["source"]: s for s in _card_sources(report)}
    assert sources["fortunes"]["license"] == "BSD (fortune-mod)" and "dropped" not in sources["fortunes"]
    assert sources["made-up"]["license"] is None  # shown as unknown, never invented
    overlap = _card_overlap(report)
    assert overlap["ngram"] == 8 and overlap["whole_sentence_min_words"] == 5
    assert overlap["corpora"]["spamassassin"]["dropped"] == {"records": 80, "words": 1785}
    assert overlap["corpora"]["default"]["dropped"] == {"records": 0, "words": 0}  # checked, nothing shared
    assert report["rules"]["overlap"]["corpora"]  # the report itself is left as it was


def test_the_speed_is_token_slots_per_second_of_the_fastest_and_the_median_epoch():
    info = {"data": {"train_examples": 1000}, "hyperparameters": {"seq_len": 20, "batching": "packed"}}
    rows = [{"seconds": "100"}, {"seconds": "50"}, {"seconds": "80"}]
    speed = _speed(info, rows)
    assert speed["tokens_per_second_fastest"] == 400 and speed["tokens_per_second_median"] == 250
    assert speed["batching"] == "packed" and speed["fastest_epoch_seconds"] == 50
    assert _speed({"data": {}, "hyperparameters": {}}, rows) is None and _speed(info, []) is None

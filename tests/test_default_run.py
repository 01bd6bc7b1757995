"""The default-run benchmark's corpus: whole real senders up to a word count, written as `--format jsonl`."""

import os

import pytest

from benchmarks.common.corpora import MAIL
from benchmarks.speed import default_run

pytestmark = pytest.mark.bench

HERE = os.path.dirname(os.path.abspath(__file__))
MBOX = os.path.join(HERE, "..", MAIL)


def test_users_are_whole_and_reach_the_words_in_a_seeded_order():
    clients = {"a": ["one two three."], "b": ["four five."], "c": ["six seven eight nine."], "d": ["ten."]}
    ids, words = default_run.users_up_to(clients, 5, seed=0)
    assert words >= 5 and words == sum(default_run.client_words(clients[c]) for c in ids)
    assert words - default_run.client_words(clients[ids[-1]]) < 5  # it stops as soon as the count is reached
    assert default_run.users_up_to(clients, 5, seed=0) == (ids, words)
    assert {tuple(default_run.users_up_to(clients, 5, seed=s)[0]) for s in range(8)} != {tuple(ids)}
    with pytest.raises(SystemExit, match="holds only"):
        default_run.users_up_to(clients, 1000, seed=0)


@pytest.mark.skipif(not os.path.exists(MBOX), reason="needs ../shared/data/spamassassin-ham (absent)")
def test_the_mail_subset_reads_back_as_the_same_senders_and_text(tmp_path):
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.stats import corpus_stats

    mail = load_corpus(MBOX, "mbox")
    ids, words = default_run.users_up_to(mail.clients, 400_000, seed=0)
    path = str(tmp_path / "corpus.jsonl")
    default_run.write_corpus(mail.clients, ids, path)
    back = load_corpus(path, "jsonl")
    assert back.clients == {c: mail.clients[c] for c in ids}
    assert corpus_stats(back)["words"] == words and 400_000 <= words < 400_000 + 50_000
    assert 100 < len(ids) < len(mail.clients)


def test_the_timed_command_is_the_trainers_and_starts_from_the_base_given():
    from keyboard_lm.cli.main import build_parser

    for base in ("base", "benchmarks/records/base/base_v2_si"):
        parsed = build_parser().parse_args(["train", *default_run.user_args("c.jsonl", "runs/x", base)])
        assert parsed.init_from == base and parsed.data == "c.jsonl" and parsed.format == "jsonl"
    assert default_run.user_args("c.jsonl", "runs/x")[:2] == ["--init-from", "base"]  # the package's by default
    # the trainer's default rounds unless an earlier recipe is timed beside it
    assert build_parser().parse_args(["train", *default_run.user_args("c.jsonl", "runs/x")]).rounds is None
    earlier = build_parser().parse_args(["train", *default_run.user_args("c.jsonl", "runs/x", "base", 350)])
    assert earlier.rounds == 350


def test_against_names_a_directory_that_is_not_a_finished_work_directory(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(SystemExit, match="not a finished default_run.py work directory"):
        default_run.against(str(tmp_path / "mine"), "c.jsonl", str(tmp_path))

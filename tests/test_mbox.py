"""E-mail as a corpus (--format mbox): one sender = one client, only the text each sender wrote, in time order."""

import base64
import email
import json
import quopri

import pytest

from keyboard_lm.cli import main
from keyboard_lm.data.corpora import load_corpus
from keyboard_lm.data.mbox import MessageTooDeep, html_to_text, leaf_parts, own_text
from keyboard_lm.errors import DataError
from tests.conftest import SPAMASSASSIN


def _message(sender, date, body, headers="", content_type="text/plain; charset=us-ascii", encoding="7bit"):
    return (f"From {sender} Mon Aug 26 10:00:00 2002\nFrom: Someone <{sender}>\nDate: {date}\n"
            f"Subject: test\nMIME-Version: 1.0\n{headers}Content-Type: {content_type}\n"
            f"Content-Transfer-Encoding: {encoding}\n\n{body}\n\n")


def _multipart(sender, date, parts):
    boundary = "b0undary"
    body = "".join(f"--{boundary}\n{p}\n" for p in parts) + f"--{boundary}--\n"
    return _message(sender, date, body, content_type=f'multipart/mixed; boundary="{boundary}"')


REPLY = """Sounds good, see you at the standup.

On Mon, 26 Aug 2002, Bob wrote:
> Can we move the meeting to Tuesday?
> I have a clash
with the dentist
> on Monday.

Ann
-- 
Ann Example, build engineer
"""
FOOTER = """The nightly build is green again.
_______________________________________________
Build-dev mailing list
https://example.org/mailman/listinfo/build-dev
"""
PGP = """-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA1

Patch attached for the flaky test.
>From now on please rebase first.

-----BEGIN PGP SIGNATURE-----
iD8DBQE9abc
-----END PGP SIGNATURE-----
"""
FORWARD = """Have a look at this one.

-----Original Message-----
From: Carol <carol@example.org>
Subject: outage

The server is down.
"""


@pytest.fixture()
def mbox(tmp_path):
    latin = "Merci pour le café, à bientôt.".encode("latin-1")
    html = "<html><style>p {color: red}</style><body><p>Lunch on Friday?</p><p>Bring the &amp; list</p></body></html>"
    messages = [
        _message("ann@example.org", "Tue, 27 Aug 2002 09:00:00 +0000", REPLY),
        _message("ann@example.org", "Mon, 26 Aug 2002 09:00:00 +0000", FOOTER),  # earlier: first in time order
        _message("bob@example.org", "Mon, 26 Aug 2002 08:00:00 +0000", PGP),
        _message("bob@example.org", "Tue, 27 Aug 2002 08:00:00 +0000", FORWARD),
        _message("cy@example.org", "Wed, 28 Aug 2002 08:00:00 +0000", base64.b64encode(latin).decode(),
                 content_type="text/plain; charset=iso-8859-1", encoding="base64"),
        _multipart("cy@example.org", "Thu, 29 Aug 2002 08:00:00 +0000", [
            "Content-Type: text/html; charset=us-ascii\n\n" + html,
            "Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=x.bin\n\nAAAA"]),
        _message("dee@example.org", "Thu, 29 Aug 2002 08:00:00 +0000",
                 quopri.encodestring("Caf\u00e9 tomorrow =) ok?".encode("utf-8")).decode(),
                 content_type="text/plain; charset=utf-8", encoding="quoted-printable"),
        _message("dee@example.org", "Fri, 30 Aug 2002 08:00:00 +0000", "> only a quote\n> nothing new\n"),
    ]
    path = tmp_path / "mail.mbox"
    path.write_text("".join(messages), encoding="latin-1")
    return str(path)


def test_reads_each_senders_own_text_in_time_order(mbox):
    corpus = load_corpus(mbox, "mbox")
    assert corpus.client_ids == ["ann@example.org", "bob@example.org", "cy@example.org", "dee@example.org"]
    ann = corpus.clients["ann@example.org"]
    assert ann == ["The nightly build is green again.", "Sounds good, see you at the standup.\n\nAnn"]
    bob = corpus.clients["bob@example.org"]
    assert bob == ["Patch attached for the flaky test.\nFrom now on please rebase first.", "Have a look at this one."]
    cy = corpus.clients["cy@example.org"]
    assert cy[0] == "Merci pour le café, à bientôt."
    assert cy[1].split() == ["Lunch", "on", "Friday?", "Bring", "the", "&", "list"]  # no CSS, no attachment
    assert corpus.clients["dee@example.org"] == ["Café tomorrow =) ok?"]
    # The all-quote message is not the sender's text: counted, not silently dropped.
    assert [s.reason for s in corpus.skipped] == ["empty text"] and "message 8" in corpus.skipped[0].where


def test_message_without_a_sender_is_a_bad_record_named_by_its_number(tmp_path):
    path = tmp_path / "bad.mbox"
    path.write_text(_message("ann@example.org", "Mon, 26 Aug 2002 09:00:00 +0000", "hello there")
                    + "From nobody Mon Aug 26 10:00:00 2002\nSubject: no sender\n\nwho am i\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.mbox: message 2: no From address.*--skip-bad"):
        load_corpus(str(path), "mbox")
    corpus = load_corpus(str(path), "mbox", skip_bad=True)
    assert corpus.clients == {"ann@example.org": ["hello there"]}
    assert [s.reason for s in corpus.skipped] == ["no From address"]


def test_a_file_that_is_not_an_mbox_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n", encoding="utf-8")
    with pytest.raises(DataError, match="not an mbox file"):
        load_corpus(str(path), "mbox")


def test_a_maildir_reads_as_the_same_mbox_does(mbox, tmp_path):
    """--format maildir: the same messages delivered to a Maildir give the same clients, records and skips."""
    import mailbox

    maildir = mailbox.Maildir(str(tmp_path / "Mail"), create=True)
    for message in mailbox.mbox(mbox, create=False):
        maildir.add(mailbox.MaildirMessage(message))
    maildir.close()
    from_mbox, from_maildir = load_corpus(mbox, "mbox"), load_corpus(str(tmp_path / "Mail"), "maildir")
    assert from_maildir.clients == from_mbox.clients
    assert [s.reason for s in from_maildir.skipped] == ["empty text"]
    with pytest.raises(DataError, match="not a Maildir"):
        load_corpus(mbox, "maildir")
    with pytest.raises(DataError, match="is a directory, not an mbox file"):
        load_corpus(str(tmp_path / "Mail"), "mbox")


def test_mail_with_no_usable_message_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "quotes.mbox"
    path.write_text(_message("ann@example.org", "Mon, 26 Aug 2002 09:00:00 +0000", "> only a quote\n"),
                    encoding="utf-8")
    with pytest.raises(DataError, match=r"quotes.mbox: the corpus has no clients with text"):
        load_corpus(str(path), "mbox")
    out = tmp_path / "run"
    assert main(["train", "--data", str(path), "--format", "mbox", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and not out.exists()


@pytest.mark.parametrize("body, kept", [
    ("Thanks!\n-- \nsig line", "Thanks!"),
    ("Thanks!\n\n-- whump\n\"a quote\"", "Thanks!"),
    ("Rules:\n----------\nnone in particular, really, just text", "Rules:\n----------\nnone in particular, really, "
                                                                 "just text"),  # a rule the writer typed
    ("Yes.\n\nBegin forwarded message:\n\nold text", "Yes."),
])
def test_own_text_cuts_signatures_and_forwards_but_keeps_the_writers_rules(body, kept):
    assert own_text(body) == kept


def test_html_to_text_keeps_visible_text_only():
    assert html_to_text("<p>a&lt;b</p><script>x=1</script><br>c").split() == ["a<b", "c"]


def test_data_stats_reads_mbox_through_the_cli(mbox, capsys):
    assert main(["data", "stats", "--data", mbox, "--format", "mbox", "--heldout-fraction", "0.25", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["clients"] == 4 and stats["skipped_by_reason"] == {"empty text": 1}


@pytest.mark.spamassassin
def test_spamassassin_ham_is_887_senders_of_real_mail():
    corpus = load_corpus(str(SPAMASSASSIN), "mbox")
    # 887 senders in the file; a sender whose every message is quotes or attachments has no text of its own.
    assert 850 <= len(corpus.client_ids) <= 887
    assert corpus.num_records + len(corpus.skipped) == 4150  # every message is a record or counted
    words = sum(len(s) for s in corpus.sentences())
    assert 500_000 < words < 900_000
    text = "\n".join(t for records in corpus.clients.values() for t in records)
    for leftover in ("\n>", "-----BEGIN PGP SIGNATURE-----", "-----Original Message-----"):
        assert leftover not in text


def test_leaf_parts_are_walks_leaves_in_order_and_stop_past_the_depth_limit():
    """The reader's own walk (no recursion) sees what Message.walk sees, and refuses what would exhaust it."""
    inner = _multipart("x@example.org", "Mon, 26 Aug 2002 08:00:00 +0000",
                       ["Content-Type: text/plain\n\nfirst", "Content-Type: text/html\n\n<p>second</p>"]
                       ).replace("b0undary", "inner")
    outer = _multipart("y@example.org", "Mon, 26 Aug 2002 09:00:00 +0000",
                       ["Content-Type: text/plain\n\nbefore", "Content-Type: message/rfc822\n\n"
                        + inner.split("\n", 1)[1], "Content-Type: text/plain\n\nafter"])
    message = email.message_from_string(outer.split("\n", 1)[1])
    walked = [p for p in message.walk() if not p.is_multipart()]
    assert [p.get_payload() for p in leaf_parts(message)] == [p.get_payload() for p in walked]
    assert [p.get_payload().strip() for p in walked] == ["before", "first", "<p>second</p>", "after"]
    with pytest.raises(MessageTooDeep, match="nested more than 1 deep"):
        list(leaf_parts(message, max_depth=1))

"""E-mail as a corpus: an mbox file read as what its senders typed, one sender = one client.

A message's own words are what a keyboard would have seen; everything else in
a raw e-mail is taken out, in this order:

1. MIME: the ``text/plain`` parts that are not attachments, decoded from
   base64 or quoted-printable in their declared charset (an unknown or wrong
   charset falls back to Latin-1, which decodes any byte); a message with no
   plain part uses its ``text/html`` part with tags, scripts and styles removed.
2. mboxrd escaping: a body line ``>From `` is the writer's ``From `` line.
3. Text the sender did not write: quoted replies (lines starting with ``>``,
   ``Ann>`` or ``| ``) and the attribution line above them ("On ... wrote:"),
   forwarded or included messages ("-----Original Message-----", "Begin forwarded
   message:"), PGP armour (signed-message headers and signature blocks), the
   signature after a ``-- `` line (or a short "-- Ann" near the end), the
   header block of an included message ("Subject: ..."), mailing-list footers
   (a rule of dashes, underscores or equals signs followed by list,
   unsubscribe or sponsor text), and the tails of wrapped quoted lines.

Records are each sender's messages in time order (the Date header; a message
without a readable date keeps its place after the one before it in the file),
so a per-user split can train on the past and test on the future.  A message
with no From address is a bad record; a message with no text of its own left
(only quotes, only an attachment) is counted in ``Corpus.skipped``.
No TensorFlow in this module.
"""

from __future__ import annotations

import datetime
import email.policy
import email.utils
import html
import html.parser
import mailbox
import os
import re

from keyboard_lm.data.corpus import Collector, Corpus
from keyboard_lm.errors import DataError

#: A quoted line: "> ...", Supercite's "Ann> ..." or "| ...".
_QUOTED = re.compile(r"^\s*([A-Za-z]{0,4}>|\|\s)")
_ATTRIBUTION = re.compile(r"(wrote|writes|said|schrieb|a écrit)\s*:\s*$", re.IGNORECASE)
_FORWARD = re.compile(r"^[\s>|]*(-{2,}\s*(original message|forwarded message|forwarded by)\b.*|begin forwarded message:"
                      r"|-{5,}\s*(begin included message|included message)\b.*)\s*$", re.IGNORECASE)
#: The header block of an included message ("From: ...", "Subject: ...") opens someone else's text.
_INCLUDED_HEADER = re.compile(r"^(From|Sent|Subject|Date|To):\s+\S")
#: "-- Ann" in the last lines: a signature delimiter with the name on the same line.
_SHORT_SIGNATURE = re.compile(r"^-- ?[^-\s].{0,40}$")
_RULE = re.compile(r"^\s*([-_=*~])\1{9,}\s*$")
_FOOTER_WORDS = re.compile(r"mailing list|unsubscribe|sponsored|listinfo|list-|yahoo! groups|sourceforge|"
                           r"https?://|mailman", re.IGNORECASE)
_PGP_HEADER = re.compile(r"^-----BEGIN PGP SIGNED MESSAGE-----\s*$")
_PGP_SIG = re.compile(r"^-----BEGIN PGP SIGNATURE-----\s*$")
_PGP_SIG_END = re.compile(r"^-----END PGP SIGNATURE-----\s*$")
_MBOXRD_FROM = re.compile(r"^>(>*From )")
#: A footer starts at a rule only this close to the end: a rule in the middle of a long message is the writer's.
FOOTER_LINES = 15


class _HTMLText(html.parser.HTMLParser):
    """The visible text of an HTML body: tags dropped, script and style skipped, block tags as line breaks."""

    BLOCKS = {"p", "br", "div", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "table"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document, one block per line."""
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    return html.unescape("".join(parser.parts))


def _decode(part) -> str:
    """A leaf MIME part's payload as text, in its declared charset (Latin-1 when unknown or wrong)."""
    payload = part.get_payload(decode=True)
    if payload is None:  # a malformed part: take what the message holds as text
        payload = str(part.get_payload()).encode("latin-1", "replace")
    charset = part.get_content_charset() or "us-ascii"
    try:
        return payload.decode(charset)
    except (LookupError, UnicodeDecodeError):
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            return payload.decode("latin-1")


#: The deepest MIME nesting read (multiparts and attached ``message/rfc822`` messages inside one another):
#: real mail nests a few levels (a forward of a forward); far deeper is a crafted file, and Python's
#: recursive parser and ``Message.walk`` would exhaust the stack on it.
MAX_MIME_DEPTH = 50


class MessageTooDeep(ValueError):
    """A message whose MIME parts nest deeper than ``MAX_MIME_DEPTH`` (or than the parser's stack)."""


def leaf_parts(message, max_depth: int = MAX_MIME_DEPTH):
    """The non-multipart parts of ``message`` in document order, as ``Message.walk`` gives them, without
    recursion; raises ``MessageTooDeep`` past ``max_depth`` levels of nesting."""
    stack = [(message, 0)]
    while stack:
        part, depth = stack.pop()
        if depth > max_depth:
            raise MessageTooDeep(f"MIME parts nested more than {max_depth} deep")
        if part.is_multipart():
            children = part.get_payload()
            stack.extend((child, depth + 1) for child in reversed(children if isinstance(children, list) else []))
        else:
            yield part


def body_text(message) -> str:
    """The plain text of a message: its inline ``text/plain`` parts, else its ``text/html`` parts as text.

    Raises ``MessageTooDeep`` for a message nested deeper than ``MAX_MIME_DEPTH``.
    """
    plain, markup = [], []
    for part in leaf_parts(message):
        if part.get_content_maintype() != "text":
            continue
        if (part.get("Content-Disposition") or "").strip().lower().startswith("attachment"):
            continue
        subtype = part.get_content_subtype()
        if subtype == "plain":
            plain.append(_decode(part))
        elif subtype == "html":
            markup.append(_decode(part))
    if plain:
        return "\n".join(plain)
    return "\n".join(html_to_text(m) for m in markup)


def own_text(body: str) -> str:
    """What the sender wrote: ``body`` without quotes, forwards, PGP armour, signature and list footer."""
    lines = [_MBOXRD_FROM.sub(r"\1", line) for line in body.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    kept: list[str] = []
    in_pgp_sig = False
    for i, line in enumerate(lines):
        if in_pgp_sig:
            in_pgp_sig = not _PGP_SIG_END.match(line)
            continue
        if _PGP_SIG.match(line):
            in_pgp_sig = True
            continue
        if _PGP_HEADER.match(line) or (kept == [] and re.match(r"^Hash: \w+\s*$", line)):
            continue
        if line.rstrip() in ("--", "-- ") or _FORWARD.match(line) or _INCLUDED_HEADER.match(line):
            break  # a signature or someone else's message follows
        if _SHORT_SIGNATURE.match(line) and len(lines) - i <= FOOTER_LINES:
            break
        if _RULE.match(line) and len(lines) - i <= FOOTER_LINES and _FOOTER_WORDS.search("\n".join(lines[i:])):
            break  # a list footer
        if 0 < i < len(lines) - 1 and _QUOTED.match(lines[i - 1]) and _QUOTED.match(lines[i + 1]):
            continue  # a quoted line the replying mailer wrapped: its tail lost the '>'
        if _QUOTED.match(line):
            while kept and not kept[-1].strip():
                kept.pop()
            if kept and _ATTRIBUTION.search(kept[-1]):
                kept.pop()  # "On Tue, Ann wrote:" belongs to the quote
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def sender(message) -> str | None:
    """The lower-cased address of the From header, or None."""
    address = email.utils.parseaddr(str(message.get("From") or ""))[1].strip().lower()
    return address or None


def _timestamp(message) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(str(message.get("Date") or ""))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # a date without a zone: read as UTC rather than as this machine's zone
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def _read_messages(messages, collector: Collector) -> dict[str, list[tuple[float, int, str, str]]]:
    """sender -> [(time, order, where, own text)] of ``messages`` ((where, message) pairs in file order)."""
    dated: dict[str, list[tuple[float, int, str, str]]] = {}
    last_time = float("-inf")
    for number, (where, message) in enumerate(messages, start=1):
        if isinstance(message, _Unparsed):
            collector.bad(where, "unreadable message", message.reason)
            continue
        who = sender(message)
        if who is None:
            collector.bad(where, "no From address", str(message.get("Message-ID") or "").strip())
            continue
        try:
            text = own_text(body_text(message))
        except MessageTooDeep as e:
            collector.bad(where, "unreadable message", str(e))
            continue
        when = _timestamp(message)
        last_time = last_time if when is None else when
        dated.setdefault(who, []).append((last_time, number, where, text))
    return dated


def _corpus(dated, collector: Collector, path: str, name: str, what: str) -> Corpus:
    if not dated and not collector.skipped:
        raise DataError(f"{path}: no messages found in the {what}")
    for who in sorted(dated):
        for _, _, where, text in sorted(dated[who], key=lambda m: (m[0], m[1])):
            collector.add(who, text, where, empty_ok=True)
    return collector.corpus(name)


class _Unparsed:
    """A message the parser could not read, in its place in the mailbox (a bad record, not a crash)."""

    def __init__(self, reason: str):
        self.reason = reason


def _parse(f):
    """The mailbox's message factory: a ``Message``, or ``_Unparsed`` when the parser runs out of stack."""
    try:
        return email.message_from_binary_file(f, policy=email.policy.compat32)
    except RecursionError:  # the parser recurses once per level of nested parts
        return _Unparsed("MIME parts nested too deeply to parse")


def load_mbox(path: str, skip_bad: bool = False) -> Corpus:
    """One client per sender address, one record per message (its own text), in time order.

    Raises DataError when ``path`` is not an mbox file, or (without
    ``skip_bad``) at the first message with no From address.
    """
    if os.path.isdir(path):
        raise DataError(f"{path}: is a directory, not an mbox file (a Maildir is read by --format maildir)")
    with open(path, "rb") as f:
        first = f.readline()
    if not first.startswith(b"From "):
        raise DataError(f"{path}: not an mbox file (its first line does not start with 'From ', which "
                        "separates messages in the mbox format)")
    collector = Collector(path, skip_bad)
    box = mailbox.mbox(path, factory=_parse, create=False)
    try:
        dated = _read_messages(((f"{path}: message {n}", m) for n, m in enumerate(box, start=1)), collector)
    finally:
        box.close()
    return _corpus(dated, collector, path, f"mbox:{os.path.basename(path)}", "mbox file")


def load_maildir(path: str, skip_bad: bool = False) -> Corpus:
    """A Maildir directory (``cur/``, ``new/``, ``tmp/``), read as ``load_mbox`` reads an mbox file.

    Messages are taken in the order of their file names (Maildir names start
    with the delivery time), then sorted per sender by their Date header.
    """
    if not all(os.path.isdir(os.path.join(path, d)) for d in ("cur", "new")):
        raise DataError(f"{path}: not a Maildir (expected the subdirectories cur/ and new/)")
    collector = Collector(path, skip_bad)
    box = mailbox.Maildir(path, factory=_parse, create=False)
    keys = sorted(box.keys())

    dated = _read_messages(((f"{path}: message {key}", box[key]) for key in keys), collector)
    return _corpus(dated, collector, path, f"maildir:{os.path.basename(os.path.normpath(path))}", "Maildir")

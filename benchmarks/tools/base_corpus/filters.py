"""Sentence filters of the base corpus: words a keyboard should never learn to suggest, and text of the
project's evaluation corpora.

Every record is split into sentences (``split_sentences``); a sentence is
dropped, and counted by reason, when

* ``profanity``: it holds an entry of the profanity list of the PyPI package
  better-profanity 0.7.0 (``wordlists/better_profanity_wordlist.txt``, MIT,
  see ``wordlists/NOTICE``), less ``ORDINARY_WORDS``: entries that are
  ordinary English a keyboard may suggest ("kill", "god", "virgin", "Fanny" of
  *Mansfield Park*, "Dink" of Dink Smallwood) and that would otherwise cost
  whole books of the Bible and of Austen;
* ``gore``: it holds a word of ``GORE_WORDS`` (bodily mutilation; ours);
* ``overlap_<corpus>``: it shares a word 8-gram with an evaluation corpus, or
  is (as a whole, at least 5 words) a sentence of one (``OverlapIndex``), so
  that no evaluation text is in the base even as a quotation: game texts
  quote Shakespeare and the Bible.

What is left of a record is kept when it still reads as prose
(``prose.prose_verdict``), else counted as ``filter_remainder``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from typing import Iterable, Iterator

from benchmarks.tools.base_corpus.prose import Record, Tally, clean_whitespace, prose_verdict
from keyboard_lm.errors import DataError

WORDLIST = os.path.join(os.path.dirname(__file__), "wordlists", "better_profanity_wordlist.txt")

#: Entries of the better-profanity list that are ordinary words or names (kept, not filtered).
ORDINARY_WORDS = frozenset("""
bestial bondage breasts cow girl cow girls cowgirl cowgirls crotch dink dinks doofus dopey drunk dummy
enlargement erect erection facial fanny fart fat fingering flange floozy fondle foobar foreskin gai ganja gay
gays gigolo glans god gonad gonads hell hemp heroin herp herpes hitler hiv hoar hoare homey hooch hookah hootch
hooter hump humped hymen inbred jerk jerked junkie junky kill kinky klan knob labia lech len leper lesbians
loin loins lube lust lusting lusty mams masochist maxi menses menstruate menstruation meth molest moron murder
naked napalm nappy nazi nazism niggle nimrod ninny nipple nipples nude nudes omg opiate opium oral orally organ
ovary ovum ovums paddy pantie panties panty pastie pasty pawn pcp pee penetrate penetration penial penile penis
perversion peyote phalli phallic playboy pms pollock poop pot potty prig prostitute prude pubic pubis punky
queer queers quicky racy rectal rectum rectus reich revue rum rump sadism sadist sandbar scantily screw screwed
screwing scrotum scum seaman seamen seduce semen sex sexual sissy slave sleaze sleazy slope snatch sniper snuff
sodom souse soused sperm spunk steamy stoned strip stroke stupid suck sucked sucking tampon tawdry teat teste
testee testes testical testicle testis thrust thug tinkle tit titi toke toots tramp transsexual trashy tush
ugly undies unwed urinal urine uterus uzi vagina valium viagra virgin vixen vodka vomit voyeur vulgar vulva wad
wang wazoo wedgie weed weenie weiner weirdo wench whiz willies willy womb woody xx xxx yury
""".split())

#: Mutilation and gore (ours): a keyboard should not offer these to complete a message.
GORE_WORDS = frozenset("""
disembowel disemboweled disembowelled disemboweling disembowelling disembowelment dismember dismembered
dismembering dismemberment decapitate decapitated decapitates decapitating decapitation eviscerate eviscerated
eviscerates eviscerating evisceration entrails gore gory mutilate mutilated mutilates mutilating mutilation
mutilations flay flayed flaying bloodbath gouged impale impaled impaling beheaded beheading viscera gibs gibbed
""".split())

_ABBREVIATIONS = frozenset("mr mrs ms dr st jr sr mt vs etc no gen col capt lt sgt rev prof e.g i.e".split())
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: a break after ``.``/``!``/``?`` (and closing quotes) before a capital or digit,
    except after a common abbreviation (``Mr.``, ``e.g.``)."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_BREAK.finditer(text):
        before = text[start:m.start()].rstrip("\"'”’)]")
        last = before.rsplit(None, 1)[-1].lower().rstrip(".") if before.strip() else ""
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def words(text: str) -> list[str]:
    """Lowercased word tokens (letters and digits, inner apostrophes) for n-gram matching."""
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _key(tokens) -> int:
    return int.from_bytes(hashlib.blake2b(" ".join(tokens).encode("utf-8"), digest_size=8).digest(), "little")


@dataclasses.dataclass(frozen=True)
class Blocklist:
    """Words and phrases whose sentences are dropped, each with its reason (``profanity``, ``gore``)."""

    words: dict
    prefixes: tuple
    phrases: dict

    @classmethod
    def load(cls, path: str = WORDLIST) -> "Blocklist":
        """The better-profanity list at ``path`` less ``ORDINARY_WORDS``, and ``GORE_WORDS``."""
        try:
            with open(path, encoding="utf-8") as f:
                entries = [line.strip().lower() for line in f if line.strip()]
        except OSError as e:
            raise DataError(f"{path}: cannot read the profanity word list: {e.strerror}") from None
        words_, prefixes, phrases = {}, [], {}
        for entry in entries:
            if entry in ORDINARY_WORDS:
                continue
            if entry.endswith("*"):
                prefixes.append((entry[:-1], "profanity"))
            elif " " in entry:
                phrases[tuple(entry.split())] = "profanity"
            else:
                words_[entry] = "profanity"
        for w in GORE_WORDS:
            words_.setdefault(w, "gore")
        return cls(words_, tuple(prefixes), phrases)

    def reason(self, sentence: str) -> str | None:
        """Why ``sentence`` is dropped, or None.  A token is matched whole (``f.u.c.k``, ``sh!t``) and by its
        letter runs (``ass-fucker`` -> ``fucker``); phrases on consecutive letter runs."""
        runs: list[str] = []
        for raw in sentence.lower().split():
            token = raw.strip("\"'“”‘’()[]{}<>,;:.?!…")
            hit = self.words.get(token)
            if hit:
                return hit
            parts = re.findall(r"[^\W_]+", token)
            for part in parts:
                hit = self.words.get(part)
                if hit:
                    return hit
                for prefix, reason in self.prefixes:
                    if part.startswith(prefix):
                        return reason
            runs.extend(parts)
        if self.phrases:
            for n in (2, 3):
                for i in range(len(runs) - n + 1):
                    hit = self.phrases.get(tuple(runs[i:i + n]))
                    if hit:
                        return hit
        return None


class OverlapIndex:
    """The word 8-grams and the whole sentences (>= 5 words) of the evaluation corpora, by corpus."""

    N = 8
    MIN_SENTENCE = 5

    def __init__(self):
        self.names: list[str] = []
        self.keys: dict[int, int] = {}  # key -> bit mask of the corpora holding it
        self.sentences_read: dict[str, int] = {}

    def add(self, name: str, texts: Iterable[str]) -> None:
        bit = 1 << len(self.names)
        self.names.append(name)
        count = 0
        for text in texts:
            for sentence in split_sentences(clean_whitespace(text)):
                count += 1
                for key in self._keys(words(sentence)):
                    self.keys[key] = self.keys.get(key, 0) | bit
        self.sentences_read[name] = count

    def _keys(self, tokens: list[str]) -> Iterator[int]:
        if self.MIN_SENTENCE <= len(tokens) < self.N:
            yield _key(["\x00sentence"] + tokens)
        for i in range(len(tokens) - self.N + 1):
            yield _key(tokens[i:i + self.N])

    def reason(self, sentence: str) -> str | None:
        """``overlap_<corpus>`` of the first corpus (in the order added) sharing text with ``sentence``."""
        mask = 0
        for key in self._keys(words(sentence)):
            mask |= self.keys.get(key, 0)
        if not mask:
            return None
        index = (mask & -mask).bit_length() - 1
        return f"overlap_{self.names[index]}"


def filter_records(records: Iterable[Record], tally: Tally, blocklist: Blocklist | None,
                   overlap: OverlapIndex | None) -> Iterator[Record]:
    """``records`` with the sentences that ``blocklist`` or ``overlap`` rejects dropped (module docstring)."""
    for doc, text in records:
        kept, dropped = [], False
        for sentence in split_sentences(text):
            reason = (blocklist.reason(sentence) if blocklist else None) or \
                (overlap.reason(sentence) if overlap else None)
            if reason:
                tally.drop(reason, sentence)
                dropped = True
            else:
                kept.append(sentence)
        if not dropped:
            yield doc, text
            continue
        rest = " ".join(kept)
        if rest and prose_verdict(rest) is None:
            yield doc, rest
        else:
            tally.drop("filter_remainder", rest)


def parse_overlap_spec(spec: str) -> tuple[str, str, str | None]:
    """``NAME=FORMAT:PATH`` (a corpus the project reads with ``--format FORMAT``) or ``default`` (the embedded
    corpus) -> (name, format, path)."""
    if spec == "default":
        return "default", "default", None
    name, eq, rest = spec.partition("=")
    fmt, colon, path = rest.partition(":")
    if not eq or not colon or not name or not fmt or not path:
        raise DataError(f"--overlap {spec!r}: expected NAME=FORMAT:PATH (e.g. tinyshakespeare=shakespeare:input.txt) "
                        "or default")
    return name, fmt, path


def load_overlap(specs: Iterable[tuple[str, str, str | None]]) -> tuple[OverlapIndex, dict]:
    """The ``OverlapIndex`` of the evaluation corpora ``specs`` (name, format, path), read as the project reads
    them (``keyboard_lm.data.corpora.load_corpus``), and what was read of each (for the report)."""
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.models.run_dir import sha256_file

    index, info = OverlapIndex(), {}
    for name, fmt, path in specs:
        if name in info:
            raise DataError(f"--overlap names {name!r} twice")
        corpus = load_corpus(path, fmt)
        texts = [t for cid in corpus.client_ids for t in corpus.clients[cid]]
        index.add(name, texts)
        info[name] = {"format": fmt, "file": os.path.basename(path) if path else None,
                      "sha256": sha256_file(path) if path and os.path.isfile(path) else None,
                      "records": len(texts), "sentences": index.sentences_read[name]}
    return index, info

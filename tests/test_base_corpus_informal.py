"""The informal sources of the base corpus (novels, fortunes, game dialogue), its sentence filters and its mix,
on small excerpts written here in each source's format (benchmarks/tools/base_corpus)."""

import glob
import gzip
import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

from benchmarks.tools.base_corpus import builder, filters, mix, texts_games, texts_gettext, texts_rdata
from benchmarks.tools.base_corpus.debs import DebSource
from benchmarks.tools.base_corpus.prose import Tally
from keyboard_lm.errors import ConfigError, DataError

pytestmark = pytest.mark.bench

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAKESPEARE = os.path.join(os.path.dirname(REPO), "shared", "data", "tinyshakespeare", "input.txt")


# ---- gettext catalogs

def write_mo(path, messages):
    """A GNU .mo file (little endian) of {msgid: msgstr}, as msgfmt writes it."""
    ids = sorted(messages)
    keys, values = [i.encode() for i in ids], [messages[i].encode() for i in ids]
    start = 28 + 16 * len(ids)
    data, table_o, table_t = b"", [], []
    for k in keys:
        table_o.append((len(k), start + len(data)))
        data += k + b"\0"
    for v in values:
        table_t.append((len(v), start + len(data)))
        data += v + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, len(ids), 28, 28 + 8 * len(ids), 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + b"".join(struct.pack("<2I", *e) for e in table_o + table_t) + data)


DIALOGUE = {
    "": "Project-Id-Version: game 1.0\n",
    "I'm sure you can find bleach in most homes.": "Jestem pewien...",
    "menu\x04Quit the game and go back to the desktop": "Wyjdź",
    "You see one zombie.\x00You see many zombies.": "Widzisz zombie.",
    "<color_red>Run!</color> They are coming for us right now.": "Uciekaj!",
    "Hello, <npcname>. Good to see you again, my old friend.\n\nWhere have you been all this time?": "Cześć",
    "%s damage dealt": "%s obrażeń",
}


def test_mo_reader_reads_msgids_without_header_context_or_plural(tmp_path):
    path = tmp_path / "pl/LC_MESSAGES/game.mo"
    write_mo(path, DIALOGUE)
    ids = texts_gettext.read_mo(str(path))
    assert "Quit the game and go back to the desktop" in ids and "You see one zombie." in ids
    assert "" not in ids and not any("\x04" in i or "\x00" in i for i in ids)
    (tmp_path / "bad.mo").write_bytes(b"not a catalog at all, no")
    with pytest.raises(DataError, match="bad.mo: not a gettext .mo file"):
        texts_gettext.read_mo(str(tmp_path / "bad.mo"))


def test_gettext_source_is_the_union_of_languages_without_markup_or_placeholders(tmp_path):
    root = tmp_path / "game-data"
    write_mo(root / "usr/share/locale/pl/LC_MESSAGES/game.mo", DIALOGUE)
    write_mo(root / "usr/share/locale/de/LC_MESSAGES/game.mo", {"Only the German team translated this line.": "x"})
    tally = Tally()
    records = list(texts_gettext.extract_gettext(str(root), "game-data", tally))
    texts = {t for _, t in records}
    assert "Only the German team translated this line." in texts  # the union of the catalogs
    assert "Run! They are coming for us right now." in texts  # colour tags removed
    assert "Where have you been all this time?" in texts  # one record a line
    assert not any("npcname" in t or "%s" in t for t in texts)
    assert tally.dropped["placeholder"][0] == 2 and tally.files_read == 2
    assert all(d.startswith("game-data/game/") for d, _ in records)


# ---- Endless Sky and fortunes

ENDLESS_SKY = '''mission "Intro [1 Transport]"
\tname "Transport family to <planet>"
\tdescription `Bring this family of four to <planet>, where they hope to start a new life.`
\ton offer
\t\tconversation
\t\t\t`As you land, James says, "Congrats on your first trip through hyperspace! I'm impressed."`
\t\t\tchoice
\t\t\t\t`\t"Yeah, I'm still kind of in shock over how much money I spent."`
\t\t\t\t\tgoto money
\t\t\t`\tHe grins. "I know the feeling."`

planet Earth
\tspaceport `The spaceport is crowded with tourists, traders and pilgrims from every world.`
\ttribute 1000 # a comment "not text"
'''


def test_endless_sky_keeps_conversation_and_descriptions_and_counts_names(tmp_path):
    data = tmp_path / "es/usr/share/games/endless-sky/data"
    data.mkdir(parents=True)
    (data / "intro missions.txt").write_text(ENDLESS_SKY, encoding="utf-8")
    tally = Tally()
    records = list(texts_games.extract_endless_sky(str(tmp_path / "es"), tally))
    assert records[0] == ("endless-sky-data/intro missions/mission Intro [1 Transport]",
                          'As you land, James says, "Congrats on your first trip through hyperspace! I\'m impressed."')
    assert ('endless-sky-data/intro missions/planet Earth',
            'The spaceport is crowded with tourists, traders and pilgrims from every world.') in records
    assert any("still kind of in shock" in t for _, t in records)
    assert tally.dropped["game_data"][0] == 2  # the mission's id and its name
    assert tally.dropped["placeholder"][0] == 1  # "... to <planet>, where ..."
    assert not any("comment" in t for _, t in records)


FORTUNES = """Cats are intended to teach us that not everything in nature has a function.
\t\t-- Garrison Keillor
%
The brain is a wonderful organ; it starts working the moment you get up
in the morning, and does not stop until you get to work.
%
Q:\tHow many programmers does it take to change a light bulb?
A:\tNone, that is a hardware problem.
"""


def test_fortunes_are_split_on_percent_lines_without_attributions(tmp_path):
    base = tmp_path / "f/usr/share/games/fortunes"
    base.mkdir(parents=True)
    (base / "work.u8").write_text(FORTUNES, encoding="utf-8")
    (base / "work").write_text(FORTUNES, encoding="latin-1")
    (base / "ethnic.u8").write_text("A joke about a people.\n%\n", encoding="utf-8")
    tally = Tally()
    records = list(texts_games.extract_fortunes(str(tmp_path / "f"), tally))
    assert [d for d, _ in records] == ["fortunes/work/1", "fortunes/work/2", "fortunes/work/3"]
    assert records[0][1] == "Cats are intended to teach us that not everything in nature has a function."
    assert "get up in the morning" in records[1][1]
    assert tally.dropped["attribution"][1] == 3
    assert tally.files_skipped["offensive_topic"] == 1 and tally.files_read == 1


# ---- R data (janeaustenr)

def _int(n):
    return struct.pack(">i", n)


def _chars(s):
    b = s.encode()
    return _int(9 | (1 << 15)) + _int(len(b)) + b  # CHARSXP, UTF-8


def _strs(values):
    return _int(16) + _int(len(values)) + b"".join(_chars(v) for v in values)


def _named(kind, items, names):
    """A named VECSXP (kind 19) of serialized items, its names as an attribute pairlist."""
    return (_int(kind | (1 << 9)) + _int(len(items)) + b"".join(items)
            + _int(2 | (1 << 10)) + _int(1) + _chars("names") + _strs(names) + _int(254))


def _serialize(item):
    return b"X\n" + _int(2) + _int(0x040201) + _int(0x020300) + item


def write_austen_tree(root, novels):
    base = root / "usr/lib/R/site-library/janeaustenr/data"
    base.mkdir(parents=True)
    rdb, offsets = b"", []
    for lines in novels.values():
        blob = _serialize(_strs(lines))
        block = struct.pack(">I", len(blob)) + zlib.compress(blob)
        offsets.append((len(rdb), len(block)))
        rdb += block
    variables = _named(19, [_int(13) + _int(2) + _int(o) + _int(n) for o, n in offsets], list(novels))
    index = _named(19, [variables, _int(254)], ["variables", "references"])
    (base / "Rdata.rdb").write_bytes(rdb)
    (base / "Rdata.rdx").write_bytes(gzip.compress(_serialize(index)))


PERSUASION = ["Persuasion", "", "by Jane Austen", "", "Chapter 1", "",
              "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who,",
              "for his own amusement, never took up any book but the Baronetage;", "",
              "Chapter 2", "", '"Well, Anne," said her father, "we must go to Bath."']


def test_austen_novels_are_read_from_the_r_lazyload_database(tmp_path):
    novels = {name: [f"{title}", "", "CHAPTER 1", "", f"The first sentence of {title} is short enough here."]
              for name, title in texts_rdata.AUSTEN_BOOKS.items()}
    novels["persuasion"] = PERSUASION
    write_austen_tree(tmp_path / "ja", novels)
    tally = Tally()
    records = list(texts_rdata.extract_janeausten(str(tmp_path / "ja"), tally))
    assert ("r-cran-janeaustenr/Persuasion/1", "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man "
            "who, for his own amusement, never took up any book but the Baronetage;") in records
    assert ("r-cran-janeaustenr/Persuasion/2", '"Well, Anne," said her father, "we must go to Bath."') in records
    assert len(records) == 7 and tally.dropped["heading"][0] == 7 and tally.dropped["front_matter"][0] == 7
    del novels["emma"]
    shutil.rmtree(tmp_path / "ja")
    write_austen_tree(tmp_path / "ja", novels)
    with pytest.raises(DataError, match="no data set emma"):
        list(texts_rdata.extract_janeausten(str(tmp_path / "ja")))


def test_r_unserialize_refuses_what_it_does_not_read():
    with pytest.raises(DataError, match="not an XDR R serialization"):
        texts_rdata.unserialize(b"A\n" + b"\0" * 20, "x.rds")
    with pytest.raises(DataError, match="type 3 "):
        texts_rdata.unserialize(_serialize(_int(3)), "x.rds")  # a closure


@pytest.mark.skipif(not glob.glob(os.path.join(REPO, "build/base_corpus_v2/debs/r-cran-janeaustenr_*.deb"))
                    or not shutil.which("dpkg-deb"),
                    reason="needs build/base_corpus_v2/debs/r-cran-janeaustenr_*.deb (benchmarks/tools/base_corpus.sh "
                           "downloads it) and dpkg-deb")
def test_the_real_janeaustenr_package_holds_six_novels(tmp_path):
    deb = glob.glob(os.path.join(REPO, "build/base_corpus_v2/debs/r-cran-janeaustenr_*.deb"))[0]
    subprocess.run(["dpkg-deb", "-x", deb, str(tmp_path)], check=True)
    records = list(texts_rdata.extract_janeausten(str(tmp_path)))
    assert {d.split("/")[1] for d, _ in records} == set(texts_rdata.AUSTEN_BOOKS.values())
    assert 700_000 < sum(len(t.split()) for _, t in records) < 730_000
    assert records[0][1].startswith("Emma Woodhouse, handsome, clever, and rich")


# ---- filters

def test_sentences_split_after_terminators_but_not_after_abbreviations():
    assert filters.split_sentences('Mr. Knightley came. "Why, pretty well!" she said. Yes? No.') == \
        ["Mr. Knightley came.", '"Why, pretty well!" she said.', "Yes?", "No."]


@pytest.mark.parametrize("sentence, reason", [
    ("What the fuck is that thing over there?", "profanity"),
    ("You utter ass-fucker, get out of here.", "profanity"),
    ("I saw a blow job advert.", "profanity"),
    ("The zombie was disemboweled by the blast.", "gore"),
    ("Fanny Price had been sent to Mansfield Park.", None),  # a name, kept
    ("Thou shalt not kill.", None),
    ("Dink Smallwood says hello to the pigs.", None),
])
def test_blocklist_drops_profanity_and_gore_but_keeps_ordinary_words(sentence, reason):
    assert filters.Blocklist.load().reason(sentence) == reason


def test_overlap_drops_shared_8grams_and_whole_sentences_and_names_the_corpus():
    index = filters.OverlapIndex()
    index.add("plays", ["First Citizen: Before we proceed any further, hear me speak. Speak, speak, speak now."])
    index.add("mail", ["Thanks for the quick reply, see you at the meeting."])
    assert index.reason("And so, before we proceed any further, hear me speak of it.") == "overlap_plays"
    assert index.reason("Thanks for the quick reply, see you!") is None  # 7 words shared, not 8
    assert index.reason("thanks for the QUICK reply; see you at the meeting") == "overlap_mail"
    assert index.reason("Before we proceed, a word.") is None


def test_filter_records_drops_sentences_and_counts_them_by_reason():
    index = filters.OverlapIndex()
    index.add("plays", ["Now is the winter of our discontent made glorious summer by this sun of York."])
    records = [("d/1", "We set off at dawn. Now is the winter of our discontent made glorious summer, they said. "
                       "The road was long and dusty."),
               ("d/2", "Shit, this is bad."),
               ("d/3", "The caravan reached the river before noon today.")]
    tally = Tally()
    kept = list(filters.filter_records(records, tally, filters.Blocklist.load(), index))
    assert kept == [("d/1", "We set off at dawn. The road was long and dusty."), records[2]]
    assert tally.dropped["overlap_plays"][0] == 1 and tally.dropped["profanity"][0] == 1


def test_the_embedded_corpus_is_in_the_overlap_index():
    from keyboard_lm.data.corpora import load_corpus

    corpus = load_corpus(None, "default")
    long = next(t for c in corpus.client_ids for t in corpus.clients[c] if len(filters.words(t)) >= 9)
    index, info = filters.load_overlap([("default", "default", None)])
    assert index.reason(long) == "overlap_default" and info["default"]["records"] == corpus.num_records


@pytest.mark.shakespeare
@pytest.mark.skipif(not os.path.exists(SHAKESPEARE), reason="needs ../shared/data/tinyshakespeare/input.txt")
def test_a_shakespeare_quotation_in_game_text_is_dropped():
    index, info = filters.load_overlap([("tinyshakespeare", "shakespeare", SHAKESPEARE)])
    assert info["tinyshakespeare"]["sha256"] and info["tinyshakespeare"]["sentences"] > 10_000
    quote = "The old sage says: Now is the winter of our discontent made glorious summer by this sun of York."
    assert index.reason(quote) == "overlap_tinyshakespeare"


@pytest.mark.parametrize("spec", ["shakespeare:input.txt", "tiny=shakespeare", "=mbox:x"])
def test_bad_overlap_specs_are_named(spec):
    with pytest.raises(DataError, match="expected NAME=FORMAT:PATH"):
        filters.parse_overlap_spec(spec)


# ---- the mix

def test_word_caps_keep_every_source_and_kind_under_its_share():
    available = {"docs": 5000, "dict": 3000, "austen": 700, "game": 900, "quotes": 400}
    kinds = {"docs": "technical", "dict": "dictionary", "austen": "novel", "game": "game", "quotes": "quotes"}
    config = mix.MixConfig(0.3, (("dictionary", 0.1),))
    caps = mix.word_caps(available, kinds, config)
    total = sum(caps.values())
    assert all(caps[s] <= available[s] for s in caps)
    assert max(caps.values()) <= 0.3 * total + 1 and caps["dict"] <= 0.1 * total + 1
    assert caps["austen"] == 700 and caps["quotes"] == 400  # small sources untouched
    assert mix.mix_report(caps, kinds)["informal_share"] > 0.5


@pytest.mark.parametrize("source_share, kinds, message", [
    (0.0, (), "max_source_share must be in"),
    (1.5, (), "max_source_share must be in"),
    (None, (("poetry", 0.1),), "unknown kind 'poetry'"),
    (None, (("bible", 0.1), ("bible", 0.2)), "names a kind twice"),
])
def test_bad_mix_configs_are_refused(source_share, kinds, message):
    with pytest.raises(ConfigError, match=message):
        mix.MixConfig(source_share, kinds)


def test_build_filters_caps_and_reports_the_mix(tmp_path):
    base = tmp_path / "fortunes/usr/share/games/fortunes"
    base.mkdir(parents=True)
    fortunes = [f"Fortune number {i} says that the sea is calm and the wind is kind today." for i in range(40)]
    fortunes += ["Damn, the shit hit the fan again today at the office.",
                 "Now is the winter of our discontent made glorious summer by this sun of York."]
    (base / "misc.u8").write_text("\n%\n".join(fortunes) + "\n", encoding="utf-8")
    data = tmp_path / "es/usr/share/games/endless-sky/data"
    data.mkdir(parents=True)
    (data / "m.txt").write_text(ENDLESS_SKY, encoding="utf-8")
    index = filters.OverlapIndex()
    index.add("plays", ["Now is the winter of our discontent made glorious summer by this sun of York."])
    sources = (DebSource("fortunes", texts_games.extract_fortunes, kind="quotes"),
               DebSource("endless-sky-data", texts_games.extract_endless_sky, kind="game"))
    def build(out):
        return builder.build(str(tmp_path / out), roots={"fortunes": str(tmp_path / "fortunes"),
                                                         "endless-sky-data": str(tmp_path / "es")},
                             sources=sources, blocklist=filters.Blocklist.load(), overlap=index,
                             overlap_info={"plays": {"records": 1}}, mix=mix.MixConfig(0.7))

    report = build("out")
    assert build("again")["corpus_sha256"] == report["corpus_sha256"]  # reproducible
    assert report["filtered"]["profanity"]["records"] == 1 and report["filtered"]["overlap_plays"]["records"] == 1
    assert report["sources"]["fortunes"]["share"] <= 0.7 + 0.01
    assert report["sources"]["fortunes"]["dropped"]["cap"]["words"] > 0
    assert report["mix"]["informal_share"] == 1.0
    assert report["rules"]["overlap"]["ngram"] == 8 and report["rules"]["mix"]["max_source_share"] == 0.7
    lines = (tmp_path / "out/corpus.jsonl").read_text().splitlines()
    assert sum(len(json.loads(x)["text"].split()) for x in lines) == report["totals"]["words"]
    assert not any("shit" in x or "winter of our" in x for x in lines)


CRAWL_SPEECH = """##############################
# monster speech
%%%%
_shouts_

shouts

yells
%%%%
Orc Donald

@The_monster@ says @to_foe@, "I hate complainers so much."

w:5
@The_monster@ whispers @to_foe@, "The wrath of @my_God@ will be yours."

I keep getting this feeling like someone's watching me. Creepy.
%%%%
"""
CRAWL_QUOTES = """%%%%
ghost moth

"Always in focus, you can't feel my stare.
I zoom into you, you don't know I'm there."
    -Judas Priest, "Electric Eye". 1982.
%%%%
"""


def test_crawl_keeps_speech_and_descriptions_without_templates(tmp_path):
    dat = tmp_path / "crawl/usr/share/crawl/dat"
    (dat / "database/pl").mkdir(parents=True)
    (dat / "database/pl/monspeak.txt").write_text(CRAWL_SPEECH, encoding="utf-8")
    (dat / "database/monspeak.txt").write_text(CRAWL_SPEECH, encoding="utf-8")
    (dat / "descript").mkdir()
    (dat / "descript/quotes.txt").write_text(CRAWL_QUOTES, encoding="utf-8")
    tally = Tally()
    records = list(texts_games.extract_crawl(str(tmp_path / "crawl"), tally))
    assert records == [
        ("crawl-common/monspeak/Orc Donald", "I hate complainers so much."),
        ("crawl-common/monspeak/Orc Donald", "I keep getting this feeling like someone's watching me. Creepy."),
        ("crawl-common/quotes/ghost moth",
         '"Always in focus, you can\'t feel my stare. I zoom into you, you don\'t know I\'m there."')]
    assert tally.dropped["placeholder"][0] == 1 and tally.dropped["attribution"][0] == 1
    assert tally.files_skipped["other_language"] == 1 and tally.files_read == 2


def test_the_download_script_lists_every_package_once_with_its_pinned_version():
    import re

    from benchmarks.tools.base_corpus import debs

    with open(os.path.join(REPO, "benchmarks/tools/base_corpus.sh"), encoding="utf-8") as f:
        script = f.read()
    listed = re.search(r"\npackages=\((.*?)\)", script, re.S).group(1).split()
    pinned = re.findall(r'"([^"=]+)=[^"]+"', re.search(r"\npinned=\((.*?)\)\n", script, re.S).group(1))
    assert listed == pinned == list(debs.packages())

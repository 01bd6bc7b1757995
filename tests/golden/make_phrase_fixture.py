"""Regenerate the phrase-table golden model and ``phrase_fixture.json`` (run by hand).

    .venv/bin/python tests/golden/make_phrase_fixture.py

Model (``phrases/cifg_phrases.tflite``): the golden ``models/cifg_dynamic-range.tflite`` with a phrase
table in its archive, as the exporter writes one (``phrases.bin`` stored uncompressed, the metadata's
"phrases" object, the archive sealed again with ``model_file.seal``). Its flatbuffer and vocabulary are the
golden model's, so every model answer is the one the predictor fixture pins; it lives beside models/, not in
it, because everything there is taken for a model alone (predictor_fixture.json, the Java golden tests).
The table is ``PhraseTable.build`` over plain-Python counts of the embedded default corpus (one user per
conversation; distinct users per (context, next word) pair and per context, both at least K_USERS), with
the fixed gate GATE. The archive's entries carry a fixed date, so the bytes depend only on the inputs.

Fixture (``phrase_fixture.json``): for every case in CASES (contexts with and without a table match,
sentence starts, completions with a prefix, contexts that cross a training chunk of seq_len inputs, a
blocklisted table word, a user history learnt from a few sentences), the strip the Python predictor's
streaming session gives (words and probabilities), the table's entry there, and the strip of the same
session over the golden model without a table; also FNV-1a hashes and table lookups on fixed vectors.
tests/test_phrase_parity.py checks that the committed files are what this script and the current Python
predictor give; the Java core's PhraseParityGoldenTest reads the same files.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BASE = HERE / "models" / "cifg_dynamic-range.tflite"
MODEL = HERE / "phrases" / "cifg_phrases.tflite"
FIXTURE = HERE / "phrase_fixture.json"
K_USERS = 2
#: Weight by context length (rows 1..4) and users (buckets below 4, 4-15, 16-63, 64 and more); a unigram
#: context typed by fewer than 4 users gets no say (weight 0), so the fixture has a stored context that
#: does not match.
GATE = {"bounds": [4, 16, 64], "weights": [[0.0, 0.1, 0.2, 0.3], [0.2, 0.3, 0.4, 0.5], [0.3, 0.4, 0.5, 0.6],
                                            [0.4, 0.5, 0.6, 0.7]]}
#: The archive's entries' date (zip needs one; a fixed one keeps the bytes reproducible).
ZIP_DATE = (2024, 1, 1, 0, 0, 0)
K = 3
_LONG = ("i think that you are a very good friend and i would like to know what you do when you are not at work "
         "and how you like it")
#: The cases, each named. "context": the committed text; "prefix": letters typed (a completion); "history":
#: sentences a UserHistory learnt first (the session does not learn the context); "blocklist": the
#: predictor's; "k": the strip's length (default K).
CASES = [
    {"name": "sentence start", "context": ""},
    {"name": "sentence start after a terminator", "context": "i like it. "},
    {"name": "sentence start, a blocklisted table word", "context": "", "blocklist": ["my"]},
    {"name": "bigram context", "context": "do you"},
    {"name": "trigram context from the sentence start", "context": "what is"},
    {"name": "four-word context", "context": "my printer is"},
    {"name": "four-word context, longer sentence", "context": "check if it's plugged in and hold the power"},
    {"name": "unigram context", "context": "tell"},
    {"name": "mixed case and punctuation", "context": "Hello, how ARE you?  How"},
    {"name": "a word outside the vocabulary ends the context", "context": "do you zorblaxian"},
    {"name": "a word outside the vocabulary inside the context", "context": "zorblaxian do you"},
    {"name": "no stored context", "context": "robots probably"},
    {"name": "a stored unigram context without weight", "context": "that is so complex"},
    {"name": "19 words: the last position of the first chunk", "context": " ".join(_LONG.split()[:19])},
    {"name": "20 words: the state restarted before the last word", "context": " ".join(_LONG.split()[:18]) + " do you"},
    {"name": "a context cut by the state restart",
     "context": " ".join(_LONG.split()[:18]) + " my printer is"},
    {"name": "long context past one chunk", "context": _LONG},
    {"name": "long context past two chunks", "context": " ".join([_LONG] * 2) + " what is"},
    {"name": "eight suggestions", "context": "what is", "k": 8},
    {"name": "completion of a table word", "context": "what is", "prefix": "y"},
    {"name": "completion at a sentence start", "context": "", "prefix": "m"},
    {"name": "completion, upper case prefix", "context": "do you", "prefix": "K"},
    {"name": "completion no table word starts with", "context": "what is", "prefix": "n"},
    {"name": "completion without a table match", "context": "robots probably", "prefix": "th"},
    {"name": "history and table", "context": "what is",
     "history": [["what", "is", "your", "name"], ["what", "is", "zorblax"], ["do", "you", "like", "zorblax"]]},
    {"name": "history and table, completion", "context": "what is", "prefix": "y",
     "history": [["what", "is", "your", "name"], ["what", "is", "yonderish"], ["what", "is", "yonderish"]]},
    {"name": "history at a sentence start", "context": "",
     "history": [["zorblax", "is", "here"], ["my", "name"], ["zorblax"]], "k": 5},
    {"name": "history without a table match", "context": "robots probably",
     "history": [["robots", "probably", "zorblax"], ["probably", "zorblax"], ["probably", "zorblax"],
                 ["probably", "friend"]]},
]
#: Ids whose FNV-1a context hash the Java core must compute as Python does.
HASH_VECTORS = [[], [0], [1], [1, 2], [1, 6, 12], [399, 0, 65535, 7], [2 ** 31 - 1], [123456789, 42]]


def _encoded_users(vocab) -> dict:
    sys.path.insert(0, str(REPO))
    from keyboard_lm.data.corpora import load_corpus

    corpus = load_corpus(None, "default")
    return {c: [vocab.encode(s) for s in corpus.sentences([c])] for c in corpus.client_ids}


def phrase_counts(sentences_by_user: dict, max_order: int = 4, k: int = K_USERS):
    """Distinct users per (context, next) pair and per context: tests/test_phrase_table.py's reference counts."""
    sys.path.insert(0, str(REPO))
    from tests.test_phrase_table import reference_counts

    counts = reference_counts(sentences_by_user, max_order, k)
    counts.info = {"k": k, "source": "embedded default corpus, one user per conversation"}
    return counts


def build_table(vocab):
    """The golden table: the default TableConfig over the corpus counts; <pad>, <bos> and <oov> never follow."""
    from keyboard_lm.text.phrase_table import PhraseTable
    from keyboard_lm.text.spec import SPECIAL_TOKENS as SP

    return PhraseTable.build(phrase_counts(_encoded_users(vocab)), len(vocab),
                             exclude=[SP.pad_id, SP.bos_id, SP.oov_id])


def phrases_metadata(table, data: bytes) -> dict:
    """The metadata's "phrases" object, as the exporter writes it (keyboard_lm/export/tflite_export.py run_phrases)."""
    return {"file": "phrases.bin", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "contexts": len(table), "entries": int(len(table.ids)), "max_order": table.max_order, "gate": GATE,
            "discovery": {"k": K_USERS, "source": "tests/golden/make_phrase_fixture.py (plain counts, no noise)"}}


def build_model() -> bytes:
    """BASE with the table in its archive, sealed."""
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference.model_file import ModelFile, seal

    vocab = ModelFile.load(str(BASE)).vocab
    table = build_table(vocab)
    data = table.to_bytes()
    base = BASE.read_bytes()
    with zipfile.ZipFile(io.BytesIO(base)) as z:
        start = min(i.header_offset for i in z.infolist())
        meta = json.loads(z.read("keyboard_lm.json"))
        vocab_text = z.read("vocab.txt")
    meta["phrases"] = phrases_metadata(table, data)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, payload, method in (("keyboard_lm.json", json.dumps(meta, indent=1, sort_keys=True).encode(),
                                       zipfile.ZIP_DEFLATED),
                                      ("vocab.txt", vocab_text, zipfile.ZIP_DEFLATED),
                                      ("phrases.bin", data, zipfile.ZIP_STORED)):
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = method
            z.writestr(info, payload)
    return seal(base[:start] + buf.getvalue())


def _strip(predictor, case: dict) -> tuple[list, object]:
    """(the strip, the session) of a session of ``predictor`` after the case's context."""
    from keyboard_lm.inference.user_history import UserHistory

    history = None
    if case.get("history"):
        history = UserHistory()
        for sentence in case["history"]:
            prev = None
            for word in sentence:
                history.learn_word(prev, word)
                prev = word
    s = predictor.session(history=history, learn=False)
    s.commit(case["context"])
    k = case.get("k", K)
    strip = s.complete(case["prefix"], k) if case.get("prefix") is not None else s.suggestions(k)
    return strip, s


def fixture_cases(model_path: Path) -> list[dict]:
    """Each case with the Python predictor's answers over ``model_path`` and over BASE (no table)."""
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference import Predictor

    predictors: dict = {}

    def predictor(path, blocklist):
        key = (str(path), tuple(blocklist))
        if key not in predictors:
            predictors[key] = Predictor.load(str(path), blocklist=list(blocklist))
        return predictors[key]

    out = []
    for case in CASES:
        blocklist = case.get("blocklist", [])
        p = predictor(model_path, blocklist)
        strip, s = _strip(p, case)
        plain, _ = _strip(predictor(BASE, blocklist), case)
        found = p.ranker.phrases.lookup(s._context)
        match = s._phrase()
        out.append({**{key: case.get(key) for key in ("name", "context", "prefix", "history")},
                    "k": case.get("k", K), "blocklist": blocklist,
                    "context_ids": [int(i) for i in s._context],
                    "stored": None if found is None else {"n": found[0], "users": found[1],
                                                          "words": [p.vocab.token_of(i) for i in found[2].tolist()]},
                    "weight": 0.0 if match is None else match.weight,
                    "history_share": s._history_share(),
                    "words": [w for w, _ in strip], "probabilities": [float(x) for _, x in strip],
                    "without_table": {"words": [w for w, _ in plain], "probabilities": [float(x) for _, x in plain]}})
    return out


def lookup_vectors(table, cases: list[dict]) -> list[dict]:
    """Table lookups on fixed contexts: a few by hand (-1 is a word outside the vocabulary, 3 is <oov>), each
    case's context and the same with its first id unknown."""
    contexts = [[1], [1, 6], [8, 7, -1], [-1, 1], [], [3], [3, 3, 3, 3, 3]]
    for case in cases:
        contexts += [case["context_ids"], [-1, *case["context_ids"][1:]]]
    out = []
    for ids in contexts:
        found = table.lookup(ids)
        out.append({"ids": ids, "found": None if found is None else
                    {"n": found[0], "users": found[1], "ids": found[2].tolist(), "q": [float(x) for x in found[3]]}})
    return out


def build_fixture(model_path: Path = MODEL) -> dict:
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference.model_file import ModelFile
    from keyboard_lm.text.phrase_table import context_hash

    model = ModelFile.load(str(model_path))
    cases = fixture_cases(model_path)
    return {"model": model_path.relative_to(HERE).as_posix(), "base_model": BASE.relative_to(HERE).as_posix(),
            "seq_len": model.seq_len, "contexts": len(model.phrases), "entries": int(len(model.phrases.ids)),
            "gate": GATE, "order": "score descending, ties by spelling; the model alone: log-prob, ties by id",
            "hashes": [{"ids": ids, "hash": context_hash(ids)} for ids in HASH_VECTORS],
            "lookups": lookup_vectors(model.phrases, cases), "cases": cases}


def main() -> None:
    sys.path.insert(0, str(REPO))
    from keyboard_lm.durable import replace_file

    MODEL.parent.mkdir(parents=True, exist_ok=True)
    replace_file(str(MODEL), build_model(), mode=0o644)
    replace_file(str(FIXTURE), (json.dumps(build_fixture(), indent=1, ensure_ascii=False) + "\n").encode("utf-8"),
                 mode=0o644)
    print(f"wrote {MODEL.relative_to(REPO)} ({MODEL.stat().st_size} bytes) and {FIXTURE.relative_to(REPO)}")


if __name__ == "__main__":
    main()

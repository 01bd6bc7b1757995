"""The phrase table: its file format, the ranker's merge, a session and an exported file that carry a table."""

from __future__ import annotations

import collections
import json
import os
import shutil
import zipfile

import numpy as np
import pytest

from keyboard_lm.inference.model_file import ModelFile, ModelFileError, end_record, seal
from keyboard_lm.inference.predictor import Predictor
from keyboard_lm.inference.ranker import PhraseGate, PhraseMatch, Ranker
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text.phrase_table import (PhraseCounts, PhraseTable, PhraseTableError, TableConfig,
                                           context_hash)
from keyboard_lm.text.spec import SPECIAL_TOKENS as SP
from keyboard_lm.text.vocabulary import Vocabulary

GATE = PhraseGate((4, 16, 64), ((0.3,) * 4, (0.5,) * 4, (0.6,) * 4, (0.7,) * 4))


def reference_counts(sentences_by_user: dict, max_order: int = 4, k: int = 1) -> PhraseCounts:
    """Distinct users per (context, next) pair and per context, every pair of every user (no bound)."""
    pairs, contexts = collections.Counter(), collections.Counter()
    for sentences in sentences_by_user.values():
        mine, ctxs = set(), set()
        for s in sentences:
            s = [SP.bos_id, *s, SP.eos_id]
            for i in range(1, len(s)):
                for n in range(1, max_order + 1):
                    ctx = tuple(s[max(0, i - n):i])
                    if len(ctx) < n or SP.oov_id in ctx or s[i] == SP.oov_id:
                        break
                    mine.add((ctx, s[i]))
                    ctxs.add(ctx)
        pairs.update(mine)
        contexts.update(ctxs)
    return PhraseCounts({c: u for c, u in contexts.items() if u >= k}, {p: u for p, u in pairs.items() if u >= k})


def small_table(vocab_size=50):
    counts = PhraseCounts(contexts={(1, 5): 10, (5,): 100, (7, 8, 9): 3},
                          pairs={((1, 5), 7): 6, ((1, 5), 8): 3, ((5,), 9): 40, ((5,), 7): 1, ((7, 8, 9), 4): 3})
    return PhraseTable.build(counts, vocab_size)


# -- the format ---------------------------------------------------------------------------------------------------
def test_a_table_reads_back_what_was_written_and_finds_the_longest_context():
    table = small_table()
    again = PhraseTable.from_bytes(table.to_bytes(), 50)
    n, users, ids, q = again.lookup([0, 1, 5])
    assert (n, users, ids.tolist()) == (2, 10, [7, 8]) and q.tolist() == pytest.approx([0.6, 0.298], abs=0.002)
    assert again.lookup([3, 5])[:3] == (1, 100, again.lookup([5])[2])
    assert again.lookup([5, 3]) is None  # no stored context ends with 3
    assert again.lookup([7, 8, 9])[0] == 3
    assert again.size_bytes == len(table.to_bytes())


def test_the_hash_is_fnv1a_over_little_endian_u32s():
    # The Java core computes the same: n, then each id, 4 bytes each, FNV-1a 32.
    h = 0x811C9DC5
    for b in (2).to_bytes(4, "little") + (1).to_bytes(4, "little") + (2).to_bytes(4, "little"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    assert context_hash([1, 2]) == h


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:10], "shorter than"),
    (lambda b: b"XXXX" + b[4:], "not a phrase table"),
    (lambda b: b[:4] + (9).to_bytes(2, "little") + b[6:], "version 9"),
    (lambda b: b + b"\0", "need"),
    (lambda b: b[:-1], "need"),
])
def test_a_damaged_table_is_refused_in_one_line(damage, message):
    with pytest.raises(PhraseTableError, match=message):
        PhraseTable.from_bytes(damage(small_table().to_bytes()), 50, "t.bin")


def test_a_table_for_another_vocabulary_is_refused():
    data = small_table(50).to_bytes()
    with pytest.raises(PhraseTableError, match="vocabulary of 50 words, the model has 60"):
        PhraseTable.from_bytes(data, 60, "t.bin")
    with pytest.raises(PhraseTableError, match="outside the vocabulary"):
        PhraseTable.build(PhraseCounts({}, {((1,), 70): 3}), 50)


def test_the_byte_budget_keeps_the_most_used_contexts():
    counts = PhraseCounts({(i,): 100 - i for i in range(4, 40)}, {((i,), 3): 100 - i for i in range(4, 40)})
    table = PhraseTable.build(counts, 50, TableConfig(max_bytes=20 + 10 * 5))
    assert len(table) == 5 and table.size_bytes <= 70
    assert sorted(int(table.lookup([i])[1]) for i in range(4, 9)) == [92, 93, 94, 95, 96]


# -- the merge ----------------------------------------------------------------------------------------------------
def _brute(vocab, p_model, match, hist, a, prefix, k):
    scores = {}
    q = dict(zip(match.ids.tolist(), match.q.tolist())) if match else {}
    lam = match.weight if match else 0.0
    for i, w in enumerate(vocab.tokens):
        if i in SP.ids or not w.startswith(prefix):
            continue
        scores[w] = (1 - a) * ((1 - lam) * p_model[i] + lam * q.get(i, 0.0)) + a * hist.get(w, 0.0)
    for w, h in hist.items():
        if w not in vocab and w.startswith(prefix):
            scores[w] = a * h
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@pytest.mark.parametrize("seed", range(25))
def test_the_merge_equals_scoring_every_word(seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i:02d}" for i in range(40)]
    vocab = Vocabulary.from_sentences([words], 100)
    ranker = Ranker(vocab)
    logits = rng.normal(size=len(vocab)) * 2
    log_probs = (logits - np.log(np.exp(logits).sum())).astype(np.float32)
    p = np.exp(log_probs.astype(np.float64))
    ids = rng.choice(np.arange(len(SP.tokens), len(vocab)), size=3, replace=False)
    match = PhraseMatch(2, 10, ids, rng.dirichlet(np.ones(4))[:3], float(rng.uniform(0.1, 0.9)))
    history = UserHistory()
    for _ in range(int(rng.integers(0, 30))):
        history.learn_word(None, str(rng.choice(words + ["mine", "wonder"])))
    a = float(rng.uniform(0, 0.6)) if history.num_words else 0.0
    prefix = "w0" if seed % 3 == 0 else ""
    cands = ranker.prefix_ids(prefix) if prefix else ranker.suggestable_ids
    top = ranker.top_model(log_probs, cands, 3)
    got = ranker.merge(top, 3, prefix=prefix, phrase=match, history=history, history_share=a,
                       model_probability=lambda w: float(p[vocab.id_of(w)]) if w in vocab else 0.0)
    want = _brute(vocab, p, match, history.candidates(None, also=list(history.distribution(None))) if a else {},
                  a, prefix, 3)
    assert [w for w, _ in got] == [w for w, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)


def test_the_gate_reads_length_and_users_and_refuses_bad_weights():
    assert GATE.weight(2, 3) == 0.5 and GATE.weight(2, 4) == 0.5 and GATE.weight(4, 1000) == 0.7
    assert GATE.weight(5, 10) == 0.0
    assert PhraseGate.from_dict(GATE.to_dict()) == GATE
    with pytest.raises(Exception, match="weights in"):
        PhraseGate((4,), ((1.5, 0.0),))
    with pytest.raises(Exception, match="ascending"):
        PhraseGate((16, 4), ((0.1,) * 3,))


# -- a session and a file with a table ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def table_for_small_model(small_tflite, default_corpus):
    model = ModelFile.load(small_tflite)
    sentences = {c: [model.vocab.encode(s) for s in default_corpus.sentences([c])]
                 for c in default_corpus.client_ids[:200]}
    return PhraseTable.build(reference_counts(sentences, k=2), len(model.vocab), TableConfig(max_bytes=8000),
                             exclude=[SP.pad_id, SP.bos_id, SP.oov_id])


def test_a_session_with_a_table_suggests_the_merge_of_model_and_table(small_tflite, table_for_small_model):
    predictor = Predictor.load(small_tflite)
    plain = Predictor.load(small_tflite)
    predictor.ranker = Ranker(predictor.vocab, phrases=table_for_small_model, gate=GATE)
    s, changed = predictor.session(), 0
    for sentence in ["what is your name", "how are you doing today", "i do not know what you mean"]:
        s.reset()
        context = []
        for word in sentence.split():
            strip = s.suggestions(3)
            ids = [predictor.vocab.id_of(w) for w in ["<bos>", *context]][-4:]
            match = predictor.ranker.phrase_match(ids)
            model_top = plain.suggest(" ".join(context) + (" " if context else ""), 3)
            if match is None:
                assert strip == model_top
            else:
                changed += [w for w, _ in strip] != [w for w, _ in model_top]
                assert predictor.suggest(" ".join(context) + (" " if context else ""), 3) == strip
            s.commit_word(word)
            context.append(word)
    assert changed > 0  # the table changed some strips


def _with_table(run_dir: str, tmp_path, table: PhraseTable, gate: PhraseGate = GATE) -> str:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "phrases.bin").write_bytes(table.to_bytes())
    (run / "phrase_gate.json").write_text(json.dumps({"gate": gate.to_dict(), "discovery": {"k": 2}}))
    return str(run)


def test_an_exported_file_carries_the_table_and_the_predictor_uses_it(small_run, table_for_small_model, tmp_path):
    from keyboard_lm.export.tflite_export import export_run

    out = str(tmp_path / "m.tflite")
    card = export_run(_with_table(small_run, tmp_path, table_for_small_model), out)
    model = ModelFile.load(out)
    assert len(model.phrases) == len(table_for_small_model) and model.phrase_gate == GATE
    assert card["phrases"]["bytes"] == table_for_small_model.size_bytes
    assert len(Predictor.load(out).ranker.phrases) == len(model.phrases)


def _resealed(path: str, out: str, edit) -> str:
    """The file with its archive rewritten by ``edit(entries)`` and sealed again (a checksum that matches)."""
    data = open(path, "rb").read()
    start = min(i.header_offset for i in zipfile.ZipFile(path).infolist())
    z = zipfile.ZipFile(path)
    entries = {n: z.read(n) for n in z.namelist()}
    edit(entries)
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as w:
        for n, b in entries.items():
            w.writestr(n, b)
    open(out, "wb").write(seal(data[:start] + buf.getvalue()))
    assert end_record(open(out, "rb").read()) is not None
    return out


def test_a_file_whose_table_is_damaged_or_foreign_is_refused_in_one_line(small_run, table_for_small_model,
                                                                          tmp_path):
    from keyboard_lm.export.tflite_export import export_run

    good = str(tmp_path / "m.tflite")
    export_run(_with_table(small_run, tmp_path, table_for_small_model), good)

    def flip(entries):
        b = bytearray(entries["phrases.bin"])
        b[-1] ^= 0xFF
        entries["phrases.bin"] = bytes(b)

    with pytest.raises(ModelFileError, match="phrases.bin: the phrase table does not match the metadata's sha256"):
        ModelFile.load(_resealed(good, str(tmp_path / "flip.tflite"), flip))

    def foreign(entries):
        other = PhraseTable.build(PhraseCounts({}, {((4,), 5): 3}), 20000).to_bytes()
        meta = json.loads(entries["keyboard_lm.json"])
        import hashlib

        meta["phrases"]["sha256"] = hashlib.sha256(other).hexdigest()
        entries["phrases.bin"], entries["keyboard_lm.json"] = other, json.dumps(meta).encode()

    with pytest.raises(ModelFileError, match="vocabulary of 20000 words"):
        ModelFile.load(_resealed(good, str(tmp_path / "foreign.tflite"), foreign))

    def missing(entries):
        del entries["phrases.bin"]

    with pytest.raises(ModelFileError, match="has no phrases.bin"):
        ModelFile.load(_resealed(good, str(tmp_path / "missing.tflite"), missing))
    assert os.path.exists(good)


@pytest.mark.parametrize("gate", [{"bounds": [float("inf")], "weights": [[0.1, 0.2]]},
                                  {"bounds": ["4"], "weights": [[0.1, 0.2]]},
                                  {"bounds": [4], "weights": [[True, 0.2]]},
                                  {"bounds": [4], "weights": [["0.5", 0.2]]}])
def test_a_gate_of_other_types_is_refused_in_one_line(gate):
    with pytest.raises(Exception, match="phrase gate's bounds must be whole numbers"):
        PhraseGate.from_dict(gate, "g.json")


def test_a_context_share_is_of_the_users_who_typed_the_context():
    # 10 users typed the context; 6 of them went on with 7 and 6 with 8 (some typed both): q is 0.6 each, not 0.5.
    table = PhraseTable.build(PhraseCounts({(5,): 10}, {((5,), 7): 6, ((5,), 8): 6}), 50)
    assert table.lookup([5])[1] == 10 and table.lookup([5])[3].tolist() == pytest.approx([0.6, 0.6], abs=0.003)

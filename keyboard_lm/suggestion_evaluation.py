"""The suggestion stack as a keyboard runs it: the model alone, with the phrase table, with the user's history.

``evaluate_stack`` streams each evaluated user's text, in order, through a ``Session`` of the exported
model (the code a phone runs: its ``Ranker`` merges the model, the phrase table and the history), and
scores the strip shown before each word: recall@1 and recall@3 as ``keyboard-lm eval`` counts them
(every word but the end of sentence is an event; a word outside the vocabulary is a miss, even when the
history suggests it). With ``history=True`` every user starts with an empty ``UserHistory`` that learns
each word after it is scored, so a user's earlier text feeds the suggestions for their later text (Hard
et al. compare models with client caches on both sides). ``evaluate_ngram_stack`` gives the Kneser-Ney
n-gram the same streaming and the same history, merged by the same ``Ranker``.

``fit_gate`` chooses the phrase table's weights on validation users only: for each context length and
user bucket, the weight that makes the most recall@3 hits there (ties: the smaller weight), from a grid,
kept only when its gain over weight 0 passes a sign test on the events it changes (gained minus lost at
least ``GATE_Z`` standard deviations of their sum); otherwise the cell's weight is 0. Without the test, a
cell of a few hundred events takes a weight for a gain of one hit, and held-out users pay for it (the
embedded corpus: +19 validation hits, 0.981x -> 0.978x held-out).
The context at a position is the last inputs of the model's current training chunk, as a session keeps it.

Results have the shape of ``keyboard_lm.evaluation`` results ({"pooled", "clients"}), so
``evaluation.intervals`` and ``evaluation.paired_intervals`` apply.
"""

from __future__ import annotations

import collections
import contextlib
from typing import Iterable, Sequence

import numpy as np

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.examples import corpus_examples
from keyboard_lm.inference.ranker import PhraseGate, Ranker
from keyboard_lm.inference.ranker import history_share
from keyboard_lm.inference.session import HISTORY_WEIGHT
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text.phrase_table import MAX_ORDER, PhraseTable
from keyboard_lm.text.spec import SPECIAL_TOKENS

#: Weights tried for each cell of the gate.
GATE_GRID = tuple(round(0.05 * i, 2) for i in range(20))
#: A cell keeps its best weight only when (gained - lost) >= GATE_Z * sqrt(gained + lost) (a sign test).
GATE_Z = 1.96
_SP = SPECIAL_TOKENS


def _result(sums: dict) -> dict:
    """{"pooled", "clients"} from {client: [events, hits@1, hits@3]}."""
    def metrics(events, hit1, hit3):
        return {"recall_at_1": hit1 / events if events else float("nan"),
                "recall_at_3": hit3 / events if events else float("nan"), "num_events": int(events)}
    total = np.sum(list(sums.values()), axis=0) if sums else np.zeros(3)
    return {"pooled": metrics(*total), "clients": {c: metrics(*v) for c, v in sums.items()}}


def _stream(session, sentences: Iterable[Sequence[str]], vocab, sums: list) -> None:
    """Score the strip before each word of ``sentences`` (tokenized), then commit the word."""
    for sentence in sentences:
        session.reset()
        for word in sentence:
            top = [w for w, _ in session.suggestions(3)]
            if word in vocab and word not in _SP.tokens:
                sums[1] += bool(top) and top[0] == word
                sums[2] += word in top
            sums[0] += 1
            session.commit_word(word)


def evaluate_stack(predictor, corpus: Corpus, client_ids, *, history: bool = False,
                   history_weight: float = HISTORY_WEIGHT) -> dict:
    """Recall of ``predictor``'s strips on each user's text in order (module docstring)."""
    sums = {}
    for cid in client_ids:
        session = predictor.session(history=UserHistory() if history else None)
        if history:
            session.history_weight = history_weight
        sums[cid] = [0, 0, 0]
        _stream(session, corpus.sentences([cid]), predictor.vocab, sums[cid])
    return _result(sums)


class NgramSession:
    """A session over a Kneser-Ney model: the same reset / commit_word / suggestions, merged by a ``Ranker``.

    The n-gram reads the sentence's last ``order - 1`` tokens (``<bos>`` included), as in its evaluation.
    """

    def __init__(self, ngram, ranker: Ranker, history: UserHistory | None = None,
                 history_weight: float = HISTORY_WEIGHT):
        self.ngram, self.ranker, self.history, self.history_weight = ngram, ranker, history, history_weight
        self.reset()

    def reset(self) -> None:
        self.tokens, self.previous_word = [_SP.bos_id], None

    def commit_word(self, word: str) -> None:
        if self.history is not None and self.ranker.learnable(word):
            self.history.learn_word(self.previous_word, word)
        self.tokens.append(self.ranker.vocab.id_of(word))
        self.previous_word = word

    def suggestions(self, k: int = 3) -> list[tuple[str, float]]:
        dist = self.ngram.distribution(self.tokens[-(self.ngram.order - 1):] if self.ngram.order > 1 else [])
        with np.errstate(divide="ignore"):
            log_probs = np.log(dist).astype(np.float32)
        top = self.ranker.top_all(log_probs, k)
        if self.history is None or not self.history.num_words:
            return top
        a = history_share(self.history, self.history_weight, self.previous_word)
        if a <= 0:
            return top
        vocab = self.ranker.vocab
        return self.ranker.merge(top, k, history=self.history, history_share=a, previous_word=self.previous_word,
                                 model_probability=lambda w: float(dist[vocab.id_of(w)]) if w in vocab else 0.0)


def evaluate_ngram_stack(ngram, vocab, corpus: Corpus, client_ids, *, history: bool = False,
                         history_weight: float = HISTORY_WEIGHT) -> dict:
    """``evaluate_stack`` for a Kneser-Ney n-gram (with the same per-user history when ``history``)."""
    ranker, sums = Ranker(vocab), {}
    for cid in client_ids:
        session = NgramSession(ngram, ranker, UserHistory() if history else None, history_weight)
        sums[cid] = [0, 0, 0]
        _stream(session, corpus.sentences([cid]), vocab, sums[cid])
    return _result(sums)


@contextlib.contextmanager
def table_set_aside(predictor):
    """``predictor`` as the model alone for the length of the block: its ranker without the phrase table."""
    ranker = predictor.ranker
    predictor.ranker = Ranker(predictor.vocab)
    try:
        yield predictor
    finally:
        predictor.ranker = ranker


def stack_rows(predictor, corpus: Corpus, heldout_ids, train_ids, order: int = 5) -> dict:
    """The rows ``keyboard-lm eval --stack`` reports: {name: result}, each user's text streamed in order.

    The model alone (the file's ranker without its table), with its phrase table (when it has one), and
    with a per-user history; the Kneser-Ney n-gram of ``order`` on the training clients (the same
    vocabulary), alone and with the same history.
    """
    from keyboard_lm.baselines.ngram import KneserNey

    vocab, ranker = predictor.vocab, predictor.ranker
    rows = {}
    kn = KneserNey(len(vocab), order).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    rows[f"{order}-gram"] = evaluate_ngram_stack(kn, vocab, corpus, heldout_ids)
    rows[f"{order}-gram + history"] = evaluate_ngram_stack(kn, vocab, corpus, heldout_ids, history=True)
    with table_set_aside(predictor):
        rows["model"] = evaluate_stack(predictor, corpus, heldout_ids)
    if ranker.phrases is not None:
        rows["model + phrase table"] = evaluate_stack(predictor, corpus, heldout_ids)
    name = "model + phrase table + history" if ranker.phrases is not None else "model + history"
    rows[name] = evaluate_stack(predictor, corpus, heldout_ids, history=True)
    return rows


# -- the gate --------------------------------------------------------------------------------------------------
def gate_events(model, table: PhraseTable, corpus: Corpus, client_ids, bounds: Sequence[int]) -> dict:
    """For every position whose context the table holds: what the gate's choice decides there.

    Returns {(n, bucket): [(model's top-3 ids and probabilities, table ids, their q and model
    probabilities, target), ...]}, the model's top 3 taken among suggestable words not in the table.
    """
    ranker = Ranker(model.vocab)
    never = ranker.never
    cells = collections.defaultdict(list)
    for cid in client_ids:
        for x, y in corpus_examples(corpus.sentences([cid]), model.vocab, model.seq_len):
            state = model.initial_state()
            for t, (token, target) in enumerate(zip(x, y)):
                if token == _SP.pad_id:
                    break
                log_probs, state = model.step_full(int(token), state)
                if target in (_SP.eos_id, _SP.pad_id):
                    continue
                found = table.lookup([int(i) for i in x[max(0, t + 1 - MAX_ORDER):t + 1]])
                if found is None:
                    continue
                n, users, ids, q = found
                keep = ~never[ids]
                ids, q = ids[keep], q[keep]
                p = np.exp(log_probs.astype(np.float64))
                masked = p.copy()
                masked[never] = -1.0
                masked[ids] = -1.0
                top = np.argsort(-masked, kind="stable")[:3]
                bucket = int(np.searchsorted(bounds, users, side="right"))
                cells[(n, bucket)].append((top, p[top], ids, q.astype(np.float64), p[ids], int(target)))
    return cells


def _hits(events: list, lam: float) -> np.ndarray:
    """Whether each event's target is in the top 3 at weight ``lam``."""
    hit = np.zeros(len(events), dtype=bool)
    for e, (top, p_top, ids, q, p_ids, target) in enumerate(events):
        words = np.concatenate([top, ids])
        scores = np.concatenate([(1 - lam) * p_top, (1 - lam) * p_ids + lam * q])
        hit[e] = target in words[np.argsort(-scores, kind="stable")[:3]]
    return hit


def significant(gained: int, lost: int, z: float = GATE_Z) -> bool:
    """The sign test of ``fit_gate``: more events gained than lost, by ``z`` standard deviations."""
    return gained > lost and gained - lost >= z * np.sqrt(gained + lost)


def fit_gate(model, table: PhraseTable, corpus: Corpus, validation_ids, bounds: Sequence[int] = (4, 16, 64),
             grid: Sequence[float] = GATE_GRID, z: float = GATE_Z) -> tuple[PhraseGate, dict]:
    """The gate with the most recall@3 hits on ``validation_ids``, cell by cell, each cell's weight kept
    only when its gain passes the sign test (module docstring; ``z`` = 0 keeps every gain).

    Returns (gate, report): the report gives each cell's events, hits at lam = 0, the best weight's hits,
    gained and lost events, and the weight kept.
    """
    cells = gate_events(model, table, corpus, validation_ids, bounds)
    weights = [[0.0] * (len(bounds) + 1) for _ in range(table.max_order)]
    report = {"validation_users": len(list(validation_ids)), "sign_test_z": z, "cells": {}}
    for (n, bucket), events in sorted(cells.items()):
        without = _hits(events, 0.0)
        best, best_lam = without, 0.0
        for lam in grid:
            if lam == 0.0:
                continue  # ``without`` already
            hit = _hits(events, lam)
            if hit.sum() > best.sum():
                best, best_lam = hit, lam
        gained, lost = int(np.sum(best & ~without)), int(np.sum(without & ~best))
        kept = best_lam if significant(gained, lost, z) else 0.0
        weights[n - 1][bucket] = kept
        report["cells"][f"{n},{bucket}"] = {"events": len(events), "hits_without": int(without.sum()),
                                           "hits": int((best if kept else without).sum()),
                                           "best_weight": best_lam, "gained": gained, "lost": lost,
                                           "weight": kept}
    return PhraseGate(tuple(bounds), tuple(tuple(r) for r in weights)), report

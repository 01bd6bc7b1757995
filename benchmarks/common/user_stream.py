"""A user's own text streamed through a session as a keyboard would: suggest, then commit each word."""

from __future__ import annotations

import os
import time


def split_in_time(records: list[str]) -> tuple[list[str], list[str], list[str]]:
    """8:1:1 in time order: past, validation, future (at least one message each)."""
    n_val = n_test = max(1, len(records) // 10)
    n_train = len(records) - n_val - n_test
    return records[:n_train], records[n_train:n_train + n_val], records[n_train + n_val:]


def open_run(run_dir: str, model: str | None = None, char_encoder: str | None = None):
    """(run, model path, predictor, the vocabulary's words): the run's .tflite, exported next to it if missing."""
    from keyboard_lm.inference.predictor import Predictor
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    run = load_run(run_dir)
    model_path = model or os.path.join(run_dir, "model.tflite")
    if not os.path.exists(model_path):
        from keyboard_lm.export.tflite_export import export_run

        export_run(run_dir, model_path)
    predictor = Predictor.load(model_path, char_encoder=char_encoder)
    return run, model_path, predictor, {w for w in predictor.vocab.tokens if w not in SPECIAL_TOKENS.tokens}


def stream(session, sentences, known, counts: dict) -> None:
    """Suggest before each word, then commit it (a history keeps learning if the session learns; adapters
    do not); adds to ``counts`` what EMR3, KEMR3 and the OOV rates need. OOV after: a word outside the
    vocabulary that is neither a personal word nor in the history when it is typed."""
    for sentence in sentences:
        session.reset()
        for word in sentence:
            t0 = time.perf_counter()
            top = [w for w, _ in session.suggestions(3)]
            counts["seconds"] += time.perf_counter() - t0
            hit = word in top
            counts["words"] += 1
            counts["hits"] += hit
            if word in known:
                counts["known"] += 1
                counts["known_hits"] += hit
            else:
                counts["oov"] += 1
                personal = session.personal is not None and session.personal.index_of(word) is not None
                learnt = session.history is not None and session.history.count(word) > 0
                counts["oov_after"] += not (personal or learnt)
            session.commit_word(word)


def new_counts() -> dict:
    """Zeroed counts for ``stream``."""
    return dict.fromkeys(("words", "hits", "known", "known_hits", "oov", "oov_after", "seconds"), 0)

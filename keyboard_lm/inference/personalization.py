"""Learning one user on the device, as functions over a ``Session``: the user history and its weight, the
personal words and their adapter.

``Session.personalize`` and its siblings call these; a session holds what they learn (its ``history``
and ``personal`` state) and ranks with it. Nothing here leaves the device, and no TensorFlow is used:
the adapter trains in numpy (``keyboard_lm.inference.personal_words``).
"""

from __future__ import annotations

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personal_words import MAX_PERSONAL_WORDS, PersonalState
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text import tokenizer
from keyboard_lm.text.spelling import fits

#: The weights ``personalize`` chooses the user's history weight from, on their held-out text.
HISTORY_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def _classify(session, words) -> dict:
    """Sort candidate words into new personal words and the ones that cannot or need not be added."""
    if isinstance(words, str):
        raise ConfigError("personal words must be a list of words, not one string")
    out = {"added": [], "in_vocabulary": [], "already_personal": [], "blocked": []}
    seen = set()
    for i, word in enumerate(words):
        if not isinstance(word, str) or not word.strip():
            raise ConfigError(f"personal word {i} is empty or whitespace: {word!r}")
        tokens = tokenizer.tokenize(word)
        if len(tokens) != 1:
            raise ConfigError(f"personal word {i} {word[:40]!r} is {len(tokens)} tokens {tokens[:5]} after "
                              "normalization; a personal word must be one token")
        token = tokens[0]
        if token in session.ranker.vocab:
            out["in_vocabulary"].append(token)
        elif session.ranker.blocked(token):
            out["blocked"].append(token)
        elif (session.personal is not None and session.personal.index_of(token) is not None) or token in seen:
            out["already_personal"].append(token)
        else:
            seen.add(token)
            out["added"].append(token)
    return out



def add_personal_words(session, words) -> dict:
    """Add the user's own words zero-shot (char-encoder embeddings, no training).

    Words are normalized like typed text and must be one token each. Returns what happened
    to every word: ``added``, ``in_vocabulary`` (already predictable), ``already_personal``
    and ``blocked`` (blocklisted). Above the cap of MAX_PERSONAL_WORDS nothing is added and a
    ConfigError says so; a word the encoder cannot take (longer than its byte limit) likewise.
    """
    if session.predictor.char_encoder is None:
        raise ConfigError("personal words need the char encoder: Predictor.load(model, char_encoder=ENCODER.tflite)")
    if not session.model.has_personal_signatures:
        session.model.require_personal_signatures()
    result = _classify(session, words)
    if result["added"]:
        state = session.personal_state()
        if len(state.words) + len(result["added"]) > MAX_PERSONAL_WORDS:
            raise ConfigError(f"{len(state.words)} + {len(result['added'])} personal words exceed the cap of "
                              f"{MAX_PERSONAL_WORDS}; nothing was added (pass the user's most frequent words first)")
        state.add_words(result["added"], session.predictor.char_encoder.encode(result["added"]))
        session.personal_changed()
    return result



def _positions(session, sentences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model outputs [N, d], vocabulary logits [N, V], joint targets [N]) at every word of ``sentences``.

    A scratch session steps the frozen model exactly as typing would (chunks of seq_len
    inputs); personal words in the context enter through their current adapted embeddings.
    """
    outputs, logits, targets = [], [], []
    vocab, n_vocab = session.ranker.vocab, len(session.ranker.vocab)
    scratch = session.predictor.session()  # steps as this session would, without touching its state
    scratch.personal, scratch.reads_outputs = session.personal, True
    scratch.personal_changed()
    for sentence in sentences:
        scratch.reset()
        for i, word in enumerate(sentence):
            outputs.append(scratch.outputs[0])
            logits.append(scratch.outputs[1])
            index = session.personal.index_of(word) if word not in vocab else None
            targets.append(vocab.id_of(word) if index is None else n_vocab + index)
            if i + 1 < len(sentence):  # the last word predicts nothing here
                scratch.commit_word(word)
    return (np.asarray(outputs, np.float32).reshape(-1, session.model.embedding_dim),
            np.asarray(logits, np.float32).reshape(-1, n_vocab), np.asarray(targets, np.int64))



def personalize(session, texts, *, validation_texts=None, history: bool = True, adapter: bool = False,
                choose_weight: bool = True, **options) -> dict:
    """Learn this user from their own text, on the device.

    What measured best on real per-user text (docs/personalization.md) is the default:
    every sentence of ``texts`` is learnt, in the order given (oldest first), into the
    session's user history (``learn_history``; a new ``UserHistory`` when the session has
    none, kept in ``session.history`` for the caller to save), which then mixes into the
    suggestions, and the history's weight for this user is chosen on their newest text
    (``choose_history_weight``): the newest tenth of the sentences when there are at
    least 10 (learnt after it served), or ``validation_texts``. The personal-word
    adapter (``personalize_sentences``, taking ``options``; needs a char encoder) added
    nothing measurable on top of the history, so it is trained only with ``adapter=True``.

    Args:
      texts: a string or a list of strings the user typed, oldest first.
      validation_texts: the user's held-out text: it chooses the history weight and stops
        the adapter's training early; not learnt into the history. Default: the newest
        tenth of ``texts`` chooses the weight (and the adapter holds out
        ``validation_fraction`` of the sentences).
      history: learn ``texts`` into the user history (False: the adapter alone).
      adapter: train the personal-word adapter too.
      choose_weight: choose the history weight (False: the history keeps its weight).
    Returns:
      The report: ``history_words_learnt``, ``history_words``, ``history_weight`` and
      each weight's ``history_weight_emr3`` when it was chosen, and with the adapter
      ``personalize_sentences``' report (``adapter_trained`` says which).
    Raises:
      ConfigError: a session opened with ``learn=False`` (it learns nothing), text with
        no word, ``history=False`` without ``adapter=True``, or ``adapter=True`` without a
        char encoder.
    """
    def split(t):
        if isinstance(t, str):
            t = [t]
        return [s for text in t for s in tokenizer.sentences(text)]

    if not session.learning:
        raise ConfigError("this session was opened with learn=False (a password or no-suggestion field): "
                          "it learns nothing")
    sentences = split(texts)
    if not (history or adapter):
        raise ConfigError("personalize with history=False needs the adapter (adapter=True, with a char encoder)")
    report = {}
    if adapter:
        report = personalize_sentences(session, sentences, None if validation_texts is None
                                            else split(validation_texts), **options)
    elif options:
        raise ConfigError(f"{', '.join(sorted(options))}: options of the adapter, which is not trained here")
    if history:
        learn_now, held_out, learn_after = sentences, None, []
        if choose_weight and validation_texts is not None:
            held_out = split(validation_texts)
        elif choose_weight and len(sentences) >= 10:  # the newest tenth chooses, then is learnt too
            n_val = max(1, len(sentences) // 10)
            learn_now, held_out = sentences[:-n_val], sentences[-n_val:]
            learn_after = held_out
        report.update(learn_history(session, learn_now))
        if held_out:
            report.update(choose_history_weight(session, held_out))
        if learn_after:
            learnt = report["history_words_learnt"]
            report.update(learn_history(session, learn_after))
            report["history_words_learnt"] += learnt
    report["adapter_trained"] = bool(report.get("trained"))
    return report



def choose_history_weight(session, sentences, weights=HISTORY_WEIGHTS) -> dict:
    """Choose this user's history weight on their held-out ``sentences`` (tokenized, oldest first).

    The sentences stream as a keyboard sees them: at each word, the 3 suggestions at every weight of
    ``weights``, then the word is committed and learnt (into a copy: the history is not changed).
    The weight with the most hits (EMR3) becomes ``session.history.weight`` and is saved with the
    history; equal counts go to the smaller weight (the model alone needs no evidence). Returns ``history_weight`` and
    ``history_weight_emr3`` (each weight's share of hits).
    """
    if session.history is None:
        raise ConfigError("choose_history_weight needs a user history (learn one first)")
    weights = [float(w) for w in weights]
    if not weights or any(not 0 <= w <= 1 for w in weights) or len(set(weights)) != len(weights):
        raise ConfigError(f"history weights must be distinct numbers in [0, 1], got {weights}")
    trial = session.predictor.session(history=UserHistory.from_dict(session.history.to_dict()))
    if session.personal is not None:
        trial.personal = session.personal
        trial.personal_changed()
    hits, words = dict.fromkeys(weights, 0), 0
    for sentence in sentences:
        trial.reset()
        for word in sentence:
            for w in weights:
                trial.history_weight = w
                hits[w] += any(word == x for x, _ in trial.suggestions(3))
            words += 1
            trial.commit_word(word)
    if not words:
        raise ConfigError("choose_history_weight needs held-out text with at least one word")
    best = max(weights, key=lambda w: (hits[w], -w))
    session.history.weight = best
    return {"history_weight": best, "history_weight_emr3": {w: hits[w] / words for w in weights},
            "history_weight_words": words}



def learn_history(session, sentences) -> dict:
    """Learn tokenized ``sentences`` (lists of normalized words, oldest first) into the user history.

    Each word is learnt after the one before it, as ``commit_word`` learns a typed word:
    special tokens and blocklisted words never are.  A session without a history gets a
    new ``UserHistory``.  Returns ``history_words_learnt`` and ``history_words`` (the
    distinct words the history now holds).
    """
    if not session.learning:
        raise ConfigError("this session was opened with learn=False: it learns nothing")
    if session.history is None:
        session.history = UserHistory()
    learnt = 0
    for sentence in sentences:
        previous = None
        for word in sentence:
            if session.learnable(word):
                session.history.learn_word(previous, word)
                learnt += 1
            previous = word
    if not learnt:
        raise ConfigError("personalize needs text with at least one word")
    return {"history_words_learnt": learnt, "history_words": session.history.num_words}



def personalize_sentences(session, sentences, validation_sentences=None, *, max_words: int = MAX_PERSONAL_WORDS,
                          epochs: int = 100, learning_rate: float = 0.003, validation_fraction: float = 0.1,
                          patience: int = 5, seed: int = 0) -> dict:
    """``personalize`` on tokenized sentences (lists of normalized tokens): the project's adapter.

    The most frequent out-of-vocabulary words of ``sentences`` (at most ``max_words`` and the
    room left under the cap; the rest are counted in ``not_added``, not dropped silently;
    words the encoder cannot take are counted in ``unencodable``) are added zero-shot, then
    the adapter alone is trained (Adam, full batch) to predict every word of ``sentences``
    with the global model frozen. The epoch with the lowest loss on
    ``validation_sentences`` (or on ``validation_fraction`` of ``sentences``, when there are
    at least 10) is kept. Returns a report. The variants the project measured against it
    (Shenoy & Nguyen's grid, per-word offsets, a vocabulary bias) are in the experimental
    ``keyboard_lm.inference.adapter_research``.
    """
    import time

    start = time.perf_counter()
    sentences, report = prepare_words(session, sentences, max_words, validation_fraction)
    if session.personal is None or not session.personal.words:
        report.update(trained=False, reason="no word outside the vocabulary", seconds=time.perf_counter() - start)
        return report
    if epochs == 0:  # the words only, zero-shot
        report.update(trained=False, reason="epochs=0", personal_words=len(session.personal.words),
                      seconds=time.perf_counter() - start)
        return report
    train_positions, validation = split_positions(session, sentences, validation_sentences, validation_fraction, seed)
    losses = session.personal.train(*train_positions, epochs=epochs, learning_rate=learning_rate, optimizer="adam",
                                    validation=validation, patience=patience, never=session.ranker.never)
    return finish_training(session, report, losses, train_positions, validation, start)


def prepare_words(session, sentences, max_words: int, validation_fraction: float) -> tuple[list, dict]:
    """Check the input and add the user's most frequent words outside the vocabulary zero-shot.

    Returns (the non-empty sentences, the report so far: ``sentences``, ``words_added``,
    ``not_added``, ``unencodable``). Shared by the experimental adapters.
    """
    import collections

    sentences = [list(s) for s in sentences if len(s)]
    if not sentences:
        raise ConfigError("personalize needs text with at least one word")
    if not 0 <= validation_fraction < 1:
        raise ConfigError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    if session.predictor.char_encoder is None:
        raise ConfigError("personal words need the char encoder: Predictor.load(model, char_encoder=ENCODER.tflite)")
    counts = collections.Counter(w for s in sentences for w in s if w not in session.ranker.vocab
                                 and not session.ranker.blocked(w))
    existing = set(session.personal.words) if session.personal is not None else set()
    limit = session.predictor.char_encoder.max_bytes
    candidates = [w for w, _ in counts.most_common() if w not in existing]
    unencodable = [w for w in candidates if not fits(w, limit)]
    candidates = [w for w in candidates if fits(w, limit)]
    room = min(max_words, MAX_PERSONAL_WORDS - len(existing))
    added = add_personal_words(session, candidates[:room])["added"] if candidates[:room] else []
    return sentences, {"sentences": len(sentences), "words_added": added, "not_added": len(candidates) - len(added),
                       "unencodable": len(unencodable)}


def split_positions(session, sentences, validation_sentences, validation_fraction: float, seed: int):
    """(training positions, validation positions or None): the model's outputs, logits and targets at every word.

    Without ``validation_sentences``, ``validation_fraction`` of ``sentences`` (when there are at
    least 10) is held out, drawn with ``seed``. Shared by the experimental adapters.
    """
    import random

    session.personal_state()
    if validation_sentences is None:
        order = list(range(len(sentences)))
        random.Random(seed).shuffle(order)
        n_val = int(len(sentences) * validation_fraction) if len(sentences) >= 10 else 0
        validation_sentences = [sentences[i] for i in order[:n_val]]
        sentences = [sentences[i] for i in order[n_val:]]
    validation_sentences = [list(s) for s in validation_sentences if len(s)]
    return _positions(session, sentences), (_positions(session, validation_sentences) if validation_sentences
                                            else None)


def finish_training(session, report: dict, losses, train_positions, validation, start: float) -> dict:
    """Re-score the session with the trained adapter and complete the report."""
    import time

    session.personal_changed()
    report.update(session.personal.last_training)
    report.update({"training_positions": len(train_positions[2]),
                   "validation_positions": 0 if validation is None else len(validation[2]),
                   "personal_words": len(session.personal.words), "epochs_run": len(losses), "trained": True,
                   "seconds": time.perf_counter() - start})
    return report


def save_personal(session, path: str) -> None:
    """Write this user's personal words and adapter to ``path`` (one file, tied to this model)."""
    if session.personal is None:
        raise ConfigError("this session has no personal words to save")
    session.personal.save(path)



def load_personal(session, path: str) -> None:
    """Replace this session's personal state by the one in ``path``; a file of another model is refused."""
    state = PersonalState.load(path, session.model.fingerprint)
    if state.base.shape[1] != session.model.embedding_dim:
        raise ConfigError(f"{path}: personal embeddings are {state.base.shape[1]}-dim, the model uses "
                          f"{session.model.embedding_dim}")
    if state.has_vocab_bias and state.vocab_bias.shape != (len(session.model.vocab),):
        raise ConfigError(f"{path}: damaged personal state file (a vocabulary bias of {state.vocab_bias.size:,} "
                          f"words, the model has {len(session.model.vocab):,})")
    if state.words and not session.model.has_personal_signatures:
        session.model.require_personal_signatures()
    session.personal = state
    session.personal_changed()

"""Streaming next-word suggestions and word completion over an exported model.

A ``Session`` carries the recurrent state across keystrokes: committing a
word costs one model step, never a re-read of the context.  Sentence ends
(per the text spec) and ``reset()`` (a new text field) start again from
``<bos>``.  Special tokens, the OOV token and blocklisted words are never
suggested.  No TensorFlow: numpy and a TFLite runtime only.

State rule (the one the model was trained and evaluated on): training cuts
each sentence ``<bos> w1 .. wn <eos>`` into chunks of ``seq_len`` inputs, each
run from a zero state (``keyboard_lm.data.examples``).  A session does the
same: after ``seq_len`` model inputs in a sentence (``<bos>`` counts) the
state restarts from zeros before the next word, so a 1,000-word field without
punctuation is scored exactly as the trainer scored it, memory stays bounded,
and the stateless ``Predictor.suggest`` (which replays only the current chunk
of the last sentence) returns what the streaming session returns.
"""

from __future__ import annotations

import bisect
from typing import Iterable

import numpy as np

from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.text import tokenizer
from keyboard_lm.text.spec import SPECIAL_TOKENS

class Predictor:
    """Suggestions from one .tflite file; thread-safe (one interpreter per thread)."""

    def __init__(self, model: ModelFile, blocklist: Iterable[str] = ()):
        self.model = model
        self.vocab = model.vocab
        v = len(self.vocab)
        self._never = np.zeros(v, bool)
        self._never[list(SPECIAL_TOKENS.ids)] = True
        for word in blocklist:
            for token in tokenizer.tokenize(word):
                if token in self.vocab:
                    self._never[self.vocab.id_of(token)] = True
        # Words sorted by spelling, for prefix ranges in complete().
        words = [(t, i) for i, t in enumerate(self.vocab.tokens) if not self._never[i]]
        words.sort()
        self._sorted_words = [w for w, _ in words]
        self._sorted_ids = np.array([i for _, i in words], np.int64)

    @classmethod
    def load(cls, path: str, blocklist: Iterable[str] = (), runtime: str | None = None) -> "Predictor":
        """Load a .tflite exported by ``keyboard-lm export``; raises ModelFileError naming the file."""
        return cls(ModelFile.load(path, runtime=runtime), blocklist)

    def session(self) -> "Session":
        return Session(self)

    def suggest(self, context: str, k: int = 3) -> list[tuple[str, float]]:
        """(word, probability) pairs for the word after ``context``, most likely first.

        The first entry is the one for the center of a 3-slot strip.
        """
        s = self.session()
        s.commit(context, replay_tail=True)
        return s.suggestions(k)

    def complete(self, context: str, prefix: str, k: int = 3) -> list[tuple[str, float]]:
        """The k most probable vocabulary words starting with ``prefix`` after ``context``."""
        s = self.session()
        s.commit(context, replay_tail=True)
        return s.complete(prefix, k)

    # -- shared by sessions --------------------------------------------------
    def _top(self, log_probs: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if len(ids) == 0:
            return []
        scores = log_probs[ids]
        if len(ids) > k:
            pick = np.argpartition(-scores, k - 1)[:k]
        else:
            pick = np.arange(len(ids))
        pick = pick[np.argsort(-scores[pick], kind="stable")]
        return [(self.vocab.token_of(int(ids[i])), float(np.exp(scores[i]))) for i in pick]

    def _suggestable(self) -> np.ndarray:
        return np.flatnonzero(~self._never)

    def _prefix_ids(self, prefix: str) -> np.ndarray:
        lo = bisect.bisect_left(self._sorted_words, prefix)
        hi = bisect.bisect_left(self._sorted_words, prefix + "\U0010ffff")
        return self._sorted_ids[lo:hi]


class Session:
    """One text field being typed; not for use by two threads at once."""

    def __init__(self, predictor: Predictor):
        self.predictor = predictor
        self._model = predictor.model
        self._all_ids = predictor._suggestable()
        self.reset()

    def reset(self) -> None:
        """Start a new sentence/field: the state after ``<bos>``."""
        self._log_probs, self._state = self._model.step_full(SPECIAL_TOKENS.bos_id, self._model.initial_state())
        self.words_in_sentence = 0
        self.steps = 1
        self.inputs_in_chunk = 1  # <bos> is the first input of the first chunk

    def commit_word(self, word: str) -> None:
        """Advance by one already-normalized token (one model step)."""
        if self.inputs_in_chunk == self._model.seq_len:
            # A new training chunk: the model never saw a state older than seq_len inputs.
            self._state = self._model.initial_state()
            self.inputs_in_chunk = 0
        self._log_probs, self._state = self._model.step_full(self.predictor.vocab.id_of(word), self._state)
        self.words_in_sentence += 1
        self.inputs_in_chunk += 1
        self.steps += 1

    def commit(self, text: str, replay_tail: bool = False) -> None:
        """Advance over committed text (whole words): words step the model, sentence ends reset it.

        ``replay_tail`` (used by the stateless ``Predictor.suggest``) steps the
        model over the current chunk of the final sentence only: the state
        rule above makes everything before it irrelevant, so the result equals
        committing all of ``text`` and costs at most ``seq_len`` steps.
        """
        events = list(tokenizer.scan(text))  # raises ValueError for non-str input
        if replay_tail:
            ends = [i for i, (kind, _) in enumerate(events) if kind == "end"]
            if ends:
                events = events[ends[-1] + 1:]
            # Inputs of the sentence are <bos> + words; chunks hold seq_len inputs.
            chunk = len(events) // self._model.seq_len  # chunk of the last input (word i is input i)
            if chunk:
                skip = chunk * self._model.seq_len - 1
                self.words_in_sentence = skip
                self.inputs_in_chunk = self._model.seq_len  # the next word starts a new chunk from a zero state
                events = events[skip:]
        for kind, token in events:
            if kind == "end":
                self.reset()
            else:
                self.commit_word(token)

    def suggestions(self, k: int = 3) -> list[tuple[str, float]]:
        """Next-word candidates after the committed text (shown after a space)."""
        return self.predictor._top(self._log_probs, self._all_ids, k)

    def complete(self, prefix: str, k: int = 3) -> list[tuple[str, float]]:
        """The most probable vocabulary words that start with ``prefix`` (being typed)."""
        normalized = tokenizer.normalize(prefix).strip()
        if not normalized:
            return self.suggestions(k)
        return self.predictor._top(self._log_probs, self.predictor._prefix_ids(normalized), k)


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

Personal words (Shenoy & Nguyen): a Session may hold a
``PersonalState`` (keyboard_lm.inference.personal_words): the user's own words
outside the vocabulary, embedded by the char encoder (a second small .tflite
given to ``Predictor.load(..., char_encoder=)``) and adapted by a per-user
residual MLP trained on the phone (``Session.personalize``). Their logits
(model output . adapted embedding) join the vocabulary's before the softmax,
so suggestions and completion rank both; a personal word typed as context
enters the model through its adapted embedding (the file's ``step_personal``
signature), not as ``<oov>``. The state is saved to one file per user and
never leaves the device: no method here sends it anywhere.

User history (``keyboard_lm.inference.user_history``): a Session may also
hold a ``UserHistory``, the decayed counts of the words and word pairs its
user typed (words outside the vocabulary included). Every committed word is
learnt, unless the session was opened with ``learn=False`` (a password or
no-suggestion field). Suggestions and completions then rank the mixture
``(1 - a) p_model + a p_history(. | previous word)``, ``a`` =
``Session.history_weight * n / (n + HISTORY_CONTEXT_K)`` with n the (decayed)
number of words the user typed after the previous word; a word only the
history knows gets its share of ``a``. ``Session.personalize`` chooses the
user's ``history_weight`` on their newest text.

Cost: a step runs the file's ``step`` signature, whose graph returns the
K (metadata ``top_k``) most likely words and the new state, so a suggestion
strip needs no work over the vocabulary in numpy. The full distribution
(``step_full``: V log-probabilities) is computed, at most once per position
and only when something needs it: a completion, personal words, the user
history's mixture, a k above K, or blocklisted words among the graph's top K
that leave fewer than k. A session that completed at one position steps the
next one in full at once (a user who types letters keeps doing so; one step
then serves strip and completions), and every sentence start reads the
``<bos>`` distribution the predictor computed at load. Both paths rank by
log-probability, ties by id ascending (TFLite's TOPK_V2 order), so they return
the same answers.

Stateless calls (``Predictor.suggest``/``complete``) keep the states of
recent token prefixes in a per-predictor cache (see ``Predictor``), so a call
whose context extends a recent one by a word costs one step.
"""

from __future__ import annotations

import bisect
import math
from typing import Protocol

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference import personalization
from keyboard_lm.inference.personal_words import PersonalState
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.ranker import PhraseMatch, Ranker, check_k, history_share
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text import tokenizer
from keyboard_lm.text.phrase_table import MAX_ORDER
from keyboard_lm.text.spec import SPECIAL_TOKENS


class SessionSource(Protocol):
    """What a session needs of the predictor that opens it (``Predictor`` is one): the model, the ranker that
    merges every source, the position after ``<bos>`` computed once, the char encoder of personal words, and
    new sessions (personalization scores on a scratch one). Kept as a protocol so this module does not import
    the predictor's."""

    model: ModelFile
    ranker: Ranker
    bos_position: tuple
    bos_log_probs: np.ndarray
    char_encoder: object

    def session(self, personal=None, history=None, learn: bool = True) -> "Session": ...

#: The user history's share of a suggestion's probability (``Session.history_weight``).
HISTORY_WEIGHT = 0.3
_ANY = object()  # Session._step's context when the word before the position is not known
_UNKNOWN = object()  # Session._match before the phrase table was looked up at this position


class Session:
    """One text field being typed; not for use by two threads at once."""

    def __init__(self, predictor: SessionSource, history: UserHistory | None = None, learn: bool = True):
        self.predictor = predictor
        self.model = predictor.model
        self.ranker = predictor.ranker  # every source is merged there, once
        self._all_ids = self.ranker.suggestable_ids
        self._match: PhraseMatch | None | object = _UNKNOWN  # the phrase table's entry here, once looked up
        if not isinstance(learn, bool):  # learn="no" would be true: a password field learnt from
            raise ConfigError(f"learn must be True or False, got {learn!r:.40}")
        self.personal: PersonalState | None = None
        self.history, self.learning = history, learn
        self._history_weight: float | None = None  # None: the history's own weight, else HISTORY_WEIGHT
        self._personal_sorted: list[tuple[str, int]] = []
        self.reads_outputs = False  # step through the personal path even with no personal word (_positions)
        # Whether a completion read the full distribution at the current position: the user types
        # letters, and will probably do so after the next word too (see _step).
        self._completed_here = False
        self.reset()

    @property
    def history(self) -> UserHistory | None:
        """The user's history this session learns from and mixes in (None: none)."""
        return self._history

    @history.setter
    def history(self, history: UserHistory | None) -> None:
        # refused here, not at the first commit or suggestion where it would fail far from the mistake
        if history is not None and not isinstance(history, UserHistory):
            raise ConfigError(f"history must be a UserHistory or None, got {type(history).__name__} "
                              f"{history!r:.40}")
        self._history = history

    @property
    def history_weight(self) -> float:
        """The history's share a of the mixture: set on this session, else the one ``personalize`` chose for
        the user on their held-out text (``UserHistory.weight``), else HISTORY_WEIGHT."""
        if self._history_weight is not None:
            return self._history_weight
        if self.history is not None and self.history.weight is not None:
            return self.history.weight
        return HISTORY_WEIGHT

    @history_weight.setter
    def history_weight(self, weight: float) -> None:
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
            raise ConfigError(f"history_weight must be a number in [0, 1], got {weight!r}")
        self._history_weight = float(weight)

    def effective_history_weight(self) -> float:
        """The history's share at this position: ``history_weight * n / (n + HISTORY_CONTEXT_K)``, n the
        (decayed) number of words the user typed after the previous word (0 without a history)."""
        if self.history is None:
            return 0.0
        return history_share(self.history, self.history_weight, self.previous_word)

    # -- model steps ---------------------------------------------------------
    def _personal_active(self) -> bool:
        return self.personal is not None and (len(self.personal.words) > 0 or self.personal.has_vocab_bias
                                              or self.reads_outputs)

    def _history_share(self) -> float:
        """The history's share in the suggestions here (0: they do not mix it in, nor read the full distribution)."""
        return self.effective_history_weight() if self.history is not None and self.history.num_words else 0.0

    def _history_active(self) -> bool:
        return self._history_share() > 0

    def _history_may_mix_after(self, context) -> bool:
        """Whether the history may mix in after ``context`` (the word being committed; None: a sentence
        start; _ANY: not known): after a word the user never typed its share is 0, and the graph's top K
        serves the strip."""
        if self.history is None or self.history_weight <= 0:
            return False
        return context is _ANY or self.history.context_count(context) > 0

    def _phrase(self) -> PhraseMatch | None:
        """The phrase table's entry at this position (None: no stored context, or no weight), looked up once."""
        if self._match is _UNKNOWN:
            self._match = self.ranker.phrase_match(self._context)
        return self._match

    def _step(self, token: int | None, personal_index: int | None, state: np.ndarray, context=None) -> None:
        """One model input: a vocabulary id, or a personal word (its adapted embedding)."""
        self._last_input = (token, personal_index, state)  # to redo the step, or compute the full distribution
        self._match = _UNKNOWN
        typing, self._completed_here = self._completed_here, False
        if self._personal_active():
            if personal_index is not None:
                logits, output, self._state = self.model.step_embedding(
                    self.personal.adapted_embedding(personal_index), state)
            else:
                logits, output, self._state = self.model.step_hidden(token, state)
            z = self.personal.logits(output, logits)
            m = z.max()
            self._full = z - (m + np.log(np.exp(z - m).sum()))  # [V + n], joint softmax
            self._graph_top = None
            self._output, self._vocab_logits = output, logits
        elif self._history_may_mix_after(context) or typing or self._phrase() is not None:
            # The history's and the phrase table's mixtures read the model's probability of their candidates; a
            # user who typed letters
            # at the last position will likely complete here too. One full step then serves the strip and the
            # completions, instead of the graph's top K now and the full step again at the first letter.
            self._full, self._state = self.model.step_full(token, state)
            self._graph_top = None
            self._output = self._vocab_logits = None
        else:
            top_ids, top_log_probs, self._state = self.model.step(token, state)
            self._set_graph_top(top_ids, top_log_probs)

    def _set_graph_top(self, top_ids: np.ndarray, top_log_probs: np.ndarray) -> None:
        # [K] each, specials excluded, by log-prob then id; None where the position was stepped in full
        self._graph_top = None if top_ids is None else (top_ids, top_log_probs)
        self._full = None  # computed from _last_input when needed
        self._output = self._vocab_logits = None

    def set_position(self, token: int, position: tuple, inputs_in_chunk: int | None = None,
                     chunk_inputs: list[int] | None = None) -> None:
        """Stand after ``token`` given a predictor position (state before, state after, graph top, full log-probs
        or None).

        The predictor's interface to a session (its stateless calls and the prefix cache's positions);
        ``inputs_in_chunk``: how many inputs of the current training chunk that position has read;
        ``chunk_inputs``: those inputs' ids (the phrase table's context is their last few).
        """
        before, self._state, top_ids, top_log_probs, full = position
        if inputs_in_chunk is not None:
            self.inputs_in_chunk = inputs_in_chunk
        if chunk_inputs is not None:
            self._context = list(chunk_inputs[-MAX_ORDER:])
        self._match = _UNKNOWN
        self._last_input = (token, None, before)
        self._set_graph_top(top_ids, top_log_probs)  # top ids None: a position the cache stepped in full
        if full is not None:  # e.g. a sentence start (computed at load) or a phrase-table context
            self._full = full

    @property
    def _log_probs(self) -> np.ndarray:
        """Log-probs of the next word [V] (or [V + n] with personal words), computed once per position."""
        if self._full is None:
            token, _, state = self._last_input  # a vocabulary id: personal inputs always step in full
            self._full, _ = self.model.step_full(token, state)
        return self._full

    def _redo_last_step(self) -> None:
        token, personal_index, state = self._last_input
        if personal_index is not None and not self._personal_active():
            personal_index, token = None, SPECIAL_TOKENS.oov_id
        self._step(token, personal_index, state, _ANY)

    def reset(self) -> None:
        """Start a new sentence/field: the state after ``<bos>``."""
        self._context = [SPECIAL_TOKENS.bos_id]  # the phrase table's context: the chunk's last inputs
        if self._personal_active():
            self._step(SPECIAL_TOKENS.bos_id, None, self.model.initial_state())
        else:  # the same for every sentence: the predictor computed it once
            self.set_position(SPECIAL_TOKENS.bos_id, self.predictor.bos_position)
        self.words_in_sentence = 0
        self.previous_word: str | None = None  # the history's context
        self.steps = 1
        self.inputs_in_chunk = 1  # <bos> is the first input of the first chunk

    def commit_word(self, word: str) -> None:
        """Advance by one already-normalized token (one model step).

        A personal word enters through its adapted embedding; any other word outside the
        vocabulary as ``<oov>``.
        """
        if self.inputs_in_chunk == self.model.seq_len:
            # A new training chunk: the model never saw a state older than seq_len inputs.
            self._state = self.model.initial_state()
            self.inputs_in_chunk = 0
            self._context = []
        token = self.ranker.vocab.id_of(word)  # <oov> outside the vocabulary
        personal_index = None
        if token == SPECIAL_TOKENS.oov_id and self._personal_active():
            personal_index = self.personal.index_of(word)
        # A word outside the vocabulary (personal or not) is <oov> here: no stored context holds it.
        self._context = [*self._context[1 - MAX_ORDER:], token]
        self._step(token if personal_index is None else None, personal_index, self._state, word)
        if self.learning and self.history is not None and self.learnable(word):
            self.history.learn_word(self.previous_word, word)
        self.previous_word = word
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
            chunk = len(events) // self.model.seq_len  # chunk of the last input (word i is input i)
            if chunk:
                skip = chunk * self.model.seq_len - 1
                self.words_in_sentence = skip
                self.inputs_in_chunk = self.model.seq_len  # the next word starts a new chunk from a zero state
                events = events[skip:]
        for kind, token in events:
            if kind == "end":
                self.reset()
            else:
                self.commit_word(token)

    # -- suggestions -----------------------------------------------------------
    def _top(self, ids: np.ndarray, personal: list[int], k: int, prefix: str = "") -> list[tuple[str, float]]:
        """The k best words among ``ids`` and the ``personal`` word indices: the model's, merged by the ranker
        with the phrase table and the history where they have a say here."""
        n_personal = len(self.personal.words) if self.personal is not None else 0
        words = self.personal.words if personal else ()
        if ids is self._all_ids and len(personal) == n_personal and k <= 8:  # every word: k scans beat a sort
            top = self.ranker.top_all(self._log_probs, k, words)
        elif not personal:
            top = self.ranker.top_model(self._log_probs, ids, k)
        else:
            joint = np.concatenate([ids, len(self.ranker.vocab) + np.asarray(personal, np.int64)])
            top = self.ranker.top_model(self._log_probs, joint, k, words)
        a, phrase = self._history_share(), self._phrase()
        if a <= 0 and phrase is None:
            return top
        return self.ranker.merge(top, k, prefix=prefix, phrase=phrase, history=self.history, history_share=a,
                                 previous_word=self.previous_word, model_probability=self._model_probability)

    def _model_probability(self, word: str) -> float:
        """p_m of a vocabulary or personal word at this position (0 for a word the model cannot produce)."""
        vocab = self.ranker.vocab
        if word in vocab:
            return float(np.exp(self._log_probs[vocab.id_of(word)]))
        index = self.personal.index_of(word) if self._personal_active() else None
        return 0.0 if index is None else float(np.exp(self._log_probs[len(vocab) + index]))

    def _graph_suggestions(self, k: int) -> list[tuple[str, float]] | None:
        """The k best suggestions from the graph's top K, or None where they may differ from the full ranking.

        The graph ranked every non-special word; dropping blocklisted ones from its top K leaves
        the best of the rest in order, so the answer is exact whenever k of them remain. Personal
        words and the history change the ranking (None: the full path decides).
        """
        if self._graph_top is None or self._history_active() or self._personal_active() or self._phrase() is not None:
            return None
        top_ids, top_log_probs = self._graph_top
        if k > len(top_ids):
            return None
        never, vocab, out = self.ranker.never, self.ranker.vocab, []
        for i, log_prob in zip(top_ids.tolist(), top_log_probs):
            if not never[i]:
                out.append((vocab.token_of(i), float(np.exp(log_prob))))
                if len(out) == k:
                    return out
        return None

    def suggestions(self, k: int = 3) -> list[tuple[str, float]]:
        """Next-word candidates after the committed text (shown after a space), personal words included."""
        check_k(k)
        fast = self._graph_suggestions(k)
        if fast is not None:
            return fast
        personal = list(range(len(self.personal.words))) if self._personal_active() else []
        return self._top(self._all_ids, personal, k)

    def complete(self, prefix: str, k: int = 3) -> list[tuple[str, float]]:
        """The most probable words being typed as ``prefix``: vocabulary and personal words that start with it
        and, where the predictor corrects typos, those one slip away (``keyboard_lm.text.typos``), each
        weighted by its slip's factor; with a correction in the strip, the letters as typed keep its last
        place (``Ranker.keep_typed``)."""
        normalized = tokenizer.normalize(prefix).strip()
        if not normalized:
            return self.suggestions(k)
        self._completed_here = True
        completion = self.ranker.completion(normalized)
        if not completion.typos:
            return self._top(self.ranker.prefix_ids(normalized), self._personal_with(normalized), k,
                             prefix=normalized)
        check_k(k)
        ids, factors, log_factors = self.ranker.completion_ids(completion)
        words = ()
        if self._personal_active():  # personal words of every candidate prefix, each once with its largest factor
            best: dict[int, float] = {}
            for p, f in [(normalized, 1.0), *completion.typos]:
                for i in self._personal_with(p):
                    best[i] = max(f, best.get(i, 0.0))
            if best:
                words = self.personal.words
                n_vocab = len(self.ranker.vocab)
                ids = np.concatenate([ids, n_vocab + np.array(list(best), np.int64)])
                added = np.array(list(best.values()), np.float64)
                factors = np.concatenate([factors, added])
                log_factors = np.concatenate([log_factors, [math.log(f) for f in best.values()]])
        top = self.ranker.top_weighted(self._log_probs, ids, factors, log_factors, k, words)
        a, phrase = self._history_share(), self._phrase()
        if a > 0 or phrase is not None:
            top = self.ranker.merge(top, k, phrase=phrase, history=self.history, history_share=a,
                                    previous_word=self.previous_word, model_probability=self._model_probability,
                                    completion=completion)
        return self.ranker.keep_typed(top, completion, k, self._model_probability)

    def _personal_with(self, prefix: str) -> list[int]:
        """Indices of the personal words that start with ``prefix`` (none without active personal words)."""
        if not self._personal_active():
            return []
        lo = bisect.bisect_left(self._personal_sorted, (prefix,))
        hi = bisect.bisect_left(self._personal_sorted, (prefix + "\U0010ffff",))
        return [i for _, i in self._personal_sorted[lo:hi]]

    @property
    def outputs(self) -> tuple:
        """(model output [D], vocabulary logits [V]) at this position, when it was stepped on the personal
        path (personal words, or ``reads_outputs``); (None, None) otherwise."""
        return self._output, self._vocab_logits

    # -- personal words (kept by the session; learnt by ``personalization``) ----
    def personal_state(self) -> PersonalState:
        """This session's personal state, made empty for its model if it has none."""
        if self.personal is None:
            self.personal = PersonalState(self.model.fingerprint, self.model.embedding_dim)
        return self.personal

    def personal_changed(self) -> None:
        """The personal words or adapter changed: re-sort them for completion and re-score this position."""
        self._personal_sorted = sorted((w, i) for i, w in enumerate(self.personal.words))
        self._redo_last_step()  # the current suggestions now include (or re-score) personal words

    def learnable(self, word: str) -> bool:
        """Whether the user history may learn ``word``: never a special token nor a blocklisted word."""
        return self.ranker.learnable(word)

    # -- personalization (``keyboard_lm.inference.personalization``) -------------
    def add_personal_words(self, words) -> dict:
        """Add the user's own words zero-shot: ``personalization.add_personal_words``."""
        return personalization.add_personal_words(self, words)

    def personalize(self, texts, **kwargs) -> dict:
        """Learn this user from their own text, on the device: ``personalization.personalize``."""
        return personalization.personalize(self, texts, **kwargs)

    def choose_history_weight(self, sentences, weights=personalization.HISTORY_WEIGHTS) -> dict:
        """Choose this user's history weight on their held-out text: ``personalization.choose_history_weight``."""
        return personalization.choose_history_weight(self, sentences, weights)

    def learn_history(self, sentences) -> dict:
        """Learn tokenized sentences into the user history: ``personalization.learn_history``."""
        return personalization.learn_history(self, sentences)

    def personalize_sentences(self, sentences, validation_sentences=None, **kwargs) -> dict:
        """Train the personal-word adapter on tokenized sentences: ``personalization.personalize_sentences``."""
        return personalization.personalize_sentences(self, sentences, validation_sentences, **kwargs)

    def save_personal(self, path: str) -> None:
        """Write this user's personal words and adapter to ``path``: ``personalization.save_personal``."""
        personalization.save_personal(self, path)

    def load_personal(self, path: str) -> None:
        """Replace this session's personal state by the file's: ``personalization.load_personal``."""
        personalization.load_personal(self, path)

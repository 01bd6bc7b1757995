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
``PersonalState`` (keyboard_lm.inference.personal): the user's own words
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
import heapq
import math
from typing import Iterable

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.personal import MAX_PERSONAL_WORDS, CharEncoderFile, PersonalState
from keyboard_lm.inference.prefix_cache import PREFIX_CACHE_SIZE, PrefixCache
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text import tokenizer
from keyboard_lm.text.spec import SPECIAL_TOKENS

#: The user history's share of a suggestion's probability (``Session.history_weight``).
HISTORY_WEIGHT = 0.3
#: The history's share after a previous word the user typed n times is ``history_weight * n / (n + K)``:
#: a context the user never typed leaves the model alone, one typed often gets nearly the whole weight.
HISTORY_CONTEXT_K = 4.0
_ANY = object()  # Session._step's context when the word before the position is not known
#: The weights ``Session.personalize`` chooses the user's history weight from, on their held-out text.
HISTORY_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)

def _check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")


class Predictor:
    """Suggestions from one .tflite file; thread-safe (one interpreter per thread).

    Stateless calls (``suggest``, ``complete``) keep the states of the
    ``prefix_cache_size`` most recently used token prefixes
    (``keyboard_lm.inference.prefix_cache``), so a call whose context extends a
    recent one by a word costs one step. ``prefix_cache_size=0`` disables it:
    each call then replays its chunk. The answers are the same either way.
    """

    def __init__(self, model: ModelFile, blocklist: Iterable[str] = (), char_encoder: CharEncoderFile | None = None,
                 prefix_cache_size: int = PREFIX_CACHE_SIZE):
        if isinstance(prefix_cache_size, bool) or not isinstance(prefix_cache_size, int) or prefix_cache_size < 0:
            raise ConfigError("prefix_cache_size must be an int >= 0 (0 disables the cache), "
                              f"got {prefix_cache_size!r}")
        self.model = model
        self.vocab = model.vocab
        if char_encoder is not None:
            fp = char_encoder.meta.get("model_fingerprint")
            if fp != model.fingerprint:
                raise ConfigError(f"{char_encoder.path}: the char encoder was trained for model {str(fp)[:12]}, "
                                  f"not {model.path} ({model.fingerprint[:12]})")
            if int(char_encoder.meta.get("embedding_dim", -1)) != model.embedding_dim:
                raise ConfigError(f"{char_encoder.path}: embeds into {char_encoder.meta.get('embedding_dim')} dims, "
                                  f"the model uses {model.embedding_dim}")
        self.char_encoder = char_encoder
        self._blocked_spellings = set()
        v = len(self.vocab)
        self._never = np.zeros(v, bool)
        self._never[list(SPECIAL_TOKENS.ids)] = True
        for word in blocklist:
            for token in tokenizer.tokenize(word):
                self._blocked_spellings.add(token)  # also kept out of personal words
                if token in self.vocab:
                    self._never[self.vocab.id_of(token)] = True
        # Words sorted by spelling, for prefix ranges in complete().
        words = [(t, i) for i, t in enumerate(self.vocab.tokens) if not self._never[i]]
        words.sort()
        self._sorted_words = [w for w, _ in words]
        self._sorted_ids = np.array([i for _, i in words], np.int64)
        self._suggestable_ids = np.flatnonzero(~self._never)
        self._suggestable_ids.setflags(write=False)  # shared by every session
        self._never_ids = np.flatnonzero(self._never)
        # The position after <bos> from a zero state, where every sentence starts: computed once.
        zero = model.initial_state()
        zero.setflags(write=False)
        top_ids, top_log_probs, state = model.step(SPECIAL_TOKENS.bos_id, zero)
        self._bos_position = (zero, state, top_ids, top_log_probs)
        # and its full distribution, which a completion at a sentence start reads (shared, read-only)
        self._bos_log_probs, _ = model.step_full(SPECIAL_TOKENS.bos_id, zero)
        self._bos_log_probs.setflags(write=False)
        self.prefix_cache_size = prefix_cache_size
        self._prefix_cache = PrefixCache(model, prefix_cache_size, self._bos_position)

    @classmethod
    def load(cls, path: str, blocklist: Iterable[str] = (), runtime: str | None = None,
             char_encoder: str | None = None, prefix_cache_size: int = PREFIX_CACHE_SIZE) -> "Predictor":
        """Load a .tflite exported by ``keyboard-lm export``; raises ModelFileError naming the file.

        ``char_encoder``: the encoder file built for this model (``keyboard-lm personal encoder``),
        needed to add personal words. ``prefix_cache_size``: see the class docstring (0 disables).
        """
        encoder = CharEncoderFile(char_encoder, runtime=runtime) if char_encoder is not None else None
        return cls(ModelFile.load(path, runtime=runtime), blocklist, char_encoder=encoder,
                   prefix_cache_size=prefix_cache_size)

    def session(self, personal: str | None = None, history: UserHistory | None = None,
                learn: bool = True) -> "Session":
        """A new text field; ``personal``: a user's personal-state file to load into it; ``history``: the
        user's history (shared by the user's sessions); ``learn=False``: a field never learnt from."""
        session = Session(self, history=history, learn=learn)
        if personal is not None:
            session.load_personal(personal)
        return session

    def suggest(self, context: str, k: int = 3) -> list[tuple[str, float]]:
        """(word, probability) pairs for the word after ``context``, most likely first.

        The first entry is the one for the center of a 3-slot strip. The answer is what a
        session that committed ``context`` suggests; the prefix cache (class docstring) makes
        a call whose context extends a recent one cost only the new words' steps.
        """
        return self._stateless(context).suggestions(k)

    def complete(self, context: str, prefix: str, k: int = 3) -> list[tuple[str, float]]:
        """The k most probable vocabulary words starting with ``prefix`` after ``context``."""
        return self._stateless(context).complete(prefix, k)

    # -- stateless calls ---------------------------------------------------------
    def _stateless(self, context: str) -> "Session":
        """A session positioned after ``context``, as ``Session.commit(context, replay_tail=True)`` leaves it."""
        s = Session(self)
        if self.prefix_cache_size == 0:
            s.commit(context, replay_tail=True)
        else:
            inputs = self._prefix_cache.chunk_inputs(context)
            s._set_position(inputs[-1], self._prefix_cache.position(inputs))
            s.inputs_in_chunk = len(inputs)
        return s

    # -- shared by sessions --------------------------------------------------
    def _top(self, log_probs: np.ndarray, ids: np.ndarray, k: int,
             personal_words: list[str] = ()) -> list[tuple[str, float]]:
        """The k best of ``ids`` by log-prob, ties by id ascending (the graph's top-k order).

        An id V + i (joint softmax of a session) is ``personal_words[i]``.
        """
        _check_k(k)
        if len(ids) == 0:
            return []
        scores = log_probs[ids]
        if len(ids) > k:
            kth = np.partition(scores, len(ids) - k)[len(ids) - k]  # the k-th largest score
            pick = np.flatnonzero(scores >= kth)  # k of them, more on a tie with the k-th
        else:
            pick = np.arange(len(ids))
        if len(pick) > 1:
            pick = pick[np.lexsort((ids[pick], -scores[pick]))][:k]
        # One exp over the picked scores (in their float32, as before), then plain Python numbers: per-element
        # numpy calls cost more than the handful of items.
        n_vocab, token_of = len(self.vocab), self.vocab.token_of
        return [(token_of(i) if i < n_vocab else personal_words[i - n_vocab], p)
                for i, p in zip(ids[pick].tolist(), np.exp(scores[pick]).tolist())]

    def _top_of_all(self, log_probs: np.ndarray, k: int, personal_words: list[str] = ()) -> list[tuple[str, float]]:
        """``_top(log_probs, every suggestable id (and every personal word), k)`` for a small k, by k argmax passes.

        An argmax is one linear scan, and returns the first (smallest) id of equal maxima: the same k
        words in the same order as the partition and sort of ``_top``, in a third of its time on an
        emulated aarch64 CPU (a suggestion with the user history needs this on every keystroke).
        """
        _check_k(k)
        scores = log_probs.copy()  # log_probs may be shared (the sentence start's); masking works on a copy
        scores[self._never_ids] = -np.inf
        picked = []
        for _ in range(min(k, len(scores) - len(self._never_ids))):
            picked.append(int(scores.argmax()))
            scores[picked[-1]] = -np.inf
        n_vocab, token_of = len(self.vocab), self.vocab.token_of
        return [(token_of(i) if i < n_vocab else personal_words[i - n_vocab], p)  # exp in float32, as _top
                for i, p in zip(picked, np.exp(log_probs[picked]).tolist())]

    def _suggestable(self) -> np.ndarray:
        """Ids that may be suggested (not special, not blocklisted), ascending; read-only."""
        return self._suggestable_ids

    def _prefix_ids(self, prefix: str) -> np.ndarray:
        lo = bisect.bisect_left(self._sorted_words, prefix)
        hi = bisect.bisect_left(self._sorted_words, prefix + "\U0010ffff")
        return self._sorted_ids[lo:hi]


class Session:
    """One text field being typed; not for use by two threads at once."""

    def __init__(self, predictor: Predictor, history: UserHistory | None = None, learn: bool = True):
        self.predictor = predictor
        self._model = predictor.model
        self._all_ids = predictor._suggestable()
        self.personal: PersonalState | None = None
        self.history, self.learning = history, learn
        self._history_weight: float | None = None  # None: the history's own weight, else HISTORY_WEIGHT
        self._personal_sorted: list[tuple[str, int]] = []
        self._reads_outputs = False  # step through the personal path even with no personal word (_positions)
        # Whether a completion read the full distribution at the current position: the user types
        # letters, and will probably do so after the next word too (see _step).
        self._completed_here = False
        self.reset()

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
        n = self.history.context_count(self.previous_word)
        return self.history_weight * n / (n + HISTORY_CONTEXT_K)

    # -- model steps ---------------------------------------------------------
    def _personal_active(self) -> bool:
        return self.personal is not None and (len(self.personal.words) > 0 or self.personal.has_vocab_bias
                                              or self._reads_outputs)

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

    def _step(self, token: int | None, personal_index: int | None, state: np.ndarray, context=None) -> None:
        """One model input: a vocabulary id, or a personal word (its adapted embedding)."""
        self._last_input = (token, personal_index, state)  # to redo the step, or compute the full distribution
        typing, self._completed_here = self._completed_here, False
        if self._personal_active():
            if personal_index is not None:
                logits, output, self._state = self._model.step_embedding(
                    self.personal.adapted_embedding(personal_index), state)
            else:
                logits, output, self._state = self._model.step_hidden(token, state)
            z = self.personal.logits(output, logits)
            m = z.max()
            self._full = z - (m + np.log(np.exp(z - m).sum()))  # [V + n], joint softmax
            self._graph_top = None
            self._output, self._vocab_logits = output, logits
        elif self._history_may_mix_after(context) or typing:
            # The history's mixture reads the model's probability of its candidates; a user who typed letters
            # at the last position will likely complete here too. One full step then serves the strip and the
            # completions, instead of the graph's top K now and the full step again at the first letter.
            self._full, self._state = self._model.step_full(token, state)
            self._graph_top = None
            self._output = self._vocab_logits = None
        else:
            top_ids, top_log_probs, self._state = self._model.step(token, state)
            self._set_graph_top(top_ids, top_log_probs)

    def _set_graph_top(self, top_ids: np.ndarray, top_log_probs: np.ndarray) -> None:
        self._graph_top = (top_ids, top_log_probs)  # [K] each, specials excluded, by log-prob then id
        self._full = None  # computed from _last_input when needed
        self._output = self._vocab_logits = None

    def _set_position(self, token: int, position: tuple) -> None:
        """Stand after ``token`` given a predictor position (state before, state after, graph top)."""
        before, self._state, top_ids, top_log_probs = position
        self._last_input = (token, None, before)
        self._set_graph_top(top_ids, top_log_probs)
        if position is self.predictor._bos_position:  # a sentence start: its distribution was computed at load
            self._full = self.predictor._bos_log_probs

    @property
    def _log_probs(self) -> np.ndarray:
        """Log-probs of the next word [V] (or [V + n] with personal words), computed once per position."""
        if self._full is None:
            token, _, state = self._last_input  # a vocabulary id: personal inputs always step in full
            self._full, _ = self._model.step_full(token, state)
        return self._full

    def _redo_last_step(self) -> None:
        token, personal_index, state = self._last_input
        if personal_index is not None and not self._personal_active():
            personal_index, token = None, SPECIAL_TOKENS.oov_id
        self._step(token, personal_index, state, _ANY)

    def reset(self) -> None:
        """Start a new sentence/field: the state after ``<bos>``."""
        if self._personal_active():
            self._step(SPECIAL_TOKENS.bos_id, None, self._model.initial_state())
        else:  # the same for every sentence: the predictor computed it once
            self._set_position(SPECIAL_TOKENS.bos_id, self.predictor._bos_position)
        self.words_in_sentence = 0
        self.previous_word: str | None = None  # the history's context
        self.steps = 1
        self.inputs_in_chunk = 1  # <bos> is the first input of the first chunk

    def commit_word(self, word: str) -> None:
        """Advance by one already-normalized token (one model step).

        A personal word enters through its adapted embedding; any other word outside the
        vocabulary as ``<oov>``.
        """
        if self.inputs_in_chunk == self._model.seq_len:
            # A new training chunk: the model never saw a state older than seq_len inputs.
            self._state = self._model.initial_state()
            self.inputs_in_chunk = 0
        personal_index = None
        if word not in self.predictor.vocab and self._personal_active():
            personal_index = self.personal.index_of(word)
        self._step(self.predictor.vocab.id_of(word) if personal_index is None else None, personal_index, self._state,
                   word)
        if self.learning and self.history is not None and self._learnable(word):
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

    # -- suggestions -----------------------------------------------------------
    def _top(self, ids: np.ndarray, personal: list[int], k: int, prefix: str = "") -> list[tuple[str, float]]:
        n_personal = len(self.personal.words) if self.personal is not None else 0
        if ids is self._all_ids and len(personal) == n_personal and k <= 8:  # every word: k scans beat a sort
            top = self.predictor._top_of_all(self._log_probs, k, self.personal.words if personal else ())
        elif not personal:
            top = self.predictor._top(self._log_probs, ids, k)
        else:
            joint = np.concatenate([ids, len(self.predictor.vocab) + np.asarray(personal, np.int64)])
            top = self.predictor._top(self._log_probs, joint, k, self.personal.words)
        a = self._history_share()
        return self._with_history(top, k, prefix, a) if a > 0 else top

    def _with_history(self, top, k: int, prefix: str, a: float) -> list[tuple[str, float]]:
        """The k best of the mixture: the model's top k and every word the history knows can be among them.

        A word outside the model's top k has a model probability of at most the k-th's, p_k, so its
        mixture is at most (1 - a) p_k + a p_hist: candidates are taken by p_hist, largest first, and
        the rest are skipped once that bound falls below the k-th best mixture so far. The answer is
        the one scoring every candidate would give (a skipped word scores strictly less).
        """
        vocab, never = self.predictor.vocab, self.predictor._never
        scores = {w: (1 - a) * p for w, p in top}
        also = [*scores, *(self.history.words_with_prefix(prefix) if prefix else ())]
        hist = self.history.candidates(self.previous_word, also=also)
        for w in scores:
            scores[w] += a * hist.get(w, 0.0)
        p_k = top[-1][1] if len(top) >= k else 0.0
        kth = heapq.nlargest(k, scores.values())[-1] if len(scores) >= k else -math.inf
        n_vocab, blocked = len(vocab), self.predictor._blocked_spellings
        personal = self._personal_active()
        for word in sorted(hist, key=hist.get, reverse=True):  # stable: equal p_hist keep their order
            p_hist = hist[word]
            if (1 - a) * p_k + a * p_hist < kth:
                break  # every later candidate has a smaller p_hist: none can reach the k best
            if word in scores or not word.startswith(prefix) or word in blocked:
                continue
            if word in vocab:
                i = vocab.id_of(word)
                if never[i]:
                    continue
                p_model = float(np.exp(self._log_probs[i]))
            else:
                index = self.personal.index_of(word) if personal else None
                p_model = 0.0 if index is None else float(np.exp(self._log_probs[n_vocab + index]))
            scores[word] = (1 - a) * p_model + a * p_hist
            if len(scores) >= k:
                kth = heapq.nlargest(k, scores.values())[-1]
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

    def _graph_suggestions(self, k: int) -> list[tuple[str, float]] | None:
        """The k best suggestions from the graph's top K, or None where they may differ from the full ranking.

        The graph ranked every non-special word; dropping blocklisted ones from its top K leaves
        the best of the rest in order, so the answer is exact whenever k of them remain. Personal
        words and the history change the ranking (None: the full path decides).
        """
        if self._graph_top is None or self._history_active() or self._personal_active():
            return None
        top_ids, top_log_probs = self._graph_top
        if k > len(top_ids):
            return None
        never, vocab, out = self.predictor._never, self.predictor.vocab, []
        for i, log_prob in zip(top_ids.tolist(), top_log_probs):
            if not never[i]:
                out.append((vocab.token_of(i), float(np.exp(log_prob))))
                if len(out) == k:
                    return out
        return None

    def suggestions(self, k: int = 3) -> list[tuple[str, float]]:
        """Next-word candidates after the committed text (shown after a space), personal words included."""
        _check_k(k)
        fast = self._graph_suggestions(k)
        if fast is not None:
            return fast
        personal = list(range(len(self.personal.words))) if self._personal_active() else []
        return self._top(self._all_ids, personal, k)

    def complete(self, prefix: str, k: int = 3) -> list[tuple[str, float]]:
        """The most probable words that start with ``prefix`` (being typed): vocabulary and personal words."""
        normalized = tokenizer.normalize(prefix).strip()
        if not normalized:
            return self.suggestions(k)
        personal = []
        if self._personal_active():
            lo = bisect.bisect_left(self._personal_sorted, (normalized,))
            hi = bisect.bisect_left(self._personal_sorted, (normalized + "\U0010ffff",))
            personal = [i for _, i in self._personal_sorted[lo:hi]]
        self._completed_here = True
        return self._top(self.predictor._prefix_ids(normalized), personal, k, prefix=normalized)

    # -- personal words --------------------------------------------------------
    def _personal_state(self) -> PersonalState:
        if self.personal is None:
            self.personal = PersonalState(self._model.fingerprint, self._model.embedding_dim)
        return self.personal

    def _personal_changed(self) -> None:
        self._personal_sorted = sorted((w, i) for i, w in enumerate(self.personal.words))
        self._redo_last_step()  # the current suggestions now include (or re-score) personal words

    def _classify(self, words) -> dict:
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
            if token in self.predictor.vocab:
                out["in_vocabulary"].append(token)
            elif token in self.predictor._blocked_spellings:
                out["blocked"].append(token)
            elif (self.personal is not None and self.personal.index_of(token) is not None) or token in seen:
                out["already_personal"].append(token)
            else:
                seen.add(token)
                out["added"].append(token)
        return out

    def add_personal_words(self, words) -> dict:
        """Add the user's own words zero-shot (char-encoder embeddings, no training).

        Words are normalized like typed text and must be one token each. Returns what happened
        to every word: ``added``, ``in_vocabulary`` (already predictable), ``already_personal``
        and ``blocked`` (blocklisted). Above the cap of MAX_PERSONAL_WORDS nothing is added and a
        ConfigError says so; a word the encoder cannot take (longer than its byte limit) likewise.
        """
        if self.predictor.char_encoder is None:
            raise ConfigError("personal words need the char encoder: Predictor.load(model, char_encoder=ENCODER.tflite)")
        if not self._model.has_personal_signatures:
            self._model._personal_runner()  # raises the re-export error
        result = self._classify(words)
        if result["added"]:
            state = self._personal_state()
            if len(state.words) + len(result["added"]) > MAX_PERSONAL_WORDS:
                raise ConfigError(f"{len(state.words)} + {len(result['added'])} personal words exceed the cap of "
                                  f"{MAX_PERSONAL_WORDS}; nothing was added (pass the user's most frequent words first)")
            state.add_words(result["added"], self.predictor.char_encoder.encode(result["added"]))
            self._personal_changed()
        return result

    def _positions(self, sentences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(model outputs [N, d], vocabulary logits [N, V], joint targets [N]) at every word of ``sentences``.

        A scratch session steps the frozen model exactly as typing would (chunks of seq_len
        inputs); personal words in the context enter through their current adapted embeddings.
        """
        outputs, logits, targets = [], [], []
        vocab, n_vocab = self.predictor.vocab, len(self.predictor.vocab)
        scratch = Session(self.predictor)  # steps as this session would, without touching its state
        scratch.personal, scratch._reads_outputs = self.personal, True
        scratch._personal_changed()
        for sentence in sentences:
            scratch.reset()
            for i, word in enumerate(sentence):
                outputs.append(scratch._output)
                logits.append(scratch._vocab_logits)
                index = self.personal.index_of(word) if word not in vocab else None
                targets.append(vocab.id_of(word) if index is None else n_vocab + index)
                if i + 1 < len(sentence):  # the last word predicts nothing here
                    scratch.commit_word(word)
        return (np.asarray(outputs, np.float32).reshape(-1, self._model.embedding_dim),
                np.asarray(logits, np.float32).reshape(-1, n_vocab), np.asarray(targets, np.int64))

    def personalize(self, texts, *, validation_texts=None, history: bool = True, adapter: bool = False,
                    choose_weight: bool = True, **options) -> dict:
        """Learn this user from their own text, on the device.

        What measured best on real per-user text (docs/personalization.md) is the default:
        every sentence of ``texts`` is learnt, in the order given (oldest first), into the
        session's user history (``learn_history``; a new ``UserHistory`` when the session has
        none, kept in ``self.history`` for the caller to save), which then mixes into the
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

        if not self.learning:
            raise ConfigError("this session was opened with learn=False (a password or no-suggestion field): "
                              "it learns nothing")
        sentences = split(texts)
        if not (history or adapter):
            raise ConfigError("personalize with history=False needs the adapter (adapter=True, with a char encoder)")
        report = {}
        if adapter:
            report = self.personalize_sentences(sentences, None if validation_texts is None
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
            report.update(self.learn_history(learn_now))
            if held_out:
                report.update(self.choose_history_weight(held_out))
            if learn_after:
                learnt = report["history_words_learnt"]
                report.update(self.learn_history(learn_after))
                report["history_words_learnt"] += learnt
        report["adapter_trained"] = bool(report.get("trained"))
        return report

    def choose_history_weight(self, sentences, weights=HISTORY_WEIGHTS) -> dict:
        """Choose this user's history weight on their held-out ``sentences`` (tokenized, oldest first).

        The sentences stream as a keyboard sees them: at each word, the 3 suggestions at every weight of
        ``weights``, then the word is committed and learnt (into a copy: the history is not changed).
        The weight with the most hits (EMR3) becomes ``self.history.weight`` and is saved with the
        history; equal counts go to the smaller weight (the model alone needs no evidence). Returns ``history_weight`` and
        ``history_weight_emr3`` (each weight's share of hits).
        """
        if self.history is None:
            raise ConfigError("choose_history_weight needs a user history (learn one first)")
        weights = [float(w) for w in weights]
        if not weights or any(not 0 <= w <= 1 for w in weights) or len(set(weights)) != len(weights):
            raise ConfigError(f"history weights must be distinct numbers in [0, 1], got {weights}")
        trial = Session(self.predictor, history=UserHistory.from_dict(self.history.to_dict()))
        if self.personal is not None:
            trial.personal = self.personal
            trial._personal_changed()
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
        self.history.weight = best
        return {"history_weight": best, "history_weight_emr3": {w: hits[w] / words for w in weights},
                "history_weight_words": words}

    def _learnable(self, word: str) -> bool:
        """Whether the user history may learn ``word``: never a special token nor a blocklisted word."""
        return word not in SPECIAL_TOKENS.tokens and word not in self.predictor._blocked_spellings

    def learn_history(self, sentences) -> dict:
        """Learn tokenized ``sentences`` (lists of normalized words, oldest first) into the user history.

        Each word is learnt after the one before it, as ``commit_word`` learns a typed word:
        special tokens and blocklisted words never are.  A session without a history gets a
        new ``UserHistory``.  Returns ``history_words_learnt`` and ``history_words`` (the
        distinct words the history now holds).
        """
        if not self.learning:
            raise ConfigError("this session was opened with learn=False: it learns nothing")
        if self.history is None:
            self.history = UserHistory()
        learnt = 0
        for sentence in sentences:
            previous = None
            for word in sentence:
                if self._learnable(word):
                    self.history.learn_word(previous, word)
                    learnt += 1
                previous = word
        if not learnt:
            raise ConfigError("personalize needs text with at least one word")
        return {"history_words_learnt": learnt, "history_words": self.history.num_words}

    def personalize_sentences(self, sentences, validation_sentences=None, *, max_words: int = MAX_PERSONAL_WORDS,
                              epochs: int = 100, learning_rate: float = 0.003, validation_fraction: float = 0.1,
                              patience: int = 5, seed: int = 0, per_word: bool = False,
                              weight_decay: float = 0.0, stop_on: str = "loss", adapter_options: dict | None = None,
                              grid=None) -> dict:
        """``personalize`` on tokenized sentences (lists of normalized tokens).

        The most frequent out-of-vocabulary words of ``sentences`` (at most ``max_words`` and the
        room left under the cap; the rest are counted in ``not_added``, not dropped silently;
        words the encoder cannot take are counted in ``unencodable``) are added zero-shot, then
        the adapter alone is trained (Adam, full batch) to predict every word of ``sentences``
        with the global model frozen. The epoch with the lowest loss on
        ``validation_sentences`` (or on ``validation_fraction`` of ``sentences``, when there are
        at least 10) is kept: Shenoy's early-stop split (``stop_on="emr3"``: the epoch with the
        highest validation EMR3, as Shenoy & Nguyen stop).

        ``adapter_options`` builds a fresh adapter of another shape (``PersonalState``'s
        ``hidden``, ``layer_norm``, ``init_scale``, ``vocab_bias``: the trainable bias on the
        vocabulary logits, which also trains when the user has no word outside the vocabulary);
        ``grid``, a list of such dicts (``SHENOY_GRID``), trains one adapter per entry and keeps
        the one with the highest validation EMR3 (``grid_emr3`` in the report).  Both start
        from the zero-shot embeddings, whose positions are computed once. Returns a report.
        """
        import collections
        import random
        import time

        sentences = [list(s) for s in sentences if len(s)]
        if not sentences:
            raise ConfigError("personalize needs text with at least one word")
        if not 0 <= validation_fraction < 1:
            raise ConfigError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
        if self.predictor.char_encoder is None:
            raise ConfigError("personal words need the char encoder: Predictor.load(model, char_encoder=ENCODER.tflite)")
        start = time.perf_counter()
        counts = collections.Counter(w for s in sentences for w in s if w not in self.predictor.vocab
                                     and w not in self.predictor._blocked_spellings)
        existing = set(self.personal.words) if self.personal is not None else set()
        limit = self.predictor.char_encoder.max_bytes
        candidates = [w for w, _ in counts.most_common() if w not in existing]
        unencodable = [w for w in candidates if len(w.encode("utf-8")) > limit]
        candidates = [w for w in candidates if len(w.encode("utf-8")) <= limit]
        room = min(max_words, MAX_PERSONAL_WORDS - len(existing))
        added = self.add_personal_words(candidates[:room])["added"] if candidates[:room] else []
        report = {"sentences": len(sentences), "words_added": added, "not_added": len(candidates) - len(added),
                  "unencodable": len(unencodable)}
        variants = list(grid) if grid is not None else [adapter_options] if adapter_options is not None else None
        if variants is not None and not variants:
            raise ConfigError("personalize grid is empty")
        bias_only = bool(variants) and all(v.get("vocab_bias") for v in variants)
        if (self.personal is None or not self.personal.words) and not bias_only:
            report.update(trained=False, reason="no word outside the vocabulary", seconds=time.perf_counter() - start)
            return report
        self._personal_state()
        if epochs == 0:  # the words only, zero-shot
            report.update(trained=False, reason="epochs=0", personal_words=len(self.personal.words),
                          seconds=time.perf_counter() - start)
            return report
        if validation_sentences is None:
            order = list(range(len(sentences)))
            random.Random(seed).shuffle(order)
            n_val = int(len(sentences) * validation_fraction) if len(sentences) >= 10 else 0
            validation_sentences = [sentences[i] for i in order[:n_val]]
            sentences = [sentences[i] for i in order[n_val:]]
        validation_sentences = [list(s) for s in validation_sentences if len(s)]
        self.personal.per_word = per_word
        h, lg, t = self._positions(sentences)
        validation = self._positions(validation_sentences) if validation_sentences else None
        train = dict(epochs=epochs, learning_rate=learning_rate, optimizer="adam", validation=validation,
                     patience=patience, weight_decay=weight_decay, stop_on=stop_on, never=self.predictor._never)
        if variants is None:  # the session's adapter, trained further
            losses = self.personal.train(h, lg, t, **train)
        else:
            if len(variants) > 1 and validation is None:
                raise ConfigError("a personalize grid is chosen on validation EMR3: give validation_sentences "
                                  "or at least 10 sentences")
            zero_shot, tried = self.personal, []
            for options in variants:
                state = PersonalState(zero_shot.fingerprint, zero_shot.base.shape[1], seed=seed, per_word=per_word,
                                      **options)
                state.add_words(zero_shot.words, zero_shot.base)
                state_losses = state.train(h, lg, t, **train)
                score = state.emr3(*validation, self.predictor._never) if validation is not None else 0.0
                tried.append((score, state, state_losses))
            i = max(range(len(tried)), key=lambda j: (tried[j][0], -j))  # the first of equal scores
            _, self.personal, losses = tried[i]
            report["grid_emr3"] = [round(x[0], 6) for x in tried]
            report["chosen"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in variants[i].items()}
        self._personal_changed()
        report.update(self.personal.last_training)
        report.update({"training_positions": len(t),
                       "validation_positions": 0 if validation is None else len(validation[2]),
                       "personal_words": len(self.personal.words), "epochs_run": len(losses), "trained": True,
                       "seconds": time.perf_counter() - start})
        return report

    def save_personal(self, path: str) -> None:
        """Write this user's personal words and adapter to ``path`` (one file, tied to this model)."""
        if self.personal is None:
            raise ConfigError("this session has no personal words to save")
        self.personal.save(path)

    def load_personal(self, path: str) -> None:
        """Replace this session's personal state by the one in ``path``; a file of another model is refused."""
        state = PersonalState.load(path, self._model.fingerprint)
        if state.base.shape[1] != self._model.embedding_dim:
            raise ConfigError(f"{path}: personal embeddings are {state.base.shape[1]}-dim, the model uses "
                              f"{self._model.embedding_dim}")
        if state.words and not self._model.has_personal_signatures:
            self._model._personal_runner()  # raises the re-export error
        self.personal = state
        self._personal_changed()

"""The recurrent states of recent token prefixes, for a predictor's stateless calls.

``Predictor.suggest(context)`` and ``complete(context, prefix)`` stand where a
session that typed ``context`` would: after the current training chunk of its
last sentence (at most ``seq_len`` model inputs, each chunk from a zero state;
see ``Session.commit``). An app usually passes the whole text field on every
key event, so consecutive contexts share all but their last word. A
``PrefixCache`` keeps, for the ``size`` most recently used input prefixes of
such chunks (token ids, ``<bos>`` included), the state before and after the
prefix's last input and the graph's top K there (and, where the caller's ``full_at``
says the ranker will read the whole distribution, e.g. a phrase-table context, that
distribution, so the call does not step twice), and steps the model only over
the inputs after the longest cached prefix: a text field that grew by one word
costs one step, an edit in the middle the steps from the edit on, the same
context again none. Entries are evicted least recently used first (about
``2 * state_size`` floats each: 0.4 MB for 64 entries at the paper's state
size of 766). It also keeps the scan of the most recent contexts up to their
last space, so a field that grew is tokenized only from there. One lock guards
both (model steps run outside it), so threads may share one cache.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable

from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.text import spec, tokenizer
from keyboard_lm.text.spec import SPECIAL_TOKENS

#: Token prefixes whose recurrent state a Predictor keeps for its stateless calls (``prefix_cache_size``).
PREFIX_CACHE_SIZE = 64
#: Recent contexts whose scan (up to their last space) a Predictor keeps, so a context that extends one
#: is tokenized only from there on.
TEXT_CACHE_SIZE = 8
# The text spec's scan never runs a token over, nor looks past, an ASCII space: the scan of s equals the
# scan of s[:i + 1] followed by the scan of s[i + 1:] wherever s[i] == " ". Checked here against the spec
# so that a spec change turns the reuse off rather than changing answers.
_SPACE_SPLITS_SCANS = (" " in spec.URL_STOP and " " not in spec.NUMBER_JOINERS + spec.WORD_JOINER
                       + spec.TERMINATOR_CHARS + spec.EMOJI_VARIATION_SELECTOR + spec.EMOJI_ZWJ
                       and " " not in spec.EMOJI_SKIN_TONES and not " ".isalnum()
                       and all(not p.startswith(" ") for p in spec.URL_PREFIXES))


class PrefixCache:
    """Positions (state before the last input, state after it, top ids, top log-probs, full log-probs or
    None) of recent prefixes.

    ``bos_position`` is the position after ``<bos>`` from a zero state, which the predictor computed once.
    ``full_at(inputs)``: whether the position after ``inputs`` needs the full distribution (then the
    last input is stepped with ``step_full`` and its log-probs are kept with the entry: about 4V bytes).
    """

    def __init__(self, model: ModelFile, size: int, bos_position: tuple,
                 full_at: Callable[[tuple], bool] | None = None):
        self.model, self.vocab, self.size = model, model.vocab, size
        self.bos_position = bos_position
        self._full_at = full_at
        self._zero_state = bos_position[0]
        # input prefix (tuple of ids) -> (state before its last input, state after it, top ids [K],
        # top log-probs [K], log-probs [V] or None)
        self._states: collections.OrderedDict = collections.OrderedDict()
        # Scanned texts: (normalized text up to and including its last space, words in its last sentence,
        # the last seq_len of them), most recent last; "" (no text) is always a prefix.
        self._text_cache: collections.deque = collections.deque(maxlen=TEXT_CACHE_SIZE)
        self._cache_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._states)

    def chunk_inputs(self, context: str) -> tuple[int, ...]:
        """The model inputs ``commit(context, replay_tail=True)`` steps, from a zero state: the current chunk.

        After the last sentence end, input i of the sentence is ``<bos>`` (i = 0) or word i; chunks
        hold ``seq_len`` inputs, and the chunk of the last input is the one replayed.
        """
        count, tail = self._last_sentence(tokenizer.normalize(context))  # raises ValueError for non-str input
        seq_len = self.model.seq_len
        chunk = count // seq_len  # chunk of the last input (word i is input i)
        if chunk:
            return tuple(self.vocab.encode(tail[len(tail) - (count - chunk * seq_len + 1):]))
        return (SPECIAL_TOKENS.bos_id, *self.vocab.encode(tail))

    @staticmethod
    def _extend(count: int, tail: tuple, events, keep: int) -> tuple[int, tuple]:
        """(words in the last sentence, its last ``keep`` words) after ``events`` follow such a pair."""
        words = list(tail)
        for kind, token in events:
            if kind == "end":
                count, words = 0, []
            else:
                count += 1
                words.append(token)
        return count, tuple(words[-keep:])

    def _last_sentence(self, normalized: str) -> tuple[int, tuple]:
        """(number of words after the last sentence end of ``normalized``, the last ``seq_len`` of them).

        Scans only the text after the longest recent context (up to its last space) that
        ``normalized`` starts with; the scan splits at spaces (``_SPACE_SPLITS_SCANS``).
        """
        keep = self.model.seq_len
        if not _SPACE_SPLITS_SCANS:
            return self._extend(0, (), tokenizer._scan(normalized), keep)
        base, count, tail = "", 0, ()
        with self._cache_lock:
            for entry in self._text_cache:
                if len(entry[0]) > len(base) and normalized.startswith(entry[0]):
                    base, count, tail = entry
        cut = normalized.rfind(" ") + 1  # the new entry: up to and including the last space
        if cut > len(base):
            count, tail = self._extend(count, tail, tokenizer._scan(normalized[len(base):cut]), keep)
            with self._cache_lock:
                self._text_cache.append((normalized[:cut], count, tail))
            base = normalized[:cut]
        return self._extend(count, tail, tokenizer._scan(normalized[len(base):]), keep)

    def position(self, inputs: tuple[int, ...]) -> tuple:
        """(state before the last input, state after it, top ids, top log-probs, log-probs or None) after
        ``inputs`` from zeros.

        Steps only the inputs after the longest cached prefix, and caches every prefix it steps. The last
        input is stepped in full when ``full_at(inputs)``; a cached entry without its full log-probs is
        returned as it is (the session then computes them once).
        """
        cache = self._states
        done, position = 0, None
        with self._cache_lock:
            for n in range(len(inputs), 0, -1):
                position = cache.get(inputs[:n])
                if position is not None:
                    cache.move_to_end(inputs[:n])
                    done = n
                    break
        if done == len(inputs):
            return position
        if done == 0 and inputs[0] == SPECIAL_TOKENS.bos_id:
            position, done = self.bos_position, 1
            new = [(inputs[:1], position)]
        else:
            new = []
        state = self._zero_state if position is None else position[1]
        full_last = self._full_at is not None and done < len(inputs) and self._full_at(inputs)
        for n in range(done, len(inputs)):
            if full_last and n == len(inputs) - 1:
                log_probs, after = self.model.step_full(inputs[n], state)
                log_probs.setflags(write=False)  # shared by every call at this prefix
                position = (state, after, None, None, log_probs)
            else:
                top_ids, top_log_probs, after = self.model.step(inputs[n], state)
                position = (state, after, top_ids, top_log_probs, None)
            new.append((inputs[:n + 1], position))
            state = after
        with self._cache_lock:
            for key, value in new:
                cache[key] = value
                cache.move_to_end(key)
            while len(cache) > self.size:
                cache.popitem(last=False)
        return position

"""Suggestions and completions over an exported model: the ``Predictor`` (one .tflite file, stateless calls,
thread-safe) and the sessions it opens (``keyboard_lm.inference.session``: one text field, streaming).

No TensorFlow: numpy and a TFLite runtime only. The session module's docstring gives the state rule, the
user history's mixture, personal words and the cost of a step.
"""

from __future__ import annotations

import os
from typing import Iterable

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.inference.personal_words import CharEncoderFile
from keyboard_lm.inference.prefix_cache import PREFIX_CACHE_SIZE, PrefixCache
from keyboard_lm.inference.ranker import Ranker
from keyboard_lm.inference.session import Session
from keyboard_lm.inference.user_history import UserHistory
from keyboard_lm.text.phrase_table import MAX_ORDER
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.typos import TypoModel


class Predictor:
    """Suggestions from one .tflite file; thread-safe (one interpreter per thread).

    Stateless calls (``suggest``, ``complete``) keep the states of the
    ``prefix_cache_size`` most recently used token prefixes
    (``keyboard_lm.inference.prefix_cache``), so a call whose context extends a
    recent one by a word costs one step. ``prefix_cache_size=0`` disables it:
    each call then replays its chunk. The answers are the same either way.

    Completions correct one typing slip per word (``keyboard_lm.text.typos``): ``typos`` is the
    channel (a ``TypoModel``; the default's factors), None to match the letters as typed only. Nothing
    is ever corrected on its own: a correction is a word in the strip, and the letters as typed keep
    a place beside it.
    """

    def __init__(self, model: ModelFile, blocklist: Iterable[str] = (), char_encoder: CharEncoderFile | None = None,
                 prefix_cache_size: int = PREFIX_CACHE_SIZE, typos: TypoModel | None = TypoModel()):
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
        #: What may be suggested and how the sources merge (model, phrase table, history, personal words).
        self.ranker = Ranker(self.vocab, _words(blocklist), phrases=model.phrases, gate=model.phrase_gate, typos=typos)
        # The position after <bos> from a zero state, where every sentence starts: computed once.
        zero = model.initial_state()
        zero.setflags(write=False)
        top_ids, top_log_probs, state = model.step(SPECIAL_TOKENS.bos_id, zero)
        # and its full distribution, which a completion at a sentence start reads (shared, read-only)
        self.bos_log_probs, _ = model.step_full(SPECIAL_TOKENS.bos_id, zero)
        self.bos_log_probs.setflags(write=False)
        self.bos_position = (zero, state, top_ids, top_log_probs, self.bos_log_probs)
        self.prefix_cache_size = prefix_cache_size
        # Where the phrase table has an entry, the ranker reads the whole distribution: the cache steps
        # the last input in full there instead of stepping twice (top K, then full).
        full_at = None if self.ranker.phrases is None else (
            lambda inputs: self.ranker.phrase_match(inputs[-MAX_ORDER:]) is not None)
        self._prefix_cache = PrefixCache(model, prefix_cache_size, self.bos_position, full_at)

    @classmethod
    def load(cls, path: str, blocklist: Iterable[str] = (), runtime: str | None = None,
             char_encoder: str | None = None, prefix_cache_size: int = PREFIX_CACHE_SIZE,
             typos: TypoModel | None = TypoModel()) -> "Predictor":
        """Load a .tflite exported by ``keyboard-lm export``; raises ModelFileError naming the file.

        ``char_encoder``: the encoder file built for this model (``keyboard-lm personal encoder``),
        needed to add personal words. ``prefix_cache_size``: see the class docstring (0 disables).
        ``typos``: see the class docstring (None: completions match the letters as typed only).
        """
        encoder = CharEncoderFile(char_encoder, runtime=runtime) if char_encoder is not None else None
        return cls(ModelFile.load(path, runtime=runtime), blocklist, char_encoder=encoder,
                   prefix_cache_size=prefix_cache_size, typos=typos)

    def session(self, personal: str | None = None, history: UserHistory | None = None,
                learn: bool = True) -> "Session":
        """A new text field; ``personal``: a user's personal-state file to load into it; ``history``: the
        user's history (shared by the user's sessions); ``learn=False``: a field never learnt from.
        Arguments of another type are refused here (ConfigError), not when first used."""
        if personal is not None and not isinstance(personal, (str, os.PathLike)):
            raise ConfigError(f"personal must be the path of a personal-state file or None, got "
                              f"{type(personal).__name__}")
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
        """The k most probable vocabulary words being typed as ``prefix`` after ``context`` (``Session.complete``:
        the words that start with it and, with ``typos``, those one slip away)."""
        return self._stateless(context).complete(prefix, k)

    # -- stateless calls ---------------------------------------------------------
    def _stateless(self, context: str) -> "Session":
        """A session positioned after ``context``, as ``Session.commit(context, replay_tail=True)`` leaves it."""
        s = Session(self)
        if self.prefix_cache_size == 0:
            s.commit(context, replay_tail=True)
        else:
            inputs = self._prefix_cache.chunk_inputs(context)
            s.set_position(inputs[-1], self._prefix_cache.position(inputs), len(inputs), chunk_inputs=inputs)
        return s


def _words(blocklist) -> list[str]:
    """The blocklist as a list of strings; a string itself is refused (it would block its letters)."""
    if isinstance(blocklist, (str, bytes)):
        raise ConfigError(f"blocklist must be a list of words, not a single {type(blocklist).__name__} "
                          f"({blocklist[:40]!r}): pass [{blocklist[:40]!r}]")
    try:
        words = list(blocklist)
    except TypeError:
        raise ConfigError(f"blocklist must be a list of words, got {type(blocklist).__name__}") from None
    for i, word in enumerate(words):
        if not isinstance(word, str):
            raise ConfigError(f"blocklist entry {i} is {type(word).__name__} {word!r:.40}, not a word (str)")
    return words

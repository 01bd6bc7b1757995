"""Experimental: the OOV-adapter variants the project measured against its own adapter, for benchmarks.

Not part of the on-device API, and not what ``Session.personalize`` trains: the measurements
(docs/personalization.md, "Every method on real per-user text") found none of them adding anything on
top of the user history. Kept so the measurements can be rerun:

- ``ResearchAdapter``: the adapter with Shenoy & Nguyen's LayerNorm on its input and a random output
  layer (``layer_norm``, ``init_scale``), per-word embedding offsets and logit biases (``per_word``),
  and a trainable bias on the vocabulary logits (``vocab_bias``: on-device fine-tuning of the output
  layer's bias, which also trains when the user has no word outside the vocabulary);
- ``SHENOY_GRID``: their search, a residual MLP with LayerNorm at three hidden shapes and three output
  scales, chosen per user on validation EMR3;
- ``train_variants``: train one adapter per variant on a session's text and keep the best on
  validation EMR3 (``stop_on="emr3"``: the epoch too, as Shenoy & Nguyen stop).
"""

from __future__ import annotations

import time

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.personal_words import MAX_PERSONAL_WORDS, PersonalState
from keyboard_lm.inference.personalization import finish_training, prepare_words, split_positions

#: Shenoy & Nguyen's adapter search: a residual MLP with LayerNorm, the hidden sizes of their grid,
#: a random output layer at three scales, the epoch and the entry chosen per user on validation EMR3.
SHENOY_GRID = tuple({"hidden": hidden, "layer_norm": True, "init_scale": scale}
                    for hidden in ((960,), (128, 256, 128), (256, 512, 256)) for scale in (0.01, 0.1, 1.0))


class ResearchAdapter(PersonalState):
    """``PersonalState`` with the research options (module docstring); saved and loaded as one."""

    def __init__(self, fingerprint: str, embedding_dim: int, hidden=128, seed: int = 0, *, per_word: bool = False,
                 layer_norm: bool = False, init_scale: float = 0.0, vocab_bias: bool = False):
        self._build(fingerprint, embedding_dim, hidden, seed, per_word=per_word, layer_norm=layer_norm,
                    init_scale=init_scale, vocab_bias=vocab_bias)


def train_variants(session, sentences, validation_sentences=None, *, variants=None, per_word: bool = False,
                   weight_decay: float = 0.0, stop_on: str = "loss", max_words: int = MAX_PERSONAL_WORDS,
                   epochs: int = 100, learning_rate: float = 0.003, validation_fraction: float = 0.1,
                   patience: int = 5, seed: int = 0) -> dict:
    """Personalize ``session`` (tokenized sentences) with research adapters; returns the report.

    ``variants``: a list of ``ResearchAdapter`` option dicts (``SHENOY_GRID``, or one dict): one
    adapter per entry, each from the zero-shot embeddings (positions computed once), the one with the
    highest validation EMR3 kept (``grid_emr3``, ``chosen`` in the report). None: the session's own
    adapter, trained with ``per_word``, ``weight_decay`` and ``stop_on``. The words are added as
    ``personalize_sentences`` adds them.
    """
    start = time.perf_counter()
    variants = list(variants) if variants is not None else None
    if variants is not None and not variants:
        raise ConfigError("personalize grid is empty")
    sentences, report = prepare_words(session, sentences, max_words, validation_fraction)
    bias_only = bool(variants) and all(v.get("vocab_bias") for v in variants)
    if (session.personal is None or not session.personal.words) and not bias_only:
        report.update(trained=False, reason="no word outside the vocabulary", seconds=time.perf_counter() - start)
        return report
    if epochs == 0:
        session.personal_state()
        report.update(trained=False, reason="epochs=0", personal_words=len(session.personal.words),
                      seconds=time.perf_counter() - start)
        return report
    train_positions, validation = split_positions(session, sentences, validation_sentences, validation_fraction, seed)
    train = dict(epochs=epochs, learning_rate=learning_rate, optimizer="adam", validation=validation,
                 patience=patience, weight_decay=weight_decay, stop_on=stop_on, never=session.ranker.never)
    if variants is None:  # the session's adapter, trained further
        session.personal.per_word = per_word
        losses = session.personal.train(*train_positions, **train)
        return finish_training(session, report, losses, train_positions, validation, start)
    if len(variants) > 1 and validation is None:
        raise ConfigError("a personalize grid is chosen on validation EMR3: give validation_sentences "
                          "or at least 10 sentences")
    zero_shot, tried = session.personal, []
    for options in variants:
        state = ResearchAdapter(zero_shot.fingerprint, zero_shot.base.shape[1], seed=seed, per_word=per_word,
                                **options)
        state.add_words(zero_shot.words, zero_shot.base)
        state_losses = state.train(*train_positions, **train)
        score = state.emr3(*validation, session.ranker.never) if validation is not None else 0.0
        tried.append((score, state, state_losses))
    i = max(range(len(tried)), key=lambda j: (tried[j][0], -j))  # the first of equal scores
    _, session.personal, losses = tried[i]
    report["grid_emr3"] = [round(x[0], 6) for x in tried]
    report["chosen"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in variants[i].items()}
    return finish_training(session, report, losses, train_positions, validation, start)

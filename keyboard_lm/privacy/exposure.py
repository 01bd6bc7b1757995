"""Exposure of planted canaries (Carlini et al. 2019, "The Secret Sharer"): each one ranked among every secret it
could have been, under a trained model.

- The log-perplexity of a canary, in bits, is -sum log2 p(slot | BOS, prefix,
  earlier slots) over the S secret slots (``canary_log_perplexity``).
  Carlini et al. score the whole sequence; the prefix term is the same for
  every candidate, so ranks, and with them exposure, are unchanged.
- Exposure = log2|R| - log2(rank), rank = 1 + the number of candidates with a
  strictly lower log-perplexity (``exact_exposure``).  When |R| is too large
  to score, Carlini et al. fit a skew-normal to the log-perplexities of a
  random sample of candidates: exposure = -log2 CDF(canary)
  (``extrapolated_exposure``).  ``audit`` picks one by |R|; ``audit_run``
  audits a run directory.
- Calibrated exposure ranks each candidate's log-perplexity minus its
  log-perplexity under a reference model, the model training started from
  (difficulty calibration, Watson et al. 2022).  From a pretrained base the
  base's prior over the candidates ("time time time paper" is likelier than
  "city dust paper power" before any canary is seen) spreads raw exposure by
  several bits whatever was planted; the difference keeps what training did.

Exact ties count in the canary's favour (it ranks ahead of every candidate
with an equal score): exposure is never understated, the conservative side
for a privacy audit; ``audit`` reports how many ties there were.

``canaries`` defines the format and plants the secrets; this module scores them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.evaluation import log_softmax
from keyboard_lm.privacy.canaries import Canary, CanaryFormat, sample_secrets
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary

#: Largest |R| ranked exactly, candidate by candidate: the 670-unit CIFG
#: scores 10^4 default-format candidates in about 3 s on 2 cores, so 10^5 in
#: about half a minute; beyond it, extrapolate.
DEFAULT_MAX_EXHAUSTIVE = 100_000
#: Random candidates the skew-normal is fitted to (Carlini et al. fit to a sample too).
DEFAULT_SAMPLE_SIZE = 10_000
MIN_SAMPLE_SIZE = 100
SCORE_BATCH = 256
_LN2 = math.log(2.0)
_Z_CLIP = 40.0


def _ids(fmt: CanaryFormat, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """(prefix ids, alphabet ids) under ``vocab``; ConfigError naming a token that is OOV."""
    for what, tokens in (("prefix", fmt.prefix), ("alphabet", fmt.alphabet)):
        for t in tokens:
            if vocab.id_of(t) == vocab.special.oov_id:
                raise ConfigError(f"canary {what} token {t!r} is not in the model's vocabulary (it would be "
                                  f"scored as {vocab.special.oov}); choose canary words the vocabulary has")
    return np.array(vocab.encode(fmt.prefix), np.int32), np.array(vocab.encode(fmt.alphabet), np.int32)


def _tokens(fmt: CanaryFormat, vocab: Vocabulary, digits: np.ndarray) -> np.ndarray:
    """Ids [N, prefix + slots] of the secrets given as alphabet positions [N, S]."""
    prefix_ids, alphabet_ids = _ids(fmt, vocab)
    return np.concatenate([np.broadcast_to(prefix_ids, (len(digits), len(prefix_ids))), alphabet_ids[digits]], axis=1)


def _score(predict, tokens: np.ndarray, first: int, batch_size: int) -> np.ndarray:
    """Bits of -log2 p(tokens[:, first:]) given BOS and the tokens before, for ids [N, L]."""
    n = len(tokens)
    if n == 0:
        return np.zeros(0, np.float64)
    # The inputs of ``data.examples.sentence_examples``: BOS, then each token predicts the next.
    x = np.concatenate([np.full((n, 1), SPECIAL_TOKENS.bos_id, np.int32), tokens[:, :-1]], axis=1)  # [N, L]
    out = np.empty(n, np.float64)
    for start in range(0, n, batch_size):
        xb = x[start:start + batch_size]
        scores = np.asarray(predict(xb))  # [B, L, V]
        if scores.ndim != 3 or scores.shape[:2] != xb.shape or scores.shape[2] <= tokens.max():
            raise ConfigError(f"predict returned scores of shape {scores.shape} for inputs of shape {xb.shape}; "
                              f"expected [batch, time, V] with V > {tokens.max()}")
        logp = log_softmax(scores[:, first:, :])  # [B, L - first, V]
        target = tokens[start:start + batch_size, first:, None]
        out[start:start + len(xb)] = -np.take_along_axis(logp, target, axis=-1)[..., 0].sum(axis=1) / _LN2
    if np.isnan(out).any():
        raise ConfigError("the model's scores are not finite (NaN log-perplexity); is the run diverged?")
    return out


def canary_log_perplexity(predict, vocab: Vocabulary, texts: Sequence[str], fmt: CanaryFormat = CanaryFormat(),
                          *, whole_sequence: bool = False, batch_size: int = SCORE_BATCH) -> np.ndarray:
    """Log-perplexity in bits of each canary text under ``predict`` (Carlini et al. 2019).

    Args:
      predict: int32 ids [B, T] -> unnormalized scores [B, T, V] (logits,
        as for ``evaluation.evaluate_predict_fn``).
      vocab: the model's vocabulary.
      texts: canaries of ``fmt``, each tokenizing to prefix + secret.
      fmt: their format.
      whole_sequence: score the prefix tokens too (Carlini et al.'s
        definition); by default only the secret slots, which ranks the same.
      batch_size: sequences per ``predict`` call.
    Returns:
      float64 [len(texts)]: -sum log2 p(token | BOS and the tokens before).
    """
    _ids(fmt, vocab)  # an OOV token fails before any text is parsed
    digits = np.array([[fmt.alphabet.index(t) for t in fmt.parse(text)] for text in texts], np.int64)
    tokens = _tokens(fmt, vocab, digits.reshape(-1, fmt.slots))  # [N, prefix + slots]
    return _score(predict, tokens, 0 if whole_sequence else len(fmt.prefix), batch_size)


def _check_scores(what: str, scores) -> np.ndarray:
    scores = np.asarray(scores, np.float64).reshape(-1)
    if scores.size == 0:
        raise ConfigError(f"{what}: no log-perplexities given")
    if np.isnan(scores).any():
        raise ConfigError(f"{what}: log-perplexities contain NaN")
    return scores


def exact_exposure(canary_score: float, candidate_scores) -> float:
    """Exposure log2|R| - log2(rank) of Carlini et al. 2019, R = all ``candidate_scores``.

    rank = 1 + the number of candidates with a strictly lower log-perplexity;
    candidates tied with the canary rank behind it (see the module
    docstring).  0 for a canary ranked last, log2|R| for one ranked first.
    """
    scores = _check_scores("exact exposure", candidate_scores)
    if math.isnan(canary_score):
        raise ConfigError("exact exposure: the canary's log-perplexity is NaN")
    rank = 1 + int(np.count_nonzero(scores < canary_score))
    return math.log2(scores.size) - math.log2(min(rank, scores.size))


def _fit_skewnorm(sample_scores) -> tuple[float, float, float]:
    try:
        from scipy.stats import skewnorm
    except ImportError:
        raise ConfigError("extrapolated exposure needs scipy (installed with the train extra)") from None
    sample = _check_scores("extrapolated exposure", sample_scores)
    if sample.size < MIN_SAMPLE_SIZE:
        raise ConfigError(f"extrapolated exposure needs at least {MIN_SAMPLE_SIZE} sampled candidates, "
                          f"got {sample.size}")
    if not np.isfinite(sample).all() or np.ptp(sample) == 0:
        raise ConfigError("extrapolated exposure: the sampled log-perplexities are infinite or all equal; "
                          "no skew-normal fits them")
    return tuple(float(v) for v in skewnorm.fit(sample))


def _tail_exposure(canary_score: float, fit: tuple[float, float, float], space_size: int) -> float:
    from scipy.stats import skewnorm

    a, loc, scale = fit
    # scipy's skewnorm CDF breaks down far from loc (about 10^3 scales up it returns CDF(loc)); 40 scales
    # out it is already 1, or below 2 Phi(-40) < 2^-1100, so clipping there changes no exposure below 1,100 bits.
    z = min(max((canary_score - loc) / scale, -_Z_CLIP), _Z_CLIP)
    log_cdf = float(skewnorm.logcdf(z, a))  # log, not cdf: the tail below 2^-1074 still counts
    return min(max(0.0, -log_cdf / _LN2), math.log2(space_size))


def extrapolated_exposure(canary_score: float, sample_scores, space_size: int) -> float:
    """Exposure from a skew-normal fit to sampled candidates (Carlini et al. 2019): -log2 CDF(canary).

    Args:
      canary_score: the canary's log-perplexity.
      sample_scores: log-perplexities of candidates drawn uniformly from R.
      space_size: |R|; the result is capped at log2|R|, the exact maximum.

    The fit follows the bulk of the distribution.  Log-perplexities of
    discrete secrets have a hard minimum that a skew-normal's tail overshoots,
    so the most exposed canaries come out too low: on 10^5 secrets scored by
    independent random slot distributions, 5,000 samples give 10 to 13 bits
    for the first-ranked (16.6 exact) and within 0.5 bits from rank 1,000 on.
    ``audit`` therefore ranks exactly up to ``DEFAULT_MAX_EXHAUSTIVE``.
    """
    if math.isnan(canary_score):
        raise ConfigError("extrapolated exposure: the canary's log-perplexity is NaN")
    if space_size < 1:
        raise ConfigError(f"extrapolated exposure: space size must be >= 1, got {space_size}")
    return _tail_exposure(canary_score, _fit_skewnorm(sample_scores), space_size)


def _read_placements(placements: dict) -> tuple[CanaryFormat, list[tuple[Canary, int, list[str]]]]:
    """(format, [(canary, repeats, its clients)]); placements made before canaries could share clients name
    one client."""
    try:
        fmt = CanaryFormat.from_dict(placements["format"])
        rows = [(Canary(fmt, fmt.parse(r["text"])), int(r["repeats"]), list(r.get("clients") or [r["client"]]))
                for r in placements["canaries"]]
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"not a canary placement record (missing or malformed {e})") from None
    return fmt, rows


def audit(predict, vocab: Vocabulary, placements: dict, *, controls: Sequence[Canary] = (),
          max_exhaustive: int = DEFAULT_MAX_EXHAUSTIVE, sample_size: int = DEFAULT_SAMPLE_SIZE, seed: int = 0,
          batch_size: int = SCORE_BATCH, reference=None) -> list[dict]:
    """Exposure of every planted canary (and of unplanted ``controls``) under ``predict``.

    Args:
      predict, vocab: the model, as for ``canary_log_perplexity``.
      placements: the record ``plant_canaries`` returned.
      controls: canaries of the same format that were never planted (e.g.
        the rest of a ``make_canaries`` draw): the exposure of a secret the
        model never saw, reported with repeats 0.
      max_exhaustive: rank exactly when |R| is at most this; else extrapolate.
      sample_size: random candidates for the skew-normal fit.
      seed: draws that sample.
      batch_size: sequences per ``predict`` call.
      reference: a ``predict`` of the model training started from (a
        public base), or None.  With it each candidate's score is also
        calibrated: its log-perplexity minus the reference's, the bits
        training took off it, ranked among every candidate's the same way
        (difficulty calibration, Watson et al. 2022; the reference models of
        Carlini et al. 2022).  A candidate the base already found likely no
        longer ranks high for that alone.
    Returns:
      One row per canary: text, secret, repeats, clients (none for a
      control), client (the first, or None), log_perplexity
      (bits, secret slots), rank and ties (exact only, else None), exposure,
      max_exposure (log2|R|) and method (``exact`` or ``extrapolated``); with
      a reference also reference_log_perplexity and calibrated_exposure.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    fmt, rows = _read_placements(placements)
    planted = {c.secret for c, _, _ in rows}
    for c in controls:
        if c.format != fmt:
            raise ConfigError(f"control canary {c.text!r} is not of the planted canaries' format")
        if c.secret in planted:
            raise ConfigError(f"control canary {c.text!r} was planted; controls must be secrets never planted")
    rows += [(c, 0, []) for c in controls]
    k = len(fmt.alphabet)
    digits = np.array([[fmt.alphabet.index(t) for t in c.secret] for c, _, _ in rows], np.int64)  # [canaries, S]
    place = k ** np.arange(fmt.slots - 1, -1, -1)

    def scored(fn, candidates):
        return _score(fn, _tokens(fmt, vocab, candidates), len(fmt.prefix), batch_size)

    out = []
    if fmt.space_size <= max_exhaustive:
        every = np.arange(fmt.space_size, dtype=np.int64)
        all_digits = (every[:, None] // place) % k  # [|R|, S], as CanaryFormat.secret
        scores = scored(predict, all_digits)
        calibrated = None if reference is None else scores - scored(reference, all_digits)
        ordered = np.sort(scores)
        for (c, repeats, owners), d in zip(rows, digits):
            i = int(d @ place)
            s = scores[i]
            below = int(np.searchsorted(ordered, s, side="left"))
            ties = int(np.searchsorted(ordered, s, side="right")) - below - 1
            row = _row(c, repeats, owners, s, below + 1, ties, exact_exposure(s, scores), fmt, "exact")
            if calibrated is not None:
                row.update(reference_log_perplexity=float(s - calibrated[i]),
                           calibrated_exposure=exact_exposure(calibrated[i], calibrated))
            out.append(row)
    else:
        if sample_size < MIN_SAMPLE_SIZE:
            raise ConfigError(f"sample_size must be >= {MIN_SAMPLE_SIZE} to fit a skew-normal, got {sample_size}")
        sample = sample_secrets(fmt, sample_size, seed)
        sample_scores = scored(predict, sample)
        fit = _fit_skewnorm(sample_scores)
        scores = scored(predict, digits)
        if reference is not None:
            ref = scored(reference, digits)
            fit_calibrated = _fit_skewnorm(sample_scores - scored(reference, sample))
        for j, ((c, repeats, owners), s) in enumerate(zip(rows, scores)):
            row = _row(c, repeats, owners, s, None, None, _tail_exposure(s, fit, fmt.space_size), fmt,
                       "extrapolated")
            if reference is not None:
                row.update(reference_log_perplexity=float(ref[j]),
                           calibrated_exposure=_tail_exposure(s - ref[j], fit_calibrated, fmt.space_size))
            out.append(row)
    return out


def _row(c: Canary, repeats, owners, score, rank, ties, exposure, fmt: CanaryFormat, method: str) -> dict:
    return {"text": c.text, "secret": list(c.secret), "repeats": repeats, "client": owners[0] if owners else None,
            "clients": list(owners),
            "log_perplexity": float(score), "rank": rank, "ties": ties, "exposure": float(exposure),
            "max_exposure": fmt.max_exposure, "method": method}


def keras_predict_fn(model, seq_len: int):
    """``predict`` for a Keras model on inputs [B, seq_len] (imports TensorFlow)."""
    import tensorflow as tf

    fn = tf.function(lambda x: model(x, training=False), input_signature=[tf.TensorSpec([None, seq_len], tf.int32)])
    return lambda x: fn(x).numpy()


def audit_run(run_dir: str, placements: dict, reference_weights: dict | None = None, **kwargs) -> list[dict]:
    """``audit`` of the model in a run directory (``models.run_dir.load_run``).

    ``reference_weights``: the weights of the reference model for calibrated
    exposure (the run's start, ``models.warm_start.start_weights``), or None.
    ``kwargs`` go to ``audit``.  Whether the run was trained on the planted
    corpus is for the caller to check: ``placements["corpus_fingerprint"]``
    against the run's ``info["data"]["fingerprint"]`` (a clean run audited
    with the same placements is the usual baseline).
    """
    from keyboard_lm.models.run_dir import build_loaded_model, load_run

    fmt, _ = _read_placements(placements)
    run = load_run(run_dir)
    _ids(fmt, run.vocab)  # fail on an OOV canary token before building the model
    length = len(fmt.prefix) + fmt.slots
    predict = keras_predict_fn(build_loaded_model(run), length)
    reference = None
    if reference_weights is not None:
        start = dataclasses.replace(run, weights=reference_weights)
        reference = keras_predict_fn(build_loaded_model(start), length)
    return audit(predict, run.vocab, placements, reference=reference, **kwargs)


def format_audit(rows: list[dict]) -> str:
    """A plain-text table of ``audit``'s rows, in their order."""
    if not rows:
        return "(no canaries)"
    calibrated = all("calibrated_exposure" in r for r in rows)
    head = ["canary", "repeats", "client", "log-ppl", "rank", "exposure", *(["calibrated"] if calibrated else []),
            "max", "method"]
    lines = []
    for r in rows:
        rank = "-" if r["rank"] is None else f"{r['rank']:,}" + (f" ({r['ties']} tied)" if r["ties"] else "")
        others = len(r.get("clients") or []) - 1
        lines.append([r["text"], str(r["repeats"]), "-" if r["client"] is None
                      else str(r["client"]) + (f" +{others}" if others > 0 else ""),
                      f"{r['log_perplexity']:.2f}", rank, f"{r['exposure']:.2f}",
                      *([f"{r['calibrated_exposure']:.2f}"] if calibrated else []), f"{r['max_exposure']:.2f}",
                      r["method"]])
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    out = ["exposure in bits: log2|R| - log2(rank), or -log2 CDF when extrapolated; log-ppl in bits over the "
           "secret slots; repeats 0: never planted; repeats are per client, +n: in n clients more"
           + ("; calibrated: the same rank of log-ppl minus the run's start's" if calibrated else ""),
           "  ".join(h.ljust(w) if i < 3 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    out += ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
            for cells in lines]
    return "\n".join(out)

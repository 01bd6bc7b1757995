"""Evaluation of a next-word model on held-out clients: pooled and per client.

Framework-free: any ``predict`` that maps int32 token ids [B, T] to scores
[B, T, V] (logits or log-probabilities) can be evaluated: a Keras model, a
TFLite interpreter or the n-gram baseline.  The metric definitions are those
of ``keyboard_lm.models.metrics`` (recall@k of Hard et al., in-vocabulary
accuracy@k of Ro et al., perplexity, OOV rate), computed here in numpy and
checked against the Keras metrics by a test.

Perplexity is reported three ways, because the papers differ: over every
target (``perplexity``, end-of-sentence included; also Ji et al.'s
2^mean(-log2 p), which is the same number), without end-of-sentence targets
(``perplexity_no_eos``, Ro et al.'s simulation figures) and without
end-of-sentence and out-of-vocabulary targets (``perplexity_no_eos_oov``, Ro
et al.'s DP table). ``intervals`` gives a bootstrap interval over the
evaluated users for any pooled metric.
"""

from __future__ import annotations

import math

import numpy as np

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.data.examples import corpus_examples
from keyboard_lm.text.spec import SPECIAL_TOKENS
from keyboard_lm.text.vocabulary import Vocabulary

EVAL_BATCH = 256
_SP = SPECIAL_TOKENS
# Sums kept per client: name -> (numerator, denominator) columns below.
_SUMS = ("hit1", "hit3", "events", "iv_hit1", "iv_hit3", "iv_events", "ce", "tokens", "oov", "ce_events", "ce_iv")


def log_softmax(scores: np.ndarray) -> np.ndarray:
    """Log-probabilities (float64) from scores over the last axis, stable for large scores."""
    scores = np.asarray(scores, np.float64)
    m = scores.max(axis=-1, keepdims=True)
    return scores - m - np.log(np.exp(scores - m).sum(axis=-1, keepdims=True))


def position_stats(scores: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Per-position sums for scores [N, V] and targets [N] (pad targets ignored)."""
    return _event_stats(*_summary(scores, targets), targets)


def _summary(scores: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the metrics need of scores [N, V]: each target's cross-entropy [N] (float64) and the three
    best words [N, 3], best first."""
    scores = np.asarray(scores)
    rows = np.arange(len(targets))
    m = scores.max(axis=-1, keepdims=True).astype(np.float64)
    z = scores - m  # one float64 [N, V] buffer, exponentiated in place: only the targets' entries are needed
    np.exp(z, out=z)
    ce = m[:, 0] + np.log(z.sum(axis=-1)) - scores[rows, targets]
    return ce, _top3(scores)


def _top3(scores: np.ndarray) -> np.ndarray:
    """The three best words of each row of scores [N, V], best first, ties by id ascending.

    The tie rule is the deployed ranking's (the exported graph's TOPK_V2 and the ``Ranker``): with
    int8 kernels equal scores do occur, and ids are frequency-ordered, so any other rule would score
    the model as the keyboard never ranks it.
    """
    # Special tokens are the first ids of every vocabulary (text spec): candidates are the columns after them.
    first = len(_SP.tokens)
    words = scores[:, first:]
    k = min(3, words.shape[1])
    if words.shape[1] > k:
        top = np.argpartition(words, words.shape[1] - k, axis=-1)[:, -k:]
        kth = np.take_along_axis(words, top, axis=-1).min(axis=-1)
        # Rows where a word left out scores as the k-th best: take the tied words of lowest ids.
        for row in np.flatnonzero((words >= kth[:, None]).sum(axis=-1) > k):
            above = np.flatnonzero(words[row] > kth[row])
            tied = np.flatnonzero(words[row] == kth[row])
            top[row] = np.concatenate([above, tied[:k - len(above)]])
    else:
        top = np.broadcast_to(np.arange(k), (len(words), k))
    order = np.lexsort((top, -np.take_along_axis(words, top, axis=-1)), axis=-1)
    return np.take_along_axis(top, order, axis=-1) + first


def _event_stats(ce: np.ndarray, top3: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Per-position sums from each target's cross-entropy [N] and the three best words [N, 3], best first."""
    hit1 = top3[:, 0] == targets
    hit3 = (top3 == targets[:, None]).any(axis=-1)
    first = len(_SP.tokens)
    token = targets != _SP.pad_id
    event = token & (targets != _SP.eos_id)
    iv = targets >= first
    ce = np.asarray(ce, np.float64)
    return {"hit1": hit1 & event, "hit3": hit3 & event, "events": event,
            "iv_hit1": hit1 & iv, "iv_hit3": hit3 & iv, "iv_events": iv,
            "ce": np.where(token, ce, 0.0), "tokens": token, "oov": event & (targets == _SP.oov_id),
            "ce_events": np.where(event, ce, 0.0), "ce_iv": np.where(iv, ce, 0.0)}


def _perplexity(loss: float) -> float:
    if loss != loss:
        return float("nan")
    return math.exp(loss) if loss < 700 else float("inf")


#: Each pooled ratio metric: (its numerator's sum, its denominator's sum). A perplexity is exp of its loss.
_RATIOS = {"recall_at_1": ("hit1", "events"), "recall_at_3": ("hit3", "events"),
           "iv_accuracy_at_1": ("iv_hit1", "iv_events"), "iv_accuracy_at_3": ("iv_hit3", "iv_events"),
           "loss": ("ce", "tokens"), "loss_no_eos": ("ce_events", "events"), "loss_no_eos_oov": ("ce_iv", "iv_events"),
           "oov_rate": ("oov", "events")}
_PERPLEXITIES = {"perplexity": "loss", "perplexity_no_eos": "loss_no_eos", "perplexity_no_eos_oov": "loss_no_eos_oov"}
#: The denominators, kept in every result so pooled sums (and intervals) can be rebuilt from per-client metrics.
_COUNTS = {"num_events": "events", "num_tokens": "tokens", "num_iv_events": "iv_events"}
_COUNT_OF = {key: name for name, key in _COUNTS.items()}


def _metrics(s: dict[str, float]) -> dict:
    div = lambda a, b: a / b if b else float("nan")  # noqa: E731
    out = {name: div(s[num], s[den]) for name, (num, den) in _RATIOS.items()}
    out.update({name: _perplexity(out[loss]) for name, loss in _PERPLEXITIES.items()})
    out.update({name: int(s[key]) for name, key in _COUNTS.items()})
    return out


def evaluate_predict_fn(predict, corpus: Corpus, client_ids, vocab: Vocabulary,
                        seq_len: int = 20, batch_size: int = EVAL_BATCH) -> dict:
    """Metrics of ``predict`` on the given clients' text, every next-word event once.

    Returns {"pooled": {...}, "clients": {client_id: {...}}}; pooled sums each
    metric's numerator and denominator over all clients' events (Hard et al.
    report pooled recall).
    """
    def summary(x, y):
        scores = np.asarray(predict(x))  # [B, T, V]
        return _summary(scores.reshape(y.size, -1), y.reshape(-1))

    return _evaluate(summary, corpus, client_ids, vocab, seq_len, batch_size)


def _evaluate(summary, corpus: Corpus, client_ids, vocab: Vocabulary, seq_len: int, batch_size: int) -> dict:
    """``evaluate_predict_fn`` for a ``summary(x [B, T], y [B, T])`` giving (cross-entropy, the best three words)."""
    client_ids = list(client_ids)
    xs, ys, owner = [], [], []
    for i, cid in enumerate(client_ids):
        for x, y in corpus_examples(corpus.sentences([cid]), vocab, seq_len):
            xs.append(x)
            ys.append(y)
            owner.append(i)
    x_all, y_all = np.array(xs, np.int32).reshape(-1, seq_len), np.array(ys, np.int32).reshape(-1, seq_len)
    owner_pos = np.repeat(np.array(owner, np.int64), seq_len)
    sums = np.zeros((len(client_ids), len(_SUMS)))
    for start in range(0, len(x_all), batch_size):
        y = y_all[start:start + batch_size]
        ce, top3 = summary(x_all[start:start + batch_size], y)
        targets = y.reshape(-1)
        stats = _event_stats(np.reshape(ce, -1), np.reshape(top3, (len(targets), -1)), targets)
        who = owner_pos[start * seq_len:start * seq_len + len(targets)]
        for j, name in enumerate(_SUMS):
            sums[:, j] += np.bincount(who, weights=stats[name].astype(np.float64), minlength=len(client_ids))
    per_client = {cid: _metrics(dict(zip(_SUMS, sums[i]))) for i, cid in enumerate(client_ids)}
    return {"pooled": _metrics(dict(zip(_SUMS, sums.sum(axis=0)))), "clients": per_client}


def evaluate_model(model, corpus: Corpus, client_ids, vocab: Vocabulary, seq_len: int = 20) -> dict:
    """``evaluate_predict_fn`` for a Keras model (imports TensorFlow lazily).

    The cross-entropy and the top three words are computed in the model's graph, so only [B, T] and
    [B, T, 3] arrays leave it, not the [B, T, V] scores (summarizing those in numpy cost twice the
    forward pass). Cross-entropy is then float32 where ``evaluate_predict_fn`` sums float64: the
    two differ in the sixth digit of a perplexity.
    """
    import tensorflow as tf

    # One traced function per model and sequence length (trainers evaluate the same model every round).
    cache = model.__dict__.setdefault("_kblm_eval_fns", {})
    if seq_len not in cache:
        first, k = len(_SP.tokens), min(3, len(vocab) - len(_SP.tokens))

        @tf.function(input_signature=[tf.TensorSpec([None, seq_len], tf.int32)] * 2)
        def summary(x, y):
            logits = tf.cast(model(x, training=False), tf.float32)
            ce = tf.reduce_logsumexp(logits, axis=-1) - tf.gather(logits, y, batch_dims=2)
            top3 = tf.math.top_k(logits[..., first:], k=k).indices + first  # sorted, best first
            return ce, top3

        cache[seq_len] = summary
    fn = cache[seq_len]
    return _evaluate(lambda x, y: tuple(t.numpy() for t in fn(x, y)), corpus, client_ids, vocab, seq_len,
                     EVAL_BATCH)


_HEADLINE = ("recall_at_1", "recall_at_3", "perplexity", "perplexity_no_eos", "perplexity_no_eos_oov")


def intervals(result: dict, metrics=_HEADLINE, *, level: float = 0.95, replicates: int = 1000,
              seed: int = 0) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of pooled metrics over the evaluated users.

    Users (clients) are drawn with replacement ``replicates`` times; each draw pools its users' sums as
    ``evaluate_predict_fn`` does, so an interval says how much the figure depends on which users were held
    out, the unit the papers sample. Needs at least two users.
    """
    draws = _bootstrap([result], metrics, level, replicates, seed)
    return {m: _bounds(draws[m][0], level) for m in metrics}


def paired_intervals(result: dict, reference: dict, metrics=("recall_at_1", "recall_at_3"), *,
                     level: float = 0.95, replicates: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Intervals of the ratio result / reference (for perplexities: of the perplexity ratio), both pooled over
    the same bootstrap draws of the same users: the interval of a comparison, far narrower than either
    figure's own interval when the two models succeed and fail on the same users."""
    if set(result["clients"]) != set(reference["clients"]):
        from keyboard_lm.errors import ConfigError

        raise ConfigError("paired intervals need the same evaluated users in both results "
                          f"({len(result['clients'])} and {len(reference['clients'])} users)")
    reference = {**reference, "clients": {c: reference["clients"][c] for c in result["clients"]}}
    draws = _bootstrap([result, reference], metrics, level, replicates, seed)
    return {m: _bounds(draws[m][0] / draws[m][1], level) for m in metrics}


def _bootstrap(results: list[dict], metrics, level: float, replicates: int, seed: int) -> dict[str, list]:
    """{metric: [each result's pooled metric in each of ``replicates`` draws of users]}, perplexities as such."""
    from keyboard_lm.errors import ConfigError

    n = len(results[0]["clients"])
    if n < 2:
        raise ConfigError(f"intervals need at least 2 evaluated users, got {n}")
    if not 0 < level < 1:
        raise ConfigError(f"interval level must be in (0, 1), got {level}")
    unknown = [m for m in metrics if m not in _RATIOS and m not in _PERPLEXITIES]
    if unknown:
        raise ConfigError(f"no interval for {unknown}: choose from {sorted({*_RATIOS, *_PERPLEXITIES})}")
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1 / n), size=replicates).astype(np.float64)
    out = {}
    for metric in metrics:
        ratio = _PERPLEXITIES.get(metric, metric)
        out[metric] = []
        for result in results:
            clients = list(result["clients"].values())
            den = np.array([c[_COUNT_OF[_RATIOS[ratio][1]]] for c in clients], np.float64)
            num = np.nan_to_num(np.array([c[ratio] for c in clients], np.float64)) * den  # a user's sum
            with np.errstate(invalid="ignore", divide="ignore"):
                pooled = (weights @ num) / (weights @ den)  # [replicates]
            with np.errstate(over="ignore"):
                out[metric].append(np.exp(pooled) if metric in _PERPLEXITIES else pooled)
    return out


def _bounds(values: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.nanpercentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def validation_score(pooled: dict) -> tuple[float, float]:
    """How model selection ranks a validation result: recall@3, then lower loss (larger is better)."""
    return pooled["recall_at_3"], -pooled["loss"]


def summarize(result: dict) -> str:
    """One line of the pooled metrics."""
    p = result["pooled"]
    return (f"recall@1 {p['recall_at_1']:.4f}  recall@3 {p['recall_at_3']:.4f}  "
            f"iv-acc@1 {p['iv_accuracy_at_1']:.4f}  iv-acc@3 {p['iv_accuracy_at_3']:.4f}  "
            f"perplexity {p['perplexity']:.1f} (no EOS {p['perplexity_no_eos']:.1f}, no EOS/OOV "
            f"{p['perplexity_no_eos_oov']:.1f})  OOV {p['oov_rate']:.2%}  events {p['num_events']:,}")


def per_client_table(result: dict, limit: int | None = None) -> str:
    """Per-client metrics, largest clients first."""
    rows = sorted(result["clients"].items(), key=lambda kv: -kv[1]["num_events"])
    lines = [f"{'client':30s} {'events':>7s} {'recall@1':>9s} {'recall@3':>9s} {'ppl':>8s}"]
    for cid, m in rows[:limit]:
        lines.append(f"{cid[:30]:30s} {m['num_events']:7d} {m['recall_at_1']:9.4f} {m['recall_at_3']:9.4f} "
                     f"{m['perplexity']:8.1f}")
    return "\n".join(lines)

"""Evaluation of a next-word model on held-out clients: pooled and per client.

Framework-free: any ``predict`` that maps int32 token ids [B, T] to scores
[B, T, V] (logits or log-probabilities) can be evaluated: a Keras model, a
TFLite interpreter or the n-gram baseline.  The metric definitions are those
of ``keyboard_lm.models.metrics`` (recall@k of Hard et al., in-vocabulary
accuracy@k of Ro et al., perplexity, OOV rate), computed here in numpy and
checked against the Keras metrics by a test.
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
_SUMS = ("hit1", "hit3", "events", "iv_hit1", "iv_hit3", "iv_events", "ce", "tokens", "oov")


def log_softmax(scores: np.ndarray) -> np.ndarray:
    """Log-probabilities (float64) from scores over the last axis, stable for large scores."""
    scores = np.asarray(scores, np.float64)
    m = scores.max(axis=-1, keepdims=True)
    return scores - m - np.log(np.exp(scores - m).sum(axis=-1, keepdims=True))


def position_stats(scores: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Per-position sums for scores [N, V] and targets [N] (pad targets ignored)."""
    scores = np.asarray(scores)
    rows = np.arange(len(targets))
    m = scores.max(axis=-1, keepdims=True).astype(np.float64)
    z = scores - m  # one float64 [N, V] buffer, exponentiated in place: only the targets' entries are needed
    np.exp(z, out=z)
    ce = m[:, 0] + np.log(z.sum(axis=-1)) - scores[rows, targets]
    # Special tokens are the first ids of every vocabulary (text spec): candidates are the columns after them.
    first = len(_SP.tokens)
    words = scores[:, first:]
    top3 = (np.argpartition(words, words.shape[1] - 3, axis=-1)[:, -3:] if words.shape[1] > 3
            else np.argsort(-words, axis=-1)[:, :3]) + first
    top3_scores = np.take_along_axis(scores, top3, axis=-1)
    top1 = np.take_along_axis(top3, np.argmax(top3_scores, axis=-1)[:, None], axis=-1)[:, 0]
    hit1 = top1 == targets
    hit3 = (top3 == targets[:, None]).any(axis=-1)
    token = targets != _SP.pad_id
    event = token & (targets != _SP.eos_id)
    iv = targets >= first
    return {"hit1": hit1 & event, "hit3": hit3 & event, "events": event,
            "iv_hit1": hit1 & iv, "iv_hit3": hit3 & iv, "iv_events": iv,
            "ce": np.where(token, ce, 0.0), "tokens": token, "oov": event & (targets == _SP.oov_id)}


def _perplexity(loss: float) -> float:
    if loss != loss:
        return float("nan")
    return math.exp(loss) if loss < 700 else float("inf")


def _metrics(s: dict[str, float]) -> dict:
    div = lambda a, b: a / b if b else float("nan")  # noqa: E731
    loss = div(s["ce"], s["tokens"])
    return {"recall_at_1": div(s["hit1"], s["events"]), "recall_at_3": div(s["hit3"], s["events"]),
            "iv_accuracy_at_1": div(s["iv_hit1"], s["iv_events"]),
            "iv_accuracy_at_3": div(s["iv_hit3"], s["iv_events"]),
            "loss": loss, "perplexity": _perplexity(loss),
            "oov_rate": div(s["oov"], s["events"]), "num_events": int(s["events"])}


def evaluate_predict_fn(predict, corpus: Corpus, client_ids, vocab: Vocabulary,
                        seq_len: int = 20, batch_size: int = EVAL_BATCH) -> dict:
    """Metrics of ``predict`` on the given clients' text, every next-word event once.

    Returns {"pooled": {...}, "clients": {client_id: {...}}}; pooled sums each
    metric's numerator and denominator over all clients' events (Hard et al.
    report pooled recall).
    """
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
        scores = np.asarray(predict(x_all[start:start + batch_size]))  # [B, T, V]
        targets = y_all[start:start + batch_size].reshape(-1)
        stats = position_stats(scores.reshape(len(targets), -1), targets)
        who = owner_pos[start * seq_len:start * seq_len + len(targets)]
        for j, name in enumerate(_SUMS):
            sums[:, j] += np.bincount(who, weights=stats[name].astype(np.float64), minlength=len(client_ids))
    per_client = {cid: _metrics(dict(zip(_SUMS, sums[i]))) for i, cid in enumerate(client_ids)}
    return {"pooled": _metrics(dict(zip(_SUMS, sums.sum(axis=0)))), "clients": per_client}


def evaluate_model(model, corpus: Corpus, client_ids, vocab: Vocabulary, seq_len: int = 20) -> dict:
    """``evaluate_predict_fn`` for a Keras model (imports TensorFlow lazily)."""
    import tensorflow as tf

    # One traced function per model and sequence length (trainers evaluate the same model every round).
    cache = model.__dict__.setdefault("_kblm_eval_fns", {})
    if seq_len not in cache:
        cache[seq_len] = tf.function(lambda x: model(x, training=False),
                                     input_signature=[tf.TensorSpec([None, seq_len], tf.int32)])
    fn = cache[seq_len]
    return evaluate_predict_fn(lambda x: fn(x).numpy(), corpus, client_ids, vocab, seq_len)


def validation_score(pooled: dict) -> tuple[float, float]:
    """How model selection ranks a validation result: recall@3, then lower loss (larger is better)."""
    return pooled["recall_at_3"], -pooled["loss"]


def summarize(result: dict) -> str:
    """One line of the pooled metrics."""
    p = result["pooled"]
    return (f"recall@1 {p['recall_at_1']:.4f}  recall@3 {p['recall_at_3']:.4f}  "
            f"iv-acc@1 {p['iv_accuracy_at_1']:.4f}  iv-acc@3 {p['iv_accuracy_at_3']:.4f}  "
            f"perplexity {p['perplexity']:.1f}  OOV {p['oov_rate']:.2%}  events {p['num_events']:,}")


def per_client_table(result: dict, limit: int | None = None) -> str:
    """Per-client metrics, largest clients first."""
    rows = sorted(result["clients"].items(), key=lambda kv: -kv[1]["num_events"])
    lines = [f"{'client':30s} {'events':>7s} {'recall@1':>9s} {'recall@3':>9s} {'ppl':>8s}"]
    for cid, m in rows[:limit]:
        lines.append(f"{cid[:30]:30s} {m['num_events']:7d} {m['recall_at_1']:9.4f} {m['recall_at_3']:9.4f} "
                     f"{m['perplexity']:8.1f}")
    return "\n".join(lines)

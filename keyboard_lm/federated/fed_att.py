"""FedAtt: layer-wise attentive aggregation (Ji et al. 2019, "Learning private
neural language modeling with attentive aggregation", eq. 2-4).

For layer l and client k, with server weights w and client weights w_k::

    s_k^l     = || w^l - w_k^l ||_p
    alpha_k^l = softmax over this round's clients of s^l
    w^l      <- w^l - eps * sum_k alpha_k^l (w^l - w_k^l)

In TFF, a client's update is Delta_k = w - w_k, so the aggregate is
``sum_k alpha_k^l Delta_k^l`` and the server applies it with plain SGD of
learning rate eps.  The softmax is computed stably in three federated steps:
the per-layer max of the norms (``federated_max``) is broadcast, each client
returns exp(s_k - max) and exp(s_k - max) * Delta_k, and the server divides
the two sums.

Departures from Ji et al.'s public code (its defaults: eps 1.2, client SGD with
momentum 0.5 at 0.01, 5 local epochs, Gaussian noise of sd 0.001 added to the
server model each round, and ``scipy.linalg.norm(ord=2)``, which is the spectral
norm for a weight matrix and L2 for a vector): eps defaults to 1.0 here, and the
distance is the p-norm of the flattened layer (``norm="flat"``, p = 2: the
Frobenius norm) unless ``norm="spectral"`` asks for theirs (the largest
singular value of a matrix, the L2 norm of a vector). Their noise is
``server_noise.NoisySGD``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keyboard_lm.federated.runtime import import_tff

tff = import_tff()


def _flatten(x):
    return tff.structure.flatten(x) if isinstance(x, tff.structure.Struct) else tf.nest.flatten(x)


def _pack_as(like, flat):
    if isinstance(like, tff.structure.Struct):
        return tff.structure.pack_sequence_as(like, flat)
    return tf.nest.pack_sequence_as(like, flat)


NORMS = ("flat", "spectral")


def _spectral(t: tf.Tensor) -> tf.Tensor:
    if t.shape.rank is not None and t.shape.rank >= 2:
        matrix = tf.reshape(t, [-1, t.shape[-1]])
        return tf.linalg.svd(matrix, compute_uv=False)[0]
    return tf.norm(tf.reshape(t, [-1]), ord=2)


def layer_norms(update, p: float, norm: str = "flat") -> list[tf.Tensor]:
    """[||Delta^l|| for each layer l] as float32 scalars: the p-norm of the flattened layer (``flat``), or
    the largest singular value of a matrix and the L2 norm of a vector (``spectral``)."""
    flat = [tf.cast(t, tf.float32) for t in _flatten(update)]
    if norm == "spectral":
        return [_spectral(t) for t in flat]
    return [tf.norm(tf.reshape(t, [-1]), ord=p) for t in flat]


def _reference_norm(d: np.ndarray, p: float, norm: str) -> float:
    if norm == "spectral":
        return float(np.linalg.norm(d.reshape(-1, d.shape[-1]), ord=2) if d.ndim >= 2
                     else np.linalg.norm(d.ravel(), ord=2))
    return float(np.linalg.norm(d.ravel(), ord=p))


def fedatt_reference(server: list[np.ndarray], clients: list[list[np.ndarray]], eps: float,
                     p: float = 2.0, norm: str = "flat") -> list[np.ndarray]:
    """Plain numpy FedAtt step, the test oracle for the TFF aggregator."""
    out = []
    for l, w in enumerate(server):
        diffs = [w - c[l] for c in clients]
        s = np.array([_reference_norm(d, p, norm) for d in diffs], np.float64)
        alpha = np.exp(s - s.max())
        alpha /= alpha.sum()
        out.append(w - eps * sum(a * d for a, d in zip(alpha, diffs)))
    return out


class FedAttFactory(tff.aggregators.UnweightedAggregationFactory):
    """Aggregates client updates with FedAtt's per-layer attention weights."""

    def __init__(self, p: float = 2.0, norm: str = "flat"):
        if not p > 0:
            raise ValueError(f"FedAtt norm order p must be > 0, got {p}")
        if norm not in NORMS:
            raise ValueError(f"FedAtt norm must be one of {', '.join(NORMS)}, got {norm!r}")
        self._p = float(p)
        self._norm = norm

    def create(self, value_type):
        p, norm = self._p, self._norm
        n_layers = len(tff.structure.flatten(value_type))
        norms_type = tff.TensorType(np.float32, [n_layers])

        @tff.tensorflow.computation(value_type)
        def client_norms(update):
            return tf.stack(layer_norms(update, p, norm))

        @tff.tensorflow.computation(value_type, norms_type)
        def client_scores(update, max_norms):
            flat = _flatten(update)
            e = tf.exp(tf.stack(layer_norms(update, p, norm)) - max_norms)  # [layers], each in (0, 1]
            weighted = [tf.cast(e[i], t.dtype) * t for i, t in enumerate(flat)]
            return _pack_as(update, weighted), e

        @tff.tensorflow.computation(value_type, norms_type)
        def divide(weighted_sum, e_sum):
            flat = _flatten(weighted_sum)
            return _pack_as(weighted_sum, [t / tf.cast(e_sum[i], t.dtype) for i, t in enumerate(flat)])

        @tff.federated_computation()
        def init_fn():
            return tff.federated_value((), tff.SERVER)

        @tff.federated_computation(init_fn.type_signature.result, tff.FederatedType(value_type, tff.CLIENTS))
        def next_fn(state, value):
            norms = tff.federated_map(client_norms, value)
            max_norms = tff.federated_broadcast(tff.federated_max(norms))
            weighted, e = tff.federated_map(client_scores, (value, max_norms))
            result = tff.federated_map(divide, (tff.federated_sum(weighted), tff.federated_sum(e)))
            return tff.templates.MeasuredProcessOutput(
                state=state, result=result, measurements=tff.federated_value((), tff.SERVER))

        return tff.templates.AggregationProcess(init_fn, next_fn)

"""Server SGD that adds Gaussian noise to the global model each round (Ji et al. 2019, eq. 6).

Ji et al. randomize the server model after every aggregation, FedAtt's and
FedAvg's alike (their public code: ``w <- w - eps * step + N(0, sd^2)``), as
a light privacy measure. It is not differential privacy: there is no clipping
of a client's contribution and no accounting; ``--dp`` is that. As a server
optimizer::

    w <- w - lr * g + sd * xi,   xi ~ N(0, I)

The noise is drawn with stateless random ops from (seed, round, tensor), so a
run resumed from a checkpoint draws the same noise as one that never stopped.
"""

from __future__ import annotations

import collections

import tensorflow as tf

from keyboard_lm.federated.runtime import import_tff

tff = import_tff()

LR, STDDEV, SEED, STEP = "learning_rate", "stddev", "seed", "step"


class NoisySGD(tff.learning.optimizers.Optimizer):
    """Plain SGD on the aggregate, then N(0, stddev^2) added to every weight."""

    def __init__(self, learning_rate: float, stddev: float, seed: int = 0):
        if not learning_rate > 0 or not stddev >= 0:
            raise ValueError(f"need learning_rate > 0 and stddev >= 0, got {learning_rate}, {stddev}")
        self._lr, self._stddev, self._seed = learning_rate, stddev, int(seed)

    def initialize(self, specs):
        del specs
        return collections.OrderedDict([(LR, self._lr), (STDDEV, self._stddev),
                                        (SEED, tf.constant(self._seed, tf.int64)),
                                        (STEP, tf.constant(0, tf.int64))])

    def next(self, state, weights, gradients):
        flat_w, flat_g = tf.nest.flatten(weights), tf.nest.flatten(gradients)
        base = tf.stack([state[SEED], state[STEP]])
        new_w = []
        for i, (w, g) in enumerate(zip(flat_w, flat_g)):
            if g is None:
                new_w.append(w)
                continue
            noise = tf.random.stateless_normal(tf.shape(w), tf.random.experimental.stateless_fold_in(base, i),
                                               dtype=w.dtype)
            new_w.append(w - tf.cast(state[LR], w.dtype) * g + tf.cast(state[STDDEV], w.dtype) * noise)
        new_state = collections.OrderedDict(state)
        new_state[STEP] = state[STEP] + 1
        return new_state, tf.nest.pack_sequence_as(weights, new_w)

    def get_hparams(self, state):
        return collections.OrderedDict([(LR, state[LR]), (STDDEV, state[STDDEV])])

    def set_hparams(self, state, hparams):
        new_state = collections.OrderedDict(state)
        new_state[LR], new_state[STDDEV] = hparams[LR], hparams[STDDEV]
        return new_state

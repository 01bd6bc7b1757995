"""Nesterov momentum SGD as a ``tff.learning.optimizers.Optimizer``.

Hard et al. 2018 train the server with Nesterov accelerated gradient
(momentum 0.9, learning rate 1.0).  TFF 0.87 ships heavy-ball momentum only
(``build_sgdm``) and no longer takes Keras optimizers on the server, so this
is the same update in TFF's optimizer interface (Sutskever et al. 2013 form,
as in Keras ``SGD(nesterov=True)``)::

    a <- mu * a + g
    w <- w - lr * (g + mu * a)
"""

from __future__ import annotations

import collections

import tensorflow as tf

from keyboard_lm.federated.runtime import import_tff

tff = import_tff()

LR, MOMENTUM, ACCUMULATOR = "learning_rate", "momentum", "accumulator"


class NesterovSGD(tff.learning.optimizers.Optimizer):
    """SGD with Nesterov momentum; state holds lr, momentum and the accumulator."""

    def __init__(self, learning_rate: float, momentum: float = 0.9):
        if learning_rate < 0 or not 0 <= momentum < 1:
            raise ValueError(f"need learning_rate >= 0 and momentum in [0, 1), got {learning_rate}, {momentum}")
        self._lr = learning_rate
        self._momentum = momentum

    def initialize(self, specs):
        return collections.OrderedDict([
            (LR, self._lr), (MOMENTUM, self._momentum),
            (ACCUMULATOR, tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs))])

    def next(self, state, weights, gradients):
        lr, mu = state[LR], state[MOMENTUM]

        def update(w, a, g):
            if g is None:
                return w, a
            a = tf.cast(mu, a.dtype) * a + g
            return w - tf.cast(lr, w.dtype) * (g + tf.cast(mu, g.dtype) * a), a

        flat_w, flat_a, flat_g = (tf.nest.flatten(x) for x in (weights, state[ACCUMULATOR], gradients))
        pairs = [update(w, a, g) for w, a, g in zip(flat_w, flat_a, flat_g)]
        new_w = tf.nest.pack_sequence_as(weights, [p[0] for p in pairs])
        new_a = tf.nest.pack_sequence_as(state[ACCUMULATOR], [p[1] for p in pairs])
        return collections.OrderedDict([(LR, lr), (MOMENTUM, mu), (ACCUMULATOR, new_a)]), new_w

    def get_hparams(self, state):
        return collections.OrderedDict([(LR, state[LR]), (MOMENTUM, state[MOMENTUM])])

    def set_hparams(self, state, hparams):
        return collections.OrderedDict([(LR, hparams[LR]), (MOMENTUM, hparams[MOMENTUM]),
                                        (ACCUMULATOR, state[ACCUMULATOR])])

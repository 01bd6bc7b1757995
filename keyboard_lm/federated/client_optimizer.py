"""Client SGD with the gradient's global norm clipped, as a ``tff.learning.optimizers.Optimizer``.

TFF's ``build_sgdm`` has no clipping. From a pretrained base, a client whose
text the model finds very surprising (long runs of unusual tokens in a mail
body) can take a step large enough to blow its local model up: on the
SpamAssassin senders one client's training loss reached 6e24 at round 39
under FedAdam, stopping the run, although the server's update clipping would
have bounded that client's update. Clipping each local step's gradient to a
global L2 norm, as centralized training does (``clipnorm``), stops that at
its source::

    g <- g * min(1, clipnorm / ||g||)
    w <- w - lr * g

With ``momentum`` m > 0 (Ji et al.'s clients use 0.5) the clipped gradient
feeds an accumulator as in TFF's ``build_sgdm``: ``a <- m * a + g``,
``w <- w - lr * a``; the accumulator starts at zero in every round.
"""

from __future__ import annotations

import collections

import tensorflow as tf

from keyboard_lm.federated.runtime import import_tff

tff = import_tff()

LR, CLIPNORM, MOMENTUM, ACCUMULATOR = "learning_rate", "clipnorm", "momentum", "accumulator"


class ClippedSGD(tff.learning.optimizers.Optimizer):
    """SGD, with momentum if asked, whose gradient is scaled to a global L2 norm of at most ``clipnorm``."""

    def __init__(self, learning_rate: float, clipnorm: float, momentum: float = 0.0):
        if not learning_rate >= 0 or not clipnorm > 0 or not 0 <= momentum < 1:
            raise ValueError(f"need learning_rate >= 0, clipnorm > 0 and momentum in [0, 1), got "
                             f"{learning_rate}, {clipnorm}, {momentum}")
        self._lr = learning_rate
        self._clipnorm = clipnorm
        self._momentum = momentum

    def initialize(self, specs):
        state = collections.OrderedDict([(LR, self._lr), (CLIPNORM, self._clipnorm)])
        if self._momentum:
            state[MOMENTUM] = self._momentum
            state[ACCUMULATOR] = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), specs)
        return state

    def next(self, state, weights, gradients):
        flat_w, flat_g = tf.nest.flatten(weights), tf.nest.flatten(gradients)
        present = [g for g in flat_g if g is not None]
        clipped, _ = tf.clip_by_global_norm(present, tf.cast(state[CLIPNORM], tf.float32))
        clipped = iter(clipped)
        steps = [None if g is None else next(clipped) for g in flat_g]
        new_state = collections.OrderedDict(state)
        if MOMENTUM in state:
            flat_a = tf.nest.flatten(state[ACCUMULATOR])
            m = state[MOMENTUM]
            steps = [a if g is None else tf.cast(m, a.dtype) * a + g for a, g in zip(flat_a, steps)]
            new_state[ACCUMULATOR] = tf.nest.pack_sequence_as(state[ACCUMULATOR], steps)
        new_w = [w if g is None else w - tf.cast(state[LR], w.dtype) * step
                 for w, g, step in zip(flat_w, flat_g, steps)]
        return new_state, tf.nest.pack_sequence_as(weights, new_w)

    def get_hparams(self, state):
        return collections.OrderedDict((k, v) for k, v in state.items() if k != ACCUMULATOR)

    def set_hparams(self, state, hparams):
        new_state = collections.OrderedDict(state)
        new_state.update((k, hparams[k]) for k in hparams if k != ACCUMULATOR)
        return new_state

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
"""

from __future__ import annotations

import collections

import tensorflow as tf

from keyboard_lm.federated.distributed.tff_runtime import import_tff

tff = import_tff()

LR, CLIPNORM = "learning_rate", "clipnorm"


class ClippedSGD(tff.learning.optimizers.Optimizer):
    """Plain SGD whose gradient is scaled to a global L2 norm of at most ``clipnorm``; no state but hparams."""

    def __init__(self, learning_rate: float, clipnorm: float):
        if not learning_rate >= 0 or not clipnorm > 0:
            raise ValueError(f"need learning_rate >= 0 and clipnorm > 0, got {learning_rate}, {clipnorm}")
        self._lr = learning_rate
        self._clipnorm = clipnorm

    def initialize(self, specs):
        del specs  # stateless apart from the hyper-parameters
        return collections.OrderedDict([(LR, self._lr), (CLIPNORM, self._clipnorm)])

    def next(self, state, weights, gradients):
        flat_w, flat_g = tf.nest.flatten(weights), tf.nest.flatten(gradients)
        present = [g for g in flat_g if g is not None]
        clipped, _ = tf.clip_by_global_norm(present, tf.cast(state[CLIPNORM], tf.float32))
        clipped = iter(clipped)
        new_w = [w if g is None else w - tf.cast(state[LR], w.dtype) * next(clipped)
                 for w, g in zip(flat_w, flat_g)]
        return state, tf.nest.pack_sequence_as(weights, new_w)

    def get_hparams(self, state):
        return collections.OrderedDict([(LR, state[LR]), (CLIPNORM, state[CLIPNORM])])

    def set_hparams(self, state, hparams):
        return collections.OrderedDict([(LR, hparams[LR]), (CLIPNORM, hparams[CLIPNORM])])

"""Training on packed rows: a padded batch's examples laid end to end in full rows, the state reset at each.

``data.length_batches.packed`` packs a batch; ``models.language_model.packed_model`` is the model's view
that resets its state at each example's first position. Each example is computed exactly as in its own
padded row, and the step's loss is the same mean over the same targets, so a packed step is the padded
step on fewer computed positions: on the base corpus 42% of a padded batch's positions are pads, under 1%
of a packed one's. Unlike length-grouped batches it changes no batch's composition.
"""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.models.language_model import packed_model
from keyboard_lm.training.sampled_softmax import use_sampled_softmax


def use_packed_batches(model: tf.keras.Model, dropout: float = 0.0, num_sampled: int = 0,
                       jit_compile: bool = False) -> tf.keras.Model:
    """Make compiled ``model``'s training step take packed batches (((tokens, resets), targets)), through
    ``packed_model`` (``dropout`` as ``model`` was built with); with ``num_sampled`` the sampled softmax of
    ``use_sampled_softmax``, else the compiled loss and metrics as Keras's own step. Evaluation and
    prediction (``model(tokens)``) are unchanged. Returns the packed view. Call before ``WeightAverage``."""
    view = packed_model(model, dropout)
    if num_sampled:
        use_sampled_softmax(model, num_sampled, jit_compile, hidden=view.hidden)
        return view

    def train_step(data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = view(x, training=True)
            loss = model.compute_loss(x, y, y_pred)
        model.optimizer.minimize(loss, model.trainable_variables, tape=tape)
        return model.compute_metrics(x, y, y_pred, None)

    model.train_step = train_step
    model.train_function = None
    return view

"""The sampled-softmax training step of pretraining (Jean et al. 2015), written so XLA can compile it.

``tf.nn.sampled_softmax_loss`` draws its candidates and removes accidental hits
with ops XLA has no kernel for (``LogUniformCandidateSampler``,
``ComputeAccidentalHits``). Here the candidates are drawn by the same sampler
outside the compiled part and the logits are built from them with plain ops
(``sampled_losses``), the same function as TF's ``_compute_sampled_logits``
with ``remove_accidental_hits=True`` and ``subtract_log_q=True``, so the
gradient computation (the recurrence and the sampled output) can run as one
XLA cluster (``tf.function(jit_compile=True)``).
"""

from __future__ import annotations

import tensorflow as tf

#: What TF adds to an accidental hit's logit (``compute_accidental_hits``' weight, -FLT_MAX).
_HIT = -3.4028234663852886e38


def draw_candidates(labels: tf.Tensor, num_sampled: int, vocab_size: int):
    """``num_sampled`` distinct ids from the log-uniform (Zipfian) distribution over ``vocab_size`` ids,
    as ``tf.nn.sampled_softmax_loss`` draws them; ``labels`` [N] int64. Returns (ids [S], expected count of
    each label [N, 1], of each sampled id [S]) (``tf.random.log_uniform_candidate_sampler``)."""
    return tf.random.log_uniform_candidate_sampler(labels[:, None], 1, num_sampled, True, vocab_size)


def sampled_losses(table: tf.Tensor, labels: tf.Tensor, inputs: tf.Tensor, candidates) -> tf.Tensor:
    """Per-position sampled-softmax cross-entropy [N] of ``inputs`` [N, D] against the tied output
    ``table`` [V, D] (zero biases) for ``labels`` [N] and ``candidates`` from ``draw_candidates``:
    logits h.e_y - log Q(y) and h.e_s - log Q(s), a sampled id equal to the label pushed to -FLT_MAX."""
    ids, true_expected, sampled_expected = candidates
    true_logits = tf.reduce_sum(inputs * tf.gather(table, labels), axis=-1, keepdims=True)  # [N, 1]
    true_logits -= tf.math.log(true_expected)
    sampled_logits = tf.matmul(inputs, tf.gather(table, ids), transpose_b=True)  # [N, S]
    hits = tf.equal(labels[:, None], tf.cast(ids, labels.dtype)[None, :])  # [N, S]
    sampled_logits += tf.where(hits, tf.constant(_HIT, inputs.dtype), tf.constant(0.0, inputs.dtype))
    sampled_logits -= tf.math.log(sampled_expected)
    logits = tf.concat([true_logits, sampled_logits], axis=1)  # [N, 1 + S], the label at column 0
    return tf.nn.sparse_softmax_cross_entropy_with_logits(tf.zeros_like(labels), logits)


def loss_and_gradients(model: tf.keras.Model, jit_compile: bool = False, hidden: tf.keras.Model | None = None):
    """(x [B, T], labels [B*T] int64, candidates) -> (the step's sampled-softmax loss, its gradients with
    respect to ``model.trainable_variables``): the mean of ``sampled_losses`` over the non-pad targets, the
    model's hidden states computed in training mode. ``jit_compile`` compiles it with XLA. ``hidden``: what
    computes the hidden states [B, T, D] from x (None: ``model`` up to its output; a packed view's ``hidden``
    takes (tokens, resets))."""
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    embedding = model.get_layer("embedding")
    if hidden is None:
        hidden = tf.keras.Model(model.inputs, model.get_layer("tied_output").input)  # tokens -> [B, T, D]
    pad = SPECIAL_TOKENS.pad_id

    def compute(x, labels, candidates):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            h = hidden(x, training=True)  # [B, T, D]
            h = tf.reshape(h, [-1, tf.shape(h)[-1]])  # [B*T, D]
            losses = sampled_losses(embedding.table(), labels, h, candidates)  # [B*T]
            mask = tf.cast(labels != pad, losses.dtype)
            loss = tf.reduce_sum(losses * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
        return loss, tape.gradient(loss, variables)

    return tf.function(compute, jit_compile=True) if jit_compile else compute


def use_sampled_softmax(model: tf.keras.Model, num_sampled: int, jit_compile: bool = False,
                        hidden: tf.keras.Model | None = None) -> None:
    """Make ``model``'s training step a sampled softmax over the tied output (Jean et al. 2015).

    The loss of a step is the cross-entropy of the target against itself and
    ``num_sampled`` words drawn from the log-uniform (Zipfian) distribution over
    the vocabulary's ids, which are sorted by frequency after the special
    tokens (accidental hits removed), averaged over the non-pad targets as
    ``loss_fn`` is.  Each step computes ``num_sampled + 1`` output logits per
    position instead of V.  Prediction and evaluation (``model(x)``) keep the
    full softmax.  ``jit_compile`` compiles the loss and its gradients with XLA
    (a compute choice, ``loss_and_gradients``; the candidates are drawn outside).
    ``hidden``: as in ``loss_and_gradients`` (packed batches). Call before ``WeightAverage`` wraps the step.
    """
    vocab_size = model.get_layer("embedding").input_dim
    if not 0 < num_sampled < vocab_size:
        raise ValueError(f"sampled softmax needs 0 < num_sampled < V={vocab_size}, got {num_sampled}")
    compute = loss_and_gradients(model, jit_compile, hidden)

    def train_step(data):
        x, y = data
        labels = tf.reshape(tf.cast(y, tf.int64), [-1])  # [B*T]
        loss, gradients = compute(x, labels, draw_candidates(labels, num_sampled, vocab_size))
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return {"loss": loss}

    model.train_step = train_step
    model.train_function = None

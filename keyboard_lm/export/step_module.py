"""The exported computation: one recurrent step as a tf.Module with fixed shapes.

Signatures (batch 1; the state is one float32 vector so every cell type has
the same interface: [h, c] for CIFG/SI-CIFG/LSTM, [s] for GRU):

* ``step(token int32[1], state float32[1, S]) -> top_ids int32[1, K],
  top_log_probs float32[1, K], state float32[1, S]``: the K most likely next
  words, special tokens excluded.
* ``step_full(token, state) -> log_probs float32[1, V], state``: the full
  next-word distribution, for prefix completion.
* ``step_personal(token int32[1], token_weight float32[1, 1], embedding
  float32[1, D], state) -> logits float32[1, V], output float32[1, D], state``:
  for personal words outside the vocabulary. The input is ``token_weight * row(token) +
  embedding``: (word, 1, zeros) for a vocabulary word, (any, 0, adapted
  embedding) for a personal word typed as context, which so enters the model
  through its own embedding instead of the ``<oov>`` row. ``output`` is the
  vector the tied output layer multiplies, so a personal word's logit is
  ``output . its adapted embedding``, normalized together with ``logits``.
  One signature, not two: each subgraph costs ~3.3 KB of tensor metadata and
  the paper-size file has ~6.5 KB left under the 1.4 MiB budget.

Only GATHER, FULLY_CONNECTED/BATCH_MATMUL, ADD, MUL, SUB, LOGISTIC, TANH,
RELU, MAX, DIV, SELECT, SPLIT, CONCATENATION, STRIDED_SLICE, LOG_SOFTMAX and TOPK_V2 are
used (plus DEQUANTIZE after int8 quantization): builtin ops, no loop.  A
quantization-aware model's int8 weight rounding is folded into constants by
the converter; its activation rounding is left out (hybrid kernels do it).
"""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.models.cells import ProjectedGRUCell
from keyboard_lm.text.spec import SPECIAL_TOKENS


class StepModule(tf.Module):
    """Wraps a trained Keras model's embedding and cell as single-step functions."""

    def __init__(self, keras_model: tf.keras.Model, k: int = 3):
        super().__init__()
        self.embedding_layer = keras_model.get_layer("embedding")  # table() applies int8 rounding when trained so
        self.cell = keras_model.get_layer("rnn").cell
        self.vocab_size = int(self.embedding_layer.embeddings.shape[0])
        self.k = k
        if isinstance(self.cell, ProjectedGRUCell):
            self.state_sizes = [self.cell.units]
        else:
            self.state_sizes = [self.cell.projection, self.cell.units]
        self.state_size = sum(self.state_sizes)
        # Special tokens are ids 0..3; top-k runs over the slice after them.
        self.first_word_id = len(SPECIAL_TOKENS.ids)
        assert tuple(SPECIAL_TOKENS.ids) == tuple(range(self.first_word_id))
        spec = [tf.TensorSpec([1], tf.int32, name="token"), tf.TensorSpec([1, self.state_size], tf.float32, name="state")]
        # The TFLite signature keys are the Python function names.
        def step(token, state):
            return self._step(token, state)

        def step_full(token, state):
            return self._step_full(token, state)

        def step_personal(token, token_weight, embedding, state):
            x = tf.gather(self.embedding_layer.table(), token) * token_weight + embedding
            return self._personal(x, state)

        self.embedding_dim = int(self.embedding_layer.embeddings.shape[1])
        personal_spec = [spec[0], tf.TensorSpec([1, 1], tf.float32, name="token_weight"),
                         tf.TensorSpec([1, self.embedding_dim], tf.float32, name="embedding"), spec[1]]
        self.step = tf.function(step, input_signature=spec)
        self.step_full = tf.function(step_full, input_signature=spec)
        self.step_personal = tf.function(step_personal, input_signature=personal_spec)

    def concrete_functions(self) -> list:
        """Every signature, in the order the file lists them."""
        return [f.get_concrete_function() for f in (self.step, self.step_full, self.step_personal)]

    def _cell(self, x, state):
        """(output [1, D], new state) after input embedding ``x``."""
        if isinstance(self.cell, ProjectedGRUCell):
            out, s = self.cell.step(x, state)
            new_state = s
        else:
            h, c = tf.split(state, self.state_sizes, axis=-1)
            out, c_new = self.cell.step(x, h, c)
            new_state = tf.concat([out, c_new], axis=-1)
        return out, new_state

    def _advance(self, token, state):
        table = self.embedding_layer.table()  # [V, D]; constant-folded by the converter
        out, new_state = self._cell(tf.gather(table, token), state)  # [1, D]
        logits = tf.matmul(out, table, transpose_b=True)  # [1, V], tied output
        return tf.nn.log_softmax(logits), new_state

    def _personal(self, x, state):
        out, new_state = self._cell(x, state)
        logits = tf.matmul(out, self.embedding_layer.table(), transpose_b=True)
        return {"logits": logits, "output": out, "state": new_state}

    def _step(self, token, state):
        log_probs, new_state = self._advance(token, state)
        top_log_probs, top_ids = tf.math.top_k(log_probs[:, self.first_word_id:], k=self.k)
        return {"top_ids": top_ids + self.first_word_id, "top_log_probs": top_log_probs, "state": new_state}

    def _step_full(self, token, state):
        log_probs, new_state = self._advance(token, state)
        return {"log_probs": log_probs, "state": new_state}

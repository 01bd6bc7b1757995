"""Next-word language models: tied embedding -> recurrent cell -> tied softmax."""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.models.cells import ProjectedCell, ProjectedGRUCell
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.models.quantization import Quantizer


class TiedEmbedding(tf.keras.layers.Embedding):
    """Embedding whose table may be used as its int8 rounding (quantization-aware training)."""

    def __init__(self, *args, quantization: str = "none", **kwargs):
        super().__init__(*args, **kwargs)
        self.quantization = quantization
        self.quantizer = Quantizer(quantization)

    def table(self) -> tf.Tensor:
        """The [V, D] table as the model computes with it."""
        return self.quantizer.weights(self.embeddings)

    def call(self, inputs):
        return tf.gather(self.table(), tf.cast(inputs, tf.int32))

    def get_config(self):
        return {**super().get_config(), "quantization": self.quantization}


class TiedOutput(tf.keras.layers.Layer):
    """Logits = h E^T with the input embedding E (Press & Wolf 2017; Hard et al.)."""

    def __init__(self, embedding: TiedEmbedding, **kwargs):
        super().__init__(**kwargs)
        self._embedding = embedding

    def call(self, h):  # h: [batch, time, D] -> [batch, time, V]
        q = self._embedding.quantizer
        return tf.matmul(q.inputs(h), self._embedding.table(), transpose_b=True)


class SequenceRNN(tf.keras.layers.RNN):
    """Keras' RNN loop over our cell; a quantization-aware cell rounds its kernels once per call,
    and in training a cell with weight drop draws its mask once per call.

    With ``fused`` (a compute choice: same weights, same function), training calls on a fixed
    number of steps run the cell's ``sequence`` (input projection outside the recurrence, steps
    unrolled) instead of the loop, where the cell has one; inference always loops ``step``."""

    fused = False

    def call(self, inputs, training=None, **kwargs):
        self.cell.prepare_weights(training=bool(training))
        try:
            if (self.fused and training and self.return_sequences and getattr(self.cell, "can_fuse", False)
                    and inputs.shape[1] is not None and not kwargs.get("initial_state")):
                return self.cell.sequence(inputs)
            return super().call(inputs, training=training, **kwargs)
        finally:
            self.cell.release_weights()


def build_cell(config: ModelConfig, weight_drop: float = 0.0) -> tf.keras.layers.Layer:
    """The recurrent cell of ``config.model_type``."""
    d, h = config.embedding_dim, config.units
    q = config.quantization
    if config.model_type == "gru":
        if weight_drop:
            from keyboard_lm.errors import ConfigError

            raise ConfigError("weight_drop applies to the CIFG, SI-CIFG and LSTM cells, not gru")
        return ProjectedGRUCell(h, d, quantization=q, name="cell")
    return ProjectedCell(h, d, coupled=config.model_type != "lstm",
                         scale_invariant=config.model_type == "si-cifg", quantization=q,
                         weight_drop=weight_drop, name="cell")


def build_model(config: ModelConfig, seq_len: int | None = None, dropout: float = 0.0,
                weight_drop: float = 0.0, unroll: bool = False, fused: bool = False) -> tf.keras.Model:
    """Keras model: token ids [batch, time] -> logits [batch, time, V] (uncompiled).

    Hard et al. 2018 (sec. 3): one CIFG layer, tied 96-dim embeddings.
    ``dropout`` (training only) drops embedding outputs and cell outputs
    (Zaremba et al. 2014's non-recurrent dropout); it adds no weights, so a
    model trained with dropout loads into, and exports from, one without.
    ``weight_drop`` (training only) is DropConnect on the cell's recurrent
    weights, one mask per batch (Merity et al. 2018); it adds no weights either.
    ``fused`` trains through the cell's ``sequence`` (``SequenceRNN``); the weights are the same.
    """
    if not 0.0 <= dropout < 1.0:
        from keyboard_lm.errors import ConfigError

        raise ConfigError(f"dropout must be in [0, 1), got {dropout}")
    tokens = tf.keras.Input(shape=(seq_len,), dtype=tf.int32, name="tokens")
    embedding = TiedEmbedding(config.vocab_size, config.embedding_dim, name="embedding",
                              quantization=config.quantization)
    x = embedding(tokens)  # [batch, time, D]
    if dropout:
        x = tf.keras.layers.Dropout(dropout, name="embedding_dropout")(x)
    if unroll and seq_len is None:
        from keyboard_lm.errors import ConfigError

        raise ConfigError("unroll needs a fixed seq_len")
    rnn = SequenceRNN(build_cell(config, weight_drop), return_sequences=True, unroll=unroll, name="rnn")
    rnn.fused = fused
    h = rnn(x)  # [batch, time, D]
    if dropout:
        h = tf.keras.layers.Dropout(dropout, name="output_dropout")(h)
    logits = TiedOutput(embedding, name="tied_output")(h)  # [batch, time, V]
    return tf.keras.Model(tokens, logits, name=config.model_type.replace("-", "_"))


class ResetCell(tf.keras.layers.Layer):
    """``cell`` stepping over inputs whose last column is a reset flag: where it is 1 the state is set to
    zeros before the step, so examples packed end to end in one row are each computed from the zero state,
    as in a row of their own. Holds no weights of its own: the steps are ``cell``'s, on its variables."""

    def __init__(self, cell: tf.keras.layers.Layer, **kwargs):
        super().__init__(**kwargs)
        self.cell = cell
        self.state_size, self.output_size = cell.state_size, cell.output_size

    def build(self, input_shape):
        self.built = True  # ``cell`` was built by the model it belongs to

    def prepare_weights(self, training: bool = False) -> None:
        self.cell.prepare_weights(training)

    def release_weights(self) -> None:
        self.cell.release_weights()

    def call(self, inputs, states):
        keep = 1.0 - inputs[:, -1:]
        return self.cell.call(inputs[:, :-1], [s * keep for s in states])


def packed_model(model: tf.keras.Model, dropout: float = 0.0) -> tf.keras.Model:
    """A training view of ``model`` on packed rows: (token ids [B, T], resets [B, T]) -> logits [B, T, V],
    through the same embedding, cell and output (the same variables; nothing is copied), with the state
    reset wherever ``resets`` is 1 (``data.length_batches.packed``). ``dropout`` as ``model`` was built with.
    ``hidden``: the same view up to the cell's outputs [B, T, D]."""
    from keyboard_lm.errors import ConfigError

    rnn = model.get_layer("rnn")
    if not isinstance(rnn.cell, ProjectedCell):
        raise ConfigError("packed batches need the CIFG, SI-CIFG or LSTM cell")
    tokens = tf.keras.Input(shape=(None,), dtype=tf.int32, name="tokens")
    resets = tf.keras.Input(shape=(None,), dtype=tf.float32, name="resets")
    x = model.get_layer("embedding")(tokens)
    if dropout:
        x = tf.keras.layers.Dropout(dropout)(x)
    x = tf.concat([x, resets[..., None]], axis=-1)  # the flag rides along as the last input column
    h = SequenceRNN(ResetCell(rnn.cell), return_sequences=True)(x)
    if dropout:
        h = tf.keras.layers.Dropout(dropout)(h)
    logits = model.get_layer("tied_output")(h)
    view = tf.keras.Model([tokens, resets], logits, name=f"{model.name}_packed")
    view.hidden = tf.keras.Model([tokens, resets], h)  # [B, T, D], what the sampled softmax trains from
    return view


def weights_dict(model: tf.keras.Model) -> dict:
    """Model weights by variable name, for saving as .npz."""
    return {w.name: w.numpy() for w in model.weights}


def assign_weights(model: tf.keras.Model, weights: dict) -> None:
    """Load weights saved by ``weights_dict``; names and shapes must match exactly."""
    from keyboard_lm.errors import ConfigError

    names = [w.name for w in model.weights]
    if sorted(names) != sorted(weights):
        raise ConfigError(f"checkpoint weights {sorted(weights)} do not match the model's {sorted(names)}")
    for w in model.weights:
        if tuple(w.shape) != tuple(weights[w.name].shape):
            raise ConfigError(f"weight {w.name}: checkpoint shape {weights[w.name].shape} != model shape {tuple(w.shape)}")
        w.assign(weights[w.name])

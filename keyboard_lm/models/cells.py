"""Recurrent cells written as one explicit step over explicit state.

Each cell's ``step`` uses only matmul, add, mul, split, sigmoid/tanh or
relu/max/div/select, so a single step exports to builtin TFLite ops with no
WHILE loop and no Flex ops.  Keras' ``RNN`` layer loops the same ``step`` for
training.

* CIFG (Hard et al. 2018; Greff et al. 2017): LSTM with coupled input and
  forget gates, i = 1 - f, no peepholes, recurrent projection m -> h.
* SI-CIFG (Ro et al.): sigma and tanh replaced by the scale-invariant
  SI-sigma(x)_i = ReLU(x)_i / max_j ReLU(x)_j and SI-tanh(x)_i = x_i / max_j |x_j|.
* LSTM with projection (Sak et al. 2014), and GRU (Cho et al. 2014) with an
  output projection so the output can be tied to the embedding.
"""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.models.quantization import Quantizer


def si_sigmoid(x: tf.Tensor) -> tf.Tensor:
    """SI-sigma over the last axis (Ro et al.): ReLU(x) / max ReLU(x); all-zero stays 0."""
    r = tf.nn.relu(x)
    m = tf.reduce_max(r, axis=-1, keepdims=True)
    return r / tf.where(m > 0.0, m, tf.ones_like(m))


def si_tanh(x: tf.Tensor) -> tf.Tensor:
    """SI-tanh over the last axis (Ro et al.): x / max |x|; all-zero stays 0."""
    m = tf.reduce_max(tf.abs(x), axis=-1, keepdims=True)
    return x / tf.where(m > 0.0, m, tf.ones_like(m))


class _Cell(tf.keras.layers.Layer):
    """Base: ``_w(kernel)`` and ``_x(input)`` give a matrix product's operands as the step computes
    with them (int8 roundings when quantization-aware, keyboard_lm.models.quantization)."""

    def __init__(self, quantization: str = "none", **kwargs):
        super().__init__(**kwargs)
        self.quantization = quantization
        self._quantizer = Quantizer(quantization)
        self._prepared = None

    #: DropConnect rate on the recurrent weights in training (cells that support it set it).
    weight_drop = 0.0

    def kernels(self) -> list:
        raise NotImplementedError

    def prepare_weights(self, training: bool = False) -> None:
        """Round the kernels once for a whole sequence instead of at every step (the RNN
        layer calls this before its loop; the loop body captures the rounded tensors).
        In training, a cell with ``weight_drop`` also draws its DropConnect mask here,
        one per sequence batch."""
        drop = training and self.weight_drop > 0.0
        if self.quantization != "none" or drop:
            self._prepared = {k.ref(): self._quantizer.weights(k) for k in self.kernels()}
            if drop:
                self._prepared[self.kernel.ref()] = self._drop_recurrent(self._prepared[self.kernel.ref()])

    def release_weights(self) -> None:
        self._prepared = None

    def _w(self, kernel):
        if self._prepared is not None:
            return self._prepared[kernel.ref()]
        return self._quantizer.weights(kernel)

    def _x(self, x):
        return self._quantizer.inputs(x)


class ProjectedCell(_Cell):
    """CIFG, SI-CIFG or LSTM with a recurrent projection; state (h [B,P], c [B,H])."""

    def __init__(self, units: int, projection: int, coupled: bool = True,
                 scale_invariant: bool = False, quantization: str = "none", weight_drop: float = 0.0,
                 **kwargs):
        super().__init__(quantization, **kwargs)
        if not 0.0 <= weight_drop < 1.0:
            from keyboard_lm.errors import ConfigError

            raise ConfigError(f"weight_drop must be in [0, 1), got {weight_drop}")
        self.weight_drop = weight_drop
        self.units = units
        self.projection = projection
        self.coupled = coupled
        self.scale_invariant = scale_invariant
        self.gates = 3 if coupled else 4
        self.state_size = [projection, units]
        self.output_size = projection

    def build(self, input_shape):
        d = int(input_shape[-1])
        self.kernel = self.add_weight(
            name="kernel", shape=(d + self.projection, self.gates * self.units),
            initializer="glorot_uniform")
        # Forget-gate bias 1 (Jozefowicz et al. 2015); SI gates do not need it.
        bias_init = [0.0] * (self.gates * self.units)
        if not self.scale_invariant:
            bias_init[: self.units] = [1.0] * self.units
        self.bias = self.add_weight(name="bias", shape=(self.gates * self.units,),
                                    initializer=tf.constant_initializer(bias_init))
        self.proj_kernel = self.add_weight(name="projection", shape=(self.units, self.projection),
                                           initializer="glorot_uniform")
        super().build(input_shape)

    def kernels(self) -> list:
        return [self.kernel, self.proj_kernel]

    def _drop_recurrent(self, kernel):
        """DropConnect on the recurrent rows (h -> gates) of ``kernel`` (Wan et al. 2013;
        Merity et al. 2018's weight drop): one mask for every step of the batch, kept
        weights scaled by 1 / (1 - p) so inference uses the plain kernel."""
        d = kernel.shape[0] - self.projection
        recurrent = tf.nn.dropout(kernel[d:], rate=self.weight_drop)
        return tf.concat([kernel[:d], recurrent], axis=0)

    def step(self, x, h, c):
        """One step: x [B,D], h [B,P], c [B,H] -> (h' [B,P], c' [B,H])."""
        z = tf.matmul(self._x(tf.concat([x, h], axis=-1)), self._w(self.kernel)) + self.bias  # [B, G*H]
        return self._update(z, c, self._w(self.proj_kernel))

    def _update(self, z, c, proj_kernel):
        """Gates z [B, G*H] and cell state c [B,H] -> (h' [B,P], c' [B,H])."""
        sig = si_sigmoid if self.scale_invariant else tf.sigmoid
        tanh = si_tanh if self.scale_invariant else tf.tanh
        if self.coupled:
            zf, zg, zo = tf.split(z, 3, axis=-1)
            f = sig(zf)
            i = 1.0 - f
        else:
            zf, zi, zg, zo = tf.split(z, 4, axis=-1)
            f, i = sig(zf), sig(zi)
        c_new = f * c + i * tanh(zg)
        m = sig(zo) * tanh(c_new)  # [B, H]
        return tf.matmul(self._x(m), proj_kernel), c_new  # [B, P], [B, H]

    @property
    def can_fuse(self) -> bool:
        """Whether ``sequence`` computes what ``step`` does: not when matrix inputs are rounded per
        row (dynamic-range), since the rows of [x, h] would be rounded apart."""
        return self.quantization != "dynamic-range"

    def sequence(self, inputs):
        """Every step over ``inputs`` [B, T, D] (T static) from the zero state -> outputs [B, T, P].

        The same function as looping ``step`` (up to float32 summation order): [x, h] W + b is split
        into x W_x + b, one matrix product over all B*T inputs before the recurrence, and h W_h inside
        it (the cuDNN LSTM's formulation, Appleyard et al. 2016, "Optimizing performance of recurrent
        neural networks on GPUs"). The T steps are unrolled in the graph, so the backward pass needs
        no while-loop accumulators. For training only; the exported step stays ``step``.
        """
        if not self.can_fuse:
            raise ValueError("sequence() does not apply to dynamic-range quantization-aware cells")
        steps = inputs.shape[1]
        if steps is None:
            raise ValueError("sequence() needs a static number of time steps")
        d = inputs.shape[-1]
        kernel, proj_kernel = self._w(self.kernel), self._w(self.proj_kernel)
        batch = tf.shape(inputs)[0]
        zx = tf.matmul(tf.reshape(inputs, [-1, d]), kernel[:d]) + self.bias  # [B*T, G*H]
        zx = tf.unstack(tf.reshape(zx, [batch, steps, self.gates * self.units]), axis=1)  # T x [B, G*H]
        recurrent = kernel[d:]  # [P, G*H]
        h = tf.zeros([batch, self.projection], inputs.dtype)
        c = tf.zeros([batch, self.units], inputs.dtype)
        outputs = []
        for t in range(steps):
            h, c = self._update(zx[t] + tf.matmul(h, recurrent), c, proj_kernel)
            outputs.append(h)
        return tf.stack(outputs, axis=1)  # [B, T, P]

    def call(self, inputs, states):
        h, c = self.step(inputs, states[0], states[1])
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(), "units": self.units, "projection": self.projection,
                "coupled": self.coupled, "scale_invariant": self.scale_invariant,
                "quantization": self.quantization, "weight_drop": self.weight_drop}


class ProjectedGRUCell(_Cell):
    """GRU with an output projection to P; state (s [B,H],)."""

    def __init__(self, units: int, projection: int, quantization: str = "none", **kwargs):
        super().__init__(quantization, **kwargs)
        self.units = units
        self.projection = projection
        self.state_size = [units]
        self.output_size = projection

    def build(self, input_shape):
        d = int(input_shape[-1])
        self.gate_kernel = self.add_weight(name="gate_kernel", shape=(d + self.units, 2 * self.units),
                                           initializer="glorot_uniform")
        self.gate_bias = self.add_weight(name="gate_bias", shape=(2 * self.units,), initializer="zeros")
        self.cand_kernel = self.add_weight(name="candidate_kernel", shape=(d + self.units, self.units),
                                           initializer="glorot_uniform")
        self.cand_bias = self.add_weight(name="candidate_bias", shape=(self.units,), initializer="zeros")
        self.proj_kernel = self.add_weight(name="projection", shape=(self.units, self.projection),
                                           initializer="glorot_uniform")
        super().build(input_shape)

    def kernels(self) -> list:
        return [self.gate_kernel, self.cand_kernel, self.proj_kernel]

    def step(self, x, s):
        """One step: x [B,D], s [B,H] -> (out [B,P], s' [B,H])."""
        zr = tf.sigmoid(tf.matmul(self._x(tf.concat([x, s], -1)), self._w(self.gate_kernel)) + self.gate_bias)
        z, r = tf.split(zr, 2, axis=-1)
        cand = tf.tanh(tf.matmul(self._x(tf.concat([x, r * s], -1)), self._w(self.cand_kernel)) + self.cand_bias)
        s_new = z * s + (1.0 - z) * cand
        return tf.matmul(self._x(s_new), self._w(self.proj_kernel)), s_new

    def call(self, inputs, states):
        out, s = self.step(inputs, states[0])
        return out, [s]

    def get_config(self):
        return {**super().get_config(), "units": self.units, "projection": self.projection,
                "quantization": self.quantization}

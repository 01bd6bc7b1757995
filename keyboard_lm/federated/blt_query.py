"""BLT-DP-FTRL's query: clipped sums plus buffered-linear-Toeplitz correlated noise, in TensorFlow.

A ``tensorflow_privacy`` ``SumAggregationDPQuery`` that, like the tree's
``TreeResidualSumQuery``, clips each record to L2 norm ``clip``, sums them,
and adds each round's share of correlated noise, so SGD (with momentum) on the
results is DP-FTRL: round t adds w_t = (C^-1 z)_t, z ~ N(0, (z_mult clip)^2),
streamed with one buffer of model size per BLT buffer
(``keyboard_lm.privacy.blt``)::

    w_t = z_t - sum_i omega_i s_i;   s_i <- theta_i s_i + w_t

The query's state holds the buffers and the round, and z_t is drawn with
stateless random ops from (seed, round, tensor), so a run resumed from a
checkpoint (TFF keeps the aggregator's state in it) adds the same noise as
one that never stopped.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from keyboard_lm.privacy.blt import BLT


def make_blt_query(blt: BLT, clip: float, noise_multiplier: float, record_specs, noise_seed: int = 0):
    """A ``SumAggregationDPQuery`` adding BLT-correlated Gaussian noise of std ``noise_multiplier * clip``."""
    import dp_accounting
    from tensorflow_privacy.privacy.dp_query import dp_query

    theta = [float(t) for t in blt.theta]
    omega = [float(w) for w in blt.omega]
    std = float(noise_multiplier) * float(clip)

    class GlobalState(NamedTuple):
        clip_value: Any
        buffers: Any  # one structure like the record per BLT buffer
        seed: Any
        step: Any

    class Query(dp_query.SumAggregationDPQuery):
        def initial_global_state(self):
            zeros = [tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), record_specs) for _ in theta]
            return GlobalState(clip_value=tf.constant(clip, tf.float32), buffers=zeros,
                               seed=tf.constant(noise_seed, tf.int64), step=tf.constant(0, tf.int64))

        def derive_sample_params(self, global_state):
            return global_state.clip_value

        def preprocess_record(self, params, record):
            flat = tf.nest.flatten(record)
            clipped, _ = tf.clip_by_global_norm(flat, params)
            return tf.nest.pack_sequence_as(record, clipped)

        def get_noised_result(self, sample_state, global_state):
            base = tf.stack([global_state.seed, global_state.step])
            flat_sample = tf.nest.flatten(sample_state)
            flat_buffers = [tf.nest.flatten(b) for b in global_state.buffers]
            noised, new_buffers = [], [[] for _ in theta]
            for n, x in enumerate(flat_sample):
                z = std * tf.random.stateless_normal(tf.shape(x), tf.random.experimental.stateless_fold_in(base, n),
                                                     dtype=x.dtype)
                w = z - tf.add_n([tf.cast(omega[i], x.dtype) * flat_buffers[i][n] for i in range(len(theta))])
                noised.append(x + w)
                for i in range(len(theta)):
                    new_buffers[i].append(tf.cast(theta[i], x.dtype) * flat_buffers[i][n] + w)
            new_state = GlobalState(
                clip_value=global_state.clip_value,
                buffers=[tf.nest.pack_sequence_as(global_state.buffers[i], new_buffers[i]) for i in range(len(theta))],
                seed=global_state.seed, step=global_state.step + 1)
            return tf.nest.pack_sequence_as(sample_state, noised), new_state, dp_accounting.UnsupportedDpEvent()

    return Query()

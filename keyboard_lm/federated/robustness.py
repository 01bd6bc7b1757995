"""Zeroing of non-finite client updates, as a tff.aggregators wrapper.

TFF's ``zeroing_factory`` compares the update norm with a threshold, and a NaN
norm compares false, so a NaN update would pass.  This wrapper zeroes any
update with a NaN or Inf entry before the inner aggregator sees it, gives it
weight 0 (so it does not drag a weighted mean toward zero) and reports how
many were zeroed as ``non_finite_zeroed``.
"""

from __future__ import annotations

import tensorflow as tf

from keyboard_lm.federated.runtime import import_tff

tff = import_tff()


def _all_finite(value) -> tf.Tensor:
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tf.nest.flatten(value)])


def _zero_like(value):
    return tf.nest.map_structure(tf.zeros_like, value)


def _output(inner_output, zeroed):
    measurements = tff.federated_zip(
        {"inner": inner_output.measurements, "non_finite_zeroed": tff.federated_sum(zeroed)})
    return tff.templates.MeasuredProcessOutput(inner_output.state, inner_output.result, measurements)


class NonFiniteZeroingFactory(tff.aggregators.WeightedAggregationFactory):
    """Weighted: a non-finite update is zeroed and its weight set to 0."""

    def __init__(self, inner):
        self._inner = inner

    def create(self, value_type, weight_type):
        inner = self._inner.create(value_type, weight_type)

        @tff.tensorflow.computation(value_type, weight_type)
        def guard(value, weight):
            ok = _all_finite(value)
            value = tf.cond(ok, lambda: value, lambda: _zero_like(value))
            return value, tf.where(ok, weight, tf.zeros_like(weight)), tf.cast(tf.logical_not(ok), tf.int32)

        @tff.federated_computation(inner.initialize.type_signature.result,
                                   tff.FederatedType(value_type, tff.CLIENTS),
                                   tff.FederatedType(weight_type, tff.CLIENTS))
        def next_fn(state, value, weight):
            value, weight, zeroed = tff.federated_map(guard, (value, weight))
            return _output(inner.next(state, value, weight), zeroed)

        return tff.templates.AggregationProcess(inner.initialize, next_fn)


class UnweightedNonFiniteZeroingFactory(tff.aggregators.UnweightedAggregationFactory):
    """Unweighted (FedSGD, FedAtt): a non-finite update is zeroed."""

    def __init__(self, inner):
        self._inner = inner

    def create(self, value_type):
        inner = self._inner.create(value_type)

        @tff.tensorflow.computation(value_type)
        def guard(value):
            ok = _all_finite(value)
            return tf.cond(ok, lambda: value, lambda: _zero_like(value)), tf.cast(tf.logical_not(ok), tf.int32)

        @tff.federated_computation(inner.initialize.type_signature.result,
                                   tff.FederatedType(value_type, tff.CLIENTS))
        def next_fn(state, value):
            value, zeroed = tff.federated_map(guard, value)
            return _output(inner.next(state, value), zeroed)

        return tff.templates.AggregationProcess(inner.initialize, next_fn)


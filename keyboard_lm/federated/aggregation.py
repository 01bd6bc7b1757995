"""The model-update aggregator, composed from named parts.

Every federated algorithm aggregates client updates through the same stack,
outermost first (the shape of ``tff.learning.robust_aggregator``, assembled
here from TFF's public parts so each can be chosen and tested alone):

1. ``non_finite``: an update with a NaN/Inf entry is zeroed and given weight
   0 (``robustness.py``; TFF's norm-based zeroing lets NaN through).
2. ``clipping``: ``adaptive`` = TFF's default zeroing of outsized updates
   (norm above 2x the estimated 98th percentile + 1) around adaptive L2
   clipping at the estimated 80th percentile (Andrew, Thakkar et al. 2021);
   a number = fixed L2 clipping at that norm; ``none`` = neither.
3. ``mean``: weighted by n_k (FedAvg, Hard et al. eq. 3), unweighted, or
   FedAtt's attentive aggregation (Ji et al.); its sum is optionally 8-bit
   stochastically quantized (``compression``, as
   ``tff.learning.compression_aggregator``).

Differential privacy replaces parts 2-3 with a DP mean whose clip is the
clip (``keyboard_lm.federated.dp``).
"""

from __future__ import annotations

import math

from keyboard_lm.federated.config import AggregationConfig
from keyboard_lm.federated.fed_att import FedAttFactory
from keyboard_lm.federated.robustness import NonFiniteZeroingFactory, UnweightedNonFiniteZeroingFactory
from keyboard_lm.federated.runtime import import_tff

tff = import_tff()

# EncodedSumFactory.quantize_above_threshold(quantization_bits=8, threshold=20000),
# as used by tff.learning.compression_aggregator: tensors with more elements are
# quantized to 8 bits, smaller ones are sent as float32.
QUANTIZE_THRESHOLD = 20_000
QUANTIZE_BITS = 8


def mean_part(config: AggregationConfig):
    """Part 3: the (optionally compressed) mean, or FedAtt."""
    if config.mean == "fedatt":
        return FedAttFactory(config.fedatt_p, config.fedatt_norm)
    sum_factory = (tff.aggregators.EncodedSumFactory.quantize_above_threshold(
        quantization_bits=QUANTIZE_BITS, threshold=QUANTIZE_THRESHOLD) if config.compression else None)
    if config.weighted:
        return tff.aggregators.MeanFactory(value_sum_factory=sum_factory)
    return tff.aggregators.UnweightedMeanFactory(value_sum_factory=sum_factory)


def clipping_part(clip: str | float, inner):
    """Part 2 around ``inner``: TFF's adaptive zeroing + clipping, a fixed clip, or nothing."""
    if clip == "none":
        return inner
    if clip == "adaptive":
        # The estimators of tff.learning.robust_aggregator (TFF 0.87), no noise.
        zeroing_norm = tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
            initial_estimate=10.0, target_quantile=0.98, learning_rate=math.log(10.0), multiplier=2.0,
            increment=1.0)
        clipping_norm = tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
            initial_estimate=1.0, target_quantile=0.8, learning_rate=0.2)
        return tff.aggregators.zeroing_factory(zeroing_norm, tff.aggregators.clipping_factory(clipping_norm, inner))
    return tff.aggregators.clipping_factory(float(clip), inner)


def build_aggregator(config: AggregationConfig = AggregationConfig()):
    """The model aggregator of ``config``: non-finite zeroing ( clipping ( mean ) )."""
    inner = clipping_part(config.clip, mean_part(config))
    return NonFiniteZeroingFactory(inner) if config.weighted else UnweightedNonFiniteZeroingFactory(inner)


def upload_bytes(weight_shapes, compression: bool) -> tuple[int, int]:
    """(bytes one client uploads per round, the float32 bytes of the same update).

    With compression, tensors above ``QUANTIZE_THRESHOLD`` elements go as
    8-bit codes plus their min and max (two float32); others as float32.
    """
    import numpy as np

    raw = sum(int(np.prod(s)) * 4 for s in weight_shapes)
    if not compression:
        return raw, raw
    sent = 0
    for s in weight_shapes:
        n = int(np.prod(s))
        sent += (n * QUANTIZE_BITS + 7) // 8 + 8 if n > QUANTIZE_THRESHOLD else n * 4
    return sent, raw

"""DP-FedAvg and DP-FTRL from TFF's parts: real (tiny) rounds, the aggregator's clip and zeroing,
and the combinations DP refuses."""

import numpy as np
import pytest
import tensorflow as tf

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated import dp as dp_lib
from keyboard_lm.federated.runtime import start_runtime
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.privacy.config import DPConfig
from keyboard_lm.text.vocabulary import Vocabulary

tff = start_runtime()

SEQ = 6
MODEL = ModelConfig(vocab_size=60, embedding_dim=8, units=16)
INPUT_SPEC = (tf.TensorSpec([None, SEQ], tf.int32),) * 2


@pytest.fixture(scope="module")
def client_datasets(default_corpus):
    """Three clients of the embedded corpus, encoded with a tiny vocabulary."""
    ids = sorted(default_corpus.client_ids)[:3]
    vocab = Vocabulary.from_sentences(default_corpus.sentences(ids), MODEL.vocab_size)
    out = []
    for cid in ids:
        tokens = [t for s in default_corpus.sentences([cid]) for t in vocab.encode(s)][: 8 * (SEQ + 1)]
        tokens = np.array(tokens + [0] * (8 * (SEQ + 1) - len(tokens)), np.int32).reshape(8, SEQ + 1)
        out.append(tf.data.Dataset.from_tensor_slices((tokens[:, :-1], tokens[:, 1:])).batch(4))
    return out


def _dp(mechanism="fedavg", **kw):
    base = dict(mechanism=mechanism, noise_multiplier=0.0, population=3, clients_per_round=3, clip=1.0)
    base.update(kw)
    return DPConfig(**base)


def _update_norm(process, datasets):
    state = process.initialize()
    before = [np.array(w) for w in process.get_model_weights(state).trainable]
    out = process.next(state, datasets)
    after = [np.array(w) for w in process.get_model_weights(out.state).trainable]
    return float(np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(after, before)))), out


def test_dp_fedavg_round_runs_and_moves_weights_within_the_clip(client_datasets):
    process = dp_lib.build_dp_process(MODEL, _dp(), INPUT_SPEC, metrics=False)
    norm, out = _update_norm(process, client_datasets)
    # Noiseless DP mean of updates clipped to 1: a step of norm in (0, 1] at server lr 1.
    assert 0 < norm <= 1.0 + 1e-5
    assert out.metrics["aggregator"]["non_finite_zeroed"] == 0


def test_dp_ftrl_round_runs_and_moves_weights(client_datasets):
    process = dp_lib.build_dp_process(MODEL, _dp("ftrl", noise_multiplier=0.5), INPUT_SPEC, metrics=False,
                                      noise_seed=3)
    norm, out = _update_norm(process, client_datasets)
    assert norm > 0
    assert out.metrics["aggregator"]["inner"]["dp_query_metrics"]["tree_agg_dpftrl_clip"] == pytest.approx(1.0)


def test_huge_noise_dominates_the_update(client_datasets):
    process = dp_lib.build_dp_process(MODEL, _dp(noise_multiplier=1000.0), INPUT_SPEC, metrics=False)
    norm, _ = _update_norm(process, client_datasets)
    # Noise std per coordinate is z * C / K = 333; the noiseless step is at most 1.
    assert norm > 1000.0


def _values_type():
    return tff.to_type([(np.float32, [3]), (np.float32, [2])])


def _specs():
    return [tf.TensorSpec([3], tf.float32), tf.TensorSpec([2], tf.float32)]


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_aggregator_clips_only_at_the_dp_clip(mechanism):
    """Updates of norm ~100-300 pass unclipped under a large DP clip: no non-DP clipping on top."""
    values = [[np.array([100.0, 0, 0], np.float32), np.array([0, 0], np.float32)],
              [np.array([0, 200.0, 0], np.float32), np.array([0, 0], np.float32)],
              [np.array([0, 0, 0], np.float32), np.array([300.0, 0], np.float32)]]
    mean = [np.mean([v[0] for v in values], axis=0), np.mean([v[1] for v in values], axis=0)]
    for clip, want in ((1e6, mean), (1.0, [np.array([1, 1, 0]) / 3, np.array([1, 0]) / 3])):
        process = dp_lib.build_dp_aggregator(_dp(mechanism, clip=clip), _specs()).create(_values_type())
        out = process.next(process.initialize(), values)
        for got, w in zip(out.result, want):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert set(out.measurements) == {"inner", "non_finite_zeroed"}
    assert set(out.measurements["inner"]) == {"dp_query_metrics", "dp"}


@pytest.mark.parametrize("mechanism", ["fedavg", "ftrl"])
def test_nan_update_is_zeroed_not_summed(mechanism):
    values = [[np.array([1.0, 1, 1], np.float32), np.array([1, 1], np.float32)],
              [np.array([np.nan, 1, 1], np.float32), np.array([1, 1], np.float32)],
              [np.array([2.0, 2, 2], np.float32), np.array([np.inf, 2], np.float32)]]
    process = dp_lib.build_dp_aggregator(_dp(mechanism, clip=100.0), _specs()).create(_values_type())
    out = process.next(process.initialize(), values)
    np.testing.assert_allclose(out.result[0], np.ones(3) / 3, rtol=1e-6)
    np.testing.assert_allclose(out.result[1], np.ones(2) / 3, rtol=1e-6)
    assert out.measurements["non_finite_zeroed"] == 2


def test_adaptive_clip_aggregator_runs_with_a_large_enough_cohort():
    cfg = DPConfig(mechanism="fedavg", noise_multiplier=0.5, population=200, clients_per_round=100,
                   clip_quantile=0.5)
    process = dp_lib.build_dp_aggregator(cfg).create(_values_type())
    out = process.next(process.initialize(), [[np.ones(3, np.float32), np.ones(2, np.float32)]] * 3)
    assert np.isfinite(out.result[0]).all()


@pytest.mark.parametrize("kwargs,dp_kwargs,word", [
    pytest.param(dict(algorithm="fedatt"), {}, "fedatt", id="fedatt"),
    pytest.param(dict(algorithm="fedsgd"), {}, "fedsgd", id="fedsgd"),
    pytest.param(dict(weighted=True), {}, "weighted", id="weighted_mean"),
    pytest.param(dict(compression=True), {}, "compression", id="compression"),
    pytest.param(dict(clip=5.0), {}, "--dp-clip", id="non_dp_clip"),
    pytest.param(dict(population=2), {}, "above", id="cohort_above_population"),
    pytest.param(dict(server_noise=0.001), {}, "--server-noise", id="ji_server_noise"),
    pytest.param(dict(client_momentum=0.5), {}, "--client-momentum", id="client_momentum"),
    pytest.param(dict(population=10), {}, "population of 3", id="population_mismatch"),
    pytest.param({}, dict(clip=None, clip_quantile=0.5, noise_multiplier=1.0), "clients per round",
                 id="adaptive_clip_cohort_too_small"),
])
def test_refuses_combinations_dp_cannot_honour(kwargs, dp_kwargs, word):
    with pytest.raises(ConfigError, match=word):
        dp_lib.check_dp_settings(_dp(**dp_kwargs), **kwargs)


def test_accepts_the_default_non_dp_clip_setting_where_a_fixed_clip_is_refused():
    """The non-DP default (adaptive) is ignored under DP, whose clip is the clip; a fixed non-DP clip the
    user set is refused in the same call."""
    assert dp_lib.check_dp_settings(_dp(), clip="adaptive", population=3) is None
    with pytest.raises(ConfigError, match="--dp-clip"):
        dp_lib.check_dp_settings(_dp(), clip=5.0, population=3)


def test_builders_refuse_the_other_mechanism_and_missing_specs():
    with pytest.raises(ConfigError, match="--dp fedavg"):
        dp_lib.build_dp_fed_avg(lambda: None, _dp("ftrl"))
    with pytest.raises(ConfigError, match="--dp ftrl"):
        dp_lib.build_dp_ftrl(lambda: None, _dp())
    with pytest.raises(ConfigError, match="record_specs"):
        dp_lib.build_dp_aggregator(_dp("ftrl"))

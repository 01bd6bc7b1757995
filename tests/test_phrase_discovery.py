"""Federated phrase discovery: exact against a plain count, bounded per user, floored at k, decoded cohort by
cohort, resumable, only sketches reach the server, and noise with a threshold under DP. Real text (the embedded
corpus), real TFF."""

import collections
import dataclasses
import os

import numpy as np
import pytest

from keyboard_lm.data.corpora import load_corpus
from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.federated.phrase_discovery import (PhraseDiscoveryConfig, combined_epsilons, discover_phrases,
                                                    phrase_privacy)
from keyboard_lm.text.spec import SPECIAL_TOKENS as S
from keyboard_lm.text.vocabulary import Vocabulary

CLIENTS = 120


@pytest.fixture(scope="module")
def clients():
    """({client: encoded sentences}, vocabulary size) of the embedded corpus's first clients."""
    corpus = load_corpus(None, "default")
    ids = corpus.client_ids[:CLIENTS]
    vocab = Vocabulary.from_sentences(corpus.sentences(ids), 200)  # small: some words are <oov>
    return {c: [vocab.encode(s) for s in corpus.sentences([c])] for c in ids}, len(vocab)


def reference(data, config):
    """Users per pair and per context, counted in plain Python as the docs define them."""
    pairs, contexts = collections.Counter(), collections.Counter()
    for sentences in data.values():
        local = [collections.Counter() for _ in range(config.max_order)]
        for sentence in sentences:
            tokens = [S.bos_id, *sentence, S.eos_id]
            for i in range(1, len(tokens)):
                for n in range(1, min(i, config.max_order) + 1):
                    context = tuple(tokens[i - n:i])
                    if tokens[i] != S.oov_id and S.oov_id not in context:
                        local[n - 1][(context, tokens[i])] += 1
        # The user's most frequent pairs of each length; ties: the smallest sum of ids (the commonest words),
        # then the first typed (Counter keeps that order, sorted is stable).
        chosen = [pair for n, counter in enumerate(local) for pair, _ in sorted(
            counter.items(), key=lambda kv: (-kv[1], sum(kv[0][0]) + kv[0][1]))[:config.quotas[n]]]
        pairs.update(chosen)
        contexts.update({context for context, _ in chosen})
    k = config.k_anonymity
    return ({c: u for c, u in contexts.items() if u >= k}, {p: u for p, u in pairs.items() if u >= k})


@pytest.mark.parametrize("field, value", [
    ("max_order", 0), ("max_order", 5), ("max_pairs_per_user", 2), ("k_anonymity", 0), ("clients_per_round", 0),
    ("capacity", 0), ("seed", -1), ("noise_multiplier", 0.0), ("noise_multiplier", float("nan")),
    ("delta_threshold", 1.0), ("k_anonymity", True)])
def test_bad_config_is_refused(field, value):
    with pytest.raises(ConfigError, match=field):
        PhraseDiscoveryConfig(**{field: value})


def test_bound_is_split_evenly_across_context_lengths():
    assert PhraseDiscoveryConfig().quotas == (64, 64, 64, 64)
    assert PhraseDiscoveryConfig(max_pairs_per_user=10, max_order=3).quotas == (4, 3, 3)


def test_capacity_is_sized_for_one_cohort_not_for_every_client():
    """The server decodes each cohort's sum, so the sketch needs room for one cohort's strings: 100 clients x
    512 strings, not the 1,492 clients of the embedded corpus's fitting set."""
    config = PhraseDiscoveryConfig()
    assert config.spec(10000, 1492).capacity == 100 * 512
    assert config.spec(10000, 30).capacity == 30 * 512  # fewer clients than a cohort
    assert PhraseDiscoveryConfig(capacity=777).spec(10000, 1492).capacity == 777


def test_sentence_with_a_special_token_is_refused(clients):
    data, vocab_size = clients
    with pytest.raises(DataError, match="sentence 1: id 1 "):
        discover_phrases({"a": [[5, 6], [5, S.bos_id]]}, vocab_size)


def test_dp_threshold_and_combined_account():
    config = PhraseDiscoveryConfig(max_pairs_per_user=8, noise_multiplier=2.0, delta_threshold=1e-11)
    p = phrase_privacy(config)
    assert p["rho"] == pytest.approx(1 / 8) and p["sigma"] == pytest.approx(2.0 * 4.0)  # sqrt(16 strings)
    # One user's 16 strings, each 1 + N(0, sigma^2): none clears the threshold but with probability delta.
    from statistics import NormalDist

    released_alone = NormalDist(1, p["sigma"]).cdf(2 - p["threshold"])  # P[1 + noise >= threshold]
    assert 1 - (1 - released_alone) ** 16 == pytest.approx(1e-11, rel=1e-3)
    eps_table, eps_both = combined_epsilons(config, 0.0, [1e-10])[0], combined_epsilons(config, 0.5, [1e-10])[0]
    assert 0 < eps_table < eps_both
    assert combined_epsilons(PhraseDiscoveryConfig(), 0.5, [1e-10]) == [float("inf")]
    with pytest.raises(ConfigError, match="delta"):
        combined_epsilons(config, 0.5, [1e-12])


@pytest.mark.parametrize("capacity", [2000, 150])
def test_decoder_finds_what_tffs_decode_iblt_tf_finds(clients, capacity):
    """The pass-at-a-time peeling decodes the same strings and counts as TFF's own decoder, and leaves the same
    count undecoded when the table is overloaded (capacity 150 for ~600 strings)."""
    import tensorflow as tf

    from keyboard_lm.federated.runtime import import_tff
    from keyboard_lm.federated.phrase_discovery import _dataset
    from keyboard_lm.federated.phrase_sketch import SketchSpec, client_sketch, decode_sketch

    data, vocab_size = clients
    spec = SketchSpec(vocab_size, (3, 3), capacity)
    sketch = tf.function(lambda dataset: client_sketch(dataset, spec))  # traced once for every client
    total = sum(sketch(_dataset([np.asarray(s, np.int32) for s in sentences])).numpy()
                for sentences in list(data.values())[:60])
    strings, counts, left = tf.function(lambda summed: decode_sketch(summed, spec))(tf.constant(total))
    theirs = import_tff().analytics.heavy_hitters.iblt.decode_iblt_tf(
        tf.constant(total), capacity=capacity, string_max_bytes=spec.string_max_bytes, seed=spec.seed)
    assert dict(zip(strings.numpy().tolist(), counts.numpy().tolist())) == dict(
        zip(theirs[0].numpy().tolist(), theirs[1].numpy().tolist()))
    assert int(left) == int(theirs[2]) and (int(left) > 0) == (capacity == 150)


@pytest.mark.heavy
def test_counts_equal_a_plain_python_count_when_bounds_do_not_bind(clients):
    data, vocab_size = clients
    config = PhraseDiscoveryConfig(k_anonymity=1, max_pairs_per_user=4000, capacity=30000, clients_per_round=50)
    counts = discover_phrases(data, vocab_size, config)
    contexts, pairs = reference(data, config)
    assert counts.pairs == pairs and counts.contexts == contexts
    assert counts.info["not_decoded"] == 0 and counts.info["cohorts"] == 3
    assert any(users == 1 for users in pairs.values())  # the k=2 test below has something to drop
    assert all(S.oov_id not in c and w != S.oov_id for c, w in pairs)


@pytest.mark.heavy
def test_bound_and_k_floor_hold_and_an_interrupted_run_resumes_to_the_same_counts(clients, tmp_path):
    data, vocab_size = clients
    config = PhraseDiscoveryConfig(k_anonymity=2, max_pairs_per_user=8, capacity=8000, clients_per_round=40)
    state = str(tmp_path / "phrases.state")

    def crash_after_first_cohort(line):
        if line.startswith("phrases: cohort 1/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        discover_phrases(data, vocab_size, config, state_path=state, progress=crash_after_first_cohort)
    # What the server kept: the first cohort's strings with their exact numbers of users, before any floor.
    first = {c: data[c] for c in sorted(data)[:config.clients_per_round]}
    assert saved_counts(state) == reference(first, dataclasses.replace(config, k_anonymity=1))
    lines = []
    counts = discover_phrases(data, vocab_size, config, state_path=state, progress=lines.append)
    assert lines[0].startswith("phrases: resuming after cohort 1 of 3")
    contexts, pairs = reference(data, config)
    assert counts.pairs == pairs and counts.contexts == contexts
    alone = reference(data, PhraseDiscoveryConfig(k_anonymity=1, max_pairs_per_user=8))[1]
    dropped = [p for p, users in alone.items() if users == 1]
    assert dropped and not set(dropped) & set(counts.pairs)  # a pair typed by one user only is not released
    assert min(counts.pairs.values()) >= 2
    assert not os.path.exists(state)  # it holds every user's strings: not kept after the release


def saved_counts(path):
    """(contexts, pairs) with their users as a discovery state file holds them, read with numpy alone."""
    from keyboard_lm.federated.phrase_sketch import decode_strings

    with np.load(path, allow_pickle=False) as saved:
        data, ends, users = saved["strings"].tobytes(), np.cumsum(saved["lengths"]).tolist(), saved["users"]
        return decode_strings(zip((data[a:b] for a, b in zip([0] + ends[:-1], ends)), users.tolist()))


@pytest.mark.heavy
def test_each_cohort_is_decoded_and_its_undecoded_count_summed(clients):
    """With a capacity too small for a cohort (150 for ~600 strings), the counts are what each cohort's sum
    decodes to, added across cohorts, and not_decoded is the sum of what each cohort's decoding left."""
    import tensorflow as tf

    from keyboard_lm.federated.phrase_discovery import _dataset
    from keyboard_lm.federated.phrase_sketch import client_sketch, decode_sketch, decode_strings

    data, vocab_size = clients
    config = PhraseDiscoveryConfig(max_order=2, max_pairs_per_user=6, k_anonymity=1, capacity=150,
                                   clients_per_round=60)
    counts = discover_phrases(data, vocab_size, config)
    spec = config.spec(vocab_size, len(data))
    sketch = tf.function(lambda dataset: client_sketch(dataset, spec))
    decode = tf.function(lambda summed: decode_sketch(summed, spec))
    users, left = collections.Counter(), 0
    ids = sorted(data)
    for cohort in (ids[:60], ids[60:]):
        total = sum(sketch(_dataset([np.asarray(s, np.int32) for s in data[c]])).numpy() for c in cohort)
        strings, cohort_counts, cohort_left = decode(tf.constant(total))
        users.update(dict(zip(strings.numpy().tolist(), cohort_counts.numpy().tolist())))
        left += int(cohort_left)
    contexts, pairs = decode_strings(users.items())
    assert counts.info["cohorts"] == 2 and counts.info["not_decoded"] == left > 0
    assert counts.pairs == pairs and counts.contexts == contexts
    exact = reference(data, config)[1]
    assert all(n <= exact[pair] for pair, n in pairs.items())  # a count left undecoded is missing


@pytest.mark.parametrize("case, message", [
    ("truncated", "damaged phrase discovery state .BadZipFile"), ("sums_wrong", "counts do not add up"),
    ("old_sketch", "state of another version"), ("foreign", "state of other clients")])
def test_damaged_or_foreign_state_is_refused_in_one_line(clients, tmp_path, case, message):
    """Refused before any TFF work: a cut file, counts that do not add up, the sketch sum an earlier version
    kept, and another discovery's counts."""
    from keyboard_lm.federated.phrase_discovery import _checked_clients, _fingerprint, _save_state

    data, vocab_size = clients
    config = PhraseDiscoveryConfig(capacity=1000)
    state = tmp_path / "phrases.state"
    fingerprint = _fingerprint(_checked_clients(data, vocab_size), sorted(data),
                               config.spec(vocab_size, len(data)), config)
    if case == "truncated":
        state.write_bytes(b"PK\x03\x04 not a whole archive")
    elif case == "sums_wrong":
        with state.open("wb") as f:
            np.savez(f, version=np.int64(2), cohorts_done=np.int64(1), not_decoded=np.int64(0),
                     fingerprint=np.array(fingerprint), strings=np.frombuffer(b"P\x05\x06", np.uint8),
                     lengths=np.array([4]), users=np.array([3]))
    elif case == "old_sketch":
        with state.open("wb") as f:
            np.savez(f, version=np.int64(1), sketch=np.zeros([3, 8, 4], np.int64), cohorts_done=np.int64(1),
                     fingerprint=np.array(fingerprint))
    else:
        _save_state(str(state), {b"P\x05\x06": 3}, 1, 0, "another discovery")
    with pytest.raises(ConfigError, match=f"{state}: .*{message}"):
        discover_phrases(data, vocab_size, config, state_path=str(state))


@pytest.mark.heavy
def test_noise_changes_counts_and_the_threshold_drops_single_user_strings(clients):
    data, vocab_size = clients
    config = PhraseDiscoveryConfig(max_pairs_per_user=8, capacity=8000, noise_multiplier=0.5, delta_threshold=1e-9)
    counts = discover_phrases(data, vocab_size, config)
    exact_contexts, exact_pairs = reference(data, PhraseDiscoveryConfig(k_anonymity=1, max_pairs_per_user=8))
    threshold = phrase_privacy(config)["threshold"]
    assert counts.pairs and counts.info["differential_privacy"]["threshold"] == threshold
    released = {**counts.contexts, **counts.pairs}
    exact = {**exact_contexts, **exact_pairs}
    assert all(noisy >= threshold for noisy in released.values())
    assert all(exact[key] >= 2 for key in released)  # no single-user string clears the threshold
    assert any(noisy != exact[key] for key, noisy in released.items())


@pytest.mark.heavy
def test_only_integer_sketch_sums_cross_from_clients_to_the_server():
    """Every intrinsic that takes client values to the server is a sum of the int64 sketch, and no value placed
    at the server holds a string: a computation that sent strings (or anything else) up fails this check."""
    from keyboard_lm.federated.runtime import import_tff
    from keyboard_lm.federated.phrase_discovery import build_phrase_computations

    tff = import_tff()
    config = PhraseDiscoveryConfig(capacity=500)
    spec = config.spec(200, 10)
    cohort, decode = build_phrase_computations(spec, config)
    assert _client_to_server_flows(cohort) == [("federated_secure_modular_sum", ("int64", spec.shape))]
    plain, _ = build_phrase_computations(spec, PhraseDiscoveryConfig(capacity=500, secure_sum=False))
    assert _client_to_server_flows(plain) == [("federated_sum", ("int64", spec.shape))]
    assert _client_to_server_flows(decode) == []  # decoding reads the server's sum only

    # The check catches a computation that sends the clients' strings up.
    import tensorflow as tf

    strings = tff.SequenceType(tff.TensorType(np.str_, [None]))

    @tff.tensorflow.computation(strings)
    def joined(dataset):
        return dataset.reduce(tf.constant(""), lambda acc, s: tf.strings.join([acc, tf.strings.reduce_join(s)]))

    @tff.federated_computation(tff.FederatedType(strings, tff.CLIENTS))
    def leaky(data):
        return tff.federated_aggregate(tff.federated_map(joined, data), "", tff.tensorflow.computation(
            lambda a, b: tf.strings.join([a, b]), (np.str_, np.str_)), tff.tensorflow.computation(
            lambda a, b: tf.strings.join([a, b]), (np.str_, np.str_)), tff.tensorflow.computation(
            lambda a: a, np.str_))

    assert _client_to_server_flows(leaky) == [("federated_aggregate", "string at the server")]


def _client_to_server_flows(computation):
    """[(intrinsic, (dtype, shape) of its server result)] for each intrinsic taking CLIENTS values to SERVER."""
    from tensorflow_federated.python.core.impl.compiler import building_blocks
    from tensorflow_federated.python.core.impl.types import computation_types, placements, type_analysis

    def placed(type_signature, placement):
        return any(isinstance(t, computation_types.FederatedType) and t.placement is placement
                   for t in type_analysis.preorder_types(type_signature))

    def has_string(type_signature):
        return any(isinstance(t, computation_types.TensorType) and np.dtype(t.dtype).kind in "SUO"
                   for t in type_analysis.preorder_types(type_signature))

    flows, blocks = [], [computation.to_building_block()]
    while blocks:
        block = blocks.pop()
        blocks.extend(block.children())
        if not isinstance(block, building_blocks.Intrinsic):
            continue
        signature = block.type_signature
        if placed(signature.parameter, placements.CLIENTS) and placed(signature.result, placements.SERVER):
            member = signature.result.member
            flows.append((block.uri, "string at the server" if has_string(member) else
                          (np.dtype(member.dtype).name, tuple(member.shape))))
    return flows

"""Federated phrase discovery: the (context, next word) pairs many users typed, learnt from summed IBLT sketches.

Each client turns its own sentences into at most ``max_pairs_per_user`` pairs (its most frequent, split evenly
across context lengths) and their distinct contexts, one count per string, and sends only the IBLT sketch of
those strings (``phrase_sketch.client_sketch``, TFF's ``tff.analytics.heavy_hitters.iblt`` encoder). The server
sums a cohort's sketches (``federated_secure_modular_sum`` over TFF's IBLT field, as ``build_iblt_computation``
does with secure sum), decodes that sum (as TFF's IBLT heavy hitters decodes each round's) and adds the
decoded number of users of each string to its running counts. After the last cohort, and only then, a string
is released when at least ``k_anonymity`` users sent it, or, under differential privacy, when its count plus
Gaussian noise clears a threshold (Gaussian partition selection). The TFF computations are
``build_phrase_computations``; ``discover_phrases`` runs them and returns ``PhraseCounts``
(``keyboard_lm.text.phrase_table``). The privacy account is ``phrase_privacy`` / ``combined_epsilons``.

Cost: a sketch is sized for one cohort (clients per round x strings per user: 51,200 strings, 4.4 MB), not for
every client, so the work grows with the clients, not their square. On 2 cores shared with a training run, the
embedded corpus's 1,492 fitting clients take 65 s (15 cohorts of about 4 s; a sketch sized for all of them,
763,904 strings and 66 MB, summed and decoded once, took 910 s for the same counts); the mail's 714 fitting
senders take 48 s (8 cohorts) and release 2,310 pairs and 2,625 contexts at k = 5.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import os
import statistics
import time
import zipfile
from typing import Callable, Mapping

import numpy as np

from keyboard_lm.config_checks import check_range
from keyboard_lm.data.limits import check_seed
from keyboard_lm.errors import ConfigError, DataError
from keyboard_lm.federated.phrase_sketch import SketchSpec
from keyboard_lm.text.phrase_table import MAX_ORDER, PhraseCounts
from keyboard_lm.text.spec import SPECIAL_TOKENS

_STATE_VERSION = 2  # 1 held the running sum of the sketches
#: What one TFF call's client sketches may hold in the worker: each client holds about 3 sketches at its peak.
_CALL_BYTES = 1 << 30


@dataclasses.dataclass(frozen=True)
class PhraseDiscoveryConfig:
    """How phrases are discovered.

    Attributes:
      max_order: contexts of 1..max_order tokens (the phrase table's longest is 4).
      max_pairs_per_user: the per-user contribution bound: at most this many distinct (context, next) pairs
        per user, its most frequent (ties: those of its commonest words), split evenly across context lengths
        (the shorter ones take a remainder) so that the many 1-word contexts of a user do not crowd out its 3-
        and 4-word phrases, where the table's gain is. 64 per length: one mail already holds more distinct
        pairs than that, so a user contributes its repeated phrases (sign-offs, footers, greetings), the ones
        a table reuses; a larger bound adds mostly pairs typed once, which the k floor drops, and grows the
        sketch (its capacity is sized from the bound) and, under noise, the noise (sigma grows as its root).
      k_anonymity: a string (pair or context) is released only when at least k distinct users sent it.
        5 by default: in mail, the sentences of a conversation between two people (a message and the reply
        that quotes it) reach two users' text, and a floor of 2 would release them.
      clients_per_round: clients whose sketches are summed together (a cohort: what secure aggregation sums
        and the server decodes; its counts are saved after each). In simulation a cohort is summed in TFF
        calls of at most ``clients_per_call`` clients: TFF's worker builds every client of a call at once,
        each a dense sketch of the full capacity (and its encoder's two transient copies).
      capacity: distinct strings one cohort's summed sketch can decode; None sizes it from the bound:
        clients per round x strings per user (pairs + contexts), the most a cohort can send, so decoding
        never runs out of room.
      seed: the IBLT's hash seed.
      secure_sum: sum sketches with ``federated_secure_modular_sum`` (the deployment's secure aggregation; TFF
        runs it as a plain modular sum in simulation) instead of ``federated_sum``.
      noise_multiplier: None: no noise (the k floor only). Else the released counts get Gaussian noise of
        std noise_multiplier * sqrt(strings per user) (the L2 sensitivity of one user's counts).
      delta_threshold: under noise, the probability bound that any string of one user alone is released;
        the release threshold is derived from it (``phrase_privacy``).
    """

    max_order: int = MAX_ORDER
    max_pairs_per_user: int = 256
    k_anonymity: int = 5
    clients_per_round: int = 100
    capacity: int | None = None
    seed: int = 0
    secure_sum: bool = True
    noise_multiplier: float | None = None
    delta_threshold: float = 1e-11

    def __post_init__(self):
        def whole(name, low, high=None):
            check_range(name, getattr(self, name), low, high, integer=True, kind="a whole number")

        whole("max_order", 1, MAX_ORDER)
        whole("max_pairs_per_user", self.max_order, 65535)
        whole("k_anonymity", 1)
        whole("clients_per_round", 1)
        if self.capacity is not None:
            whole("capacity", 1, 50_000_000)
        check_seed("seed", self.seed)
        if self.noise_multiplier is not None:  # None: no noise
            check_range("noise_multiplier", self.noise_multiplier, 0, 1e6, low_open=True, high_open=True)
        check_range("delta_threshold", self.delta_threshold, 0, 1, low_open=True, high_open=True)

    @property
    def quotas(self) -> tuple[int, ...]:
        """Pairs per context length, 1..max_order: an even split, the remainder to the shortest."""
        base, extra = divmod(self.max_pairs_per_user, self.max_order)
        return tuple(base + (n < extra) for n in range(self.max_order))

    @property
    def strings_per_user(self) -> int:
        """B: the most strings a user sends, its pairs and at most as many contexts, each with count 1."""
        return 2 * self.max_pairs_per_user

    def clients_per_call(self, spec: SketchSpec) -> int:
        """Clients summed in one TFF call of the simulation: a cohort, or fewer where its sketches would hold
        more than 1 GiB in TFF's worker (the sum is the same: the driver adds the calls of a cohort)."""
        sketch_bytes = 8 * math.prod(spec.shape)
        return max(1, min(self.clients_per_round, _CALL_BYTES // (3 * sketch_bytes)))

    def spec(self, vocab_size: int, clients: int) -> SketchSpec:
        """The sketch's shape for ``clients`` users of a ``vocab_size`` vocabulary: room for one cohort's
        strings (the server decodes each cohort's sum), whatever the number of cohorts."""
        cohort = max(1, min(clients, self.clients_per_round))
        capacity = self.capacity if self.capacity is not None else cohort * self.strings_per_user
        return SketchSpec(vocab_size, self.quotas, capacity, self.seed)


def phrase_privacy(config: PhraseDiscoveryConfig) -> dict:
    """The release's privacy: {"rho", "delta", "sigma", "threshold", ...}, rho None without noise.

    A user adds or removes at most B = ``strings_per_user`` strings, each with count 1: the counts have L2
    sensitivity sqrt(B), and Gaussian noise of std sigma = z sqrt(B) makes them rho-zCDP with rho = 1 / (2 z^2)
    (Bun and Steinke 2016, Prop. 1.6). A string only one side has is released when 1 + noise >= T; with
    T = 1 + sigma * Phi^-1((1 - delta)^(1/B)), none of the user's B strings is, except with probability delta
    (Gaussian partition selection: Desfontaines et al. 2022; Google's differential-privacy library). The
    release is delta-approximate rho-zCDP, composed by adding rho and delta (``combined_epsilons``).
    """
    b = config.strings_per_user
    out = {"strings_per_user": b, "l2_sensitivity": math.sqrt(b), "k_anonymity": config.k_anonymity,
           "unit": "user = one training client of the partition"}
    z = config.noise_multiplier
    if z is None:
        return {**out, "rho": None, "delta": None, "sigma": None, "threshold": None,
                "guarantee": f"k-anonymity {config.k_anonymity} on exact counts; no differential privacy"}
    sigma = z * math.sqrt(b)
    tail = -math.expm1(math.log1p(-config.delta_threshold) / b)  # 1 - (1 - delta)^(1/B), exactly
    threshold = 1.0 + sigma * -statistics.NormalDist().inv_cdf(tail)
    return {**out, "rho": 1.0 / (2.0 * z * z), "delta": config.delta_threshold, "sigma": sigma,
            "threshold": max(threshold, float(config.k_anonymity)), "noise_multiplier": z,
            "guarantee": "central DP at the aggregator, after the secure sum: Gaussian counts and partition "
                         "selection, delta-approximate rho-zCDP"}


def combined_epsilons(config: PhraseDiscoveryConfig, model_rho: float | None, deltas) -> list[float]:
    """eps at each of ``deltas`` for a model's rho-zCDP and this table together: rho adds (zCDP composition)
    and the table's delta is spent first (eps of rho_model + rho_table at delta - delta_table). inf when either
    side has no zCDP account (no noise, or DP-FedAvg's RDP account)."""
    from keyboard_lm.privacy.accounting import rho_to_epsilons

    table = phrase_privacy(config)
    if table["rho"] is None or model_rho is None:
        return [math.inf for _ in deltas]
    for delta in deltas:
        if not delta > table["delta"]:
            raise ConfigError(f"delta {delta} is not above the phrase table's own delta {table['delta']}")
    return rho_to_epsilons(model_rho + table["rho"], [d - table["delta"] for d in deltas])


def build_phrase_computations(spec: SketchSpec, config: PhraseDiscoveryConfig):
    """(cohort, decode): the TFF computations of discovery.

    ``cohort(partial@SERVER, sentences@CLIENTS) -> partial@SERVER``: each client's sketch, summed, added to the
    cohort's partial sum (zero at a cohort's start; more than one call only where a simulated cohort is split);
    the only value that leaves a client is its sketch, int64 [repetitions, table, chunks + 2].
    ``decode(sum@SERVER) -> (strings, users, not decoded)@SERVER``: a cohort's sum read back into its strings
    and their numbers of users. Nothing is released here: the floor comes after the last cohort (``_release``).
    """
    import tensorflow as tf

    from keyboard_lm.federated import phrase_sketch
    from keyboard_lm.federated.runtime import import_tff

    tff = import_tff()
    sentences = tff.SequenceType(tff.TensorType(np.int32, [None]))
    field = spec.encoder().field_size

    @tff.tensorflow.computation(sentences)
    @tf.function  # autograph: the client's loop over its dataset
    def client_sketch(dataset):
        return phrase_sketch.client_sketch(dataset, spec)

    sketch = client_sketch.type_signature.result

    @tff.tensorflow.computation(sketch, sketch)
    def add(partial, total):
        return tf.math.floormod(partial + total, field)

    @tff.federated_computation(tff.FederatedType(sketch, tff.SERVER), tff.FederatedType(sentences, tff.CLIENTS))
    def cohort(partial, data):
        sketches = tff.federated_map(client_sketch, data)
        if config.secure_sum:
            total = tff.backends.mapreduce.federated_secure_modular_sum(sketches, np.int64(field))
        else:
            total = tff.federated_sum(sketches)
        return tff.federated_map(add, tff.federated_zip((partial, total)))

    @tff.tensorflow.computation(sketch)
    @tf.function  # autograph: the peeling passes
    def decode_sum(summed):
        return phrase_sketch.decode_sketch(summed, spec)

    @tff.federated_computation(tff.FederatedType(sketch, tff.SERVER))
    def decode(summed):
        return tff.federated_map(decode_sum, summed)

    return cohort, decode


def discover_phrases(client_sentences, vocab_size: int, config: PhraseDiscoveryConfig = PhraseDiscoveryConfig(), *,
                     state_path: str | None = None, progress: Callable[[str], None] | None = None) -> PhraseCounts:
    """Run discovery over every client once, in cohorts of ``clients_per_round``; returns what it released.

    ``client_sentences``: {client id: [sentence]} (or (id, sentences) pairs), each sentence a list of
    vocabulary ids without <bos>/<eos>, encoded with the run's vocabulary of ``vocab_size`` words.
    ``state_path``: the users of each string decoded so far and the cohorts done are saved there after each
    cohort (durably) and a later call with the same clients and settings continues from them; a damaged or
    foreign state file is refused (ConfigError naming it). It is removed once the counts are released: it holds
    every string decoded, one user's too. Each call is one release (under noise, one more spend of its budget).
    """
    started = time.monotonic()
    say = progress or (lambda line: None)
    clients = _checked_clients(client_sentences, vocab_size)
    ids = sorted(clients)
    spec = config.spec(vocab_size, len(ids))
    cohorts = [ids[i:i + config.clients_per_round] for i in range(0, len(ids), config.clients_per_round)]
    fingerprint = _fingerprint(clients, ids, spec, config)

    users, done, not_decoded = {}, 0, 0  # {string (UTF-8 bytes): users}, summed over the cohorts decoded
    if state_path is not None and os.path.exists(state_path):  # checked before any TFF work
        users, done, not_decoded = _load_state(state_path, fingerprint, len(cohorts))
        say(f"phrases: resuming after cohort {done} of {len(cohorts)} ({state_path})")

    from keyboard_lm.federated.runtime import import_tff, start_runtime

    start_runtime()
    cohort_step, decode = build_phrase_computations(spec, config)
    if config.secure_sum:
        # This runtime has no secure aggregation: run the secure modular sum as TFF's tests do, as the plain sum
        # taken modulo the field (the server sees only the sum either way).
        cohort_step = import_tff().backends.test.replace_secure_intrinsics_with_bodies(cohort_step)
    per_call = config.clients_per_call(spec)
    for number in range(done, len(cohorts)):
        t, members = time.monotonic(), cohorts[number]
        partial = np.zeros(spec.shape, np.int64)
        for i in range(0, len(members), per_call):
            partial = np.asarray(cohort_step(partial, [_dataset(clients[c]) for c in members[i:i + per_call]]),
                                 np.int64)
        strings, counts, left = decode(partial)
        for string, count in zip(np.asarray(strings).tolist(), np.asarray(counts).tolist()):
            users[string] = users.get(string, 0) + count
        not_decoded += int(left)
        if state_path is not None:
            _save_state(state_path, users, number + 1, not_decoded, fingerprint)
        say(f"phrases: cohort {number + 1}/{len(cohorts)}, {len(members)} clients, {len(counts):,} strings "
            f"decoded ({int(left)} left), {time.monotonic() - t:.1f} s")
    from keyboard_lm.federated.phrase_sketch import decode_strings

    contexts, pairs = decode_strings(_release(users, config))
    if state_path is not None and os.path.exists(state_path):
        os.unlink(state_path)
    privacy = phrase_privacy(config)
    info = {"clients": len(ids), "cohorts": len(cohorts), "clients_per_round": config.clients_per_round,
            "max_order": config.max_order, "max_pairs_per_user": config.max_pairs_per_user,
            "pairs_per_length": list(config.quotas), "strings_per_user": config.strings_per_user,
            "k_anonymity": config.k_anonymity, "capacity": spec.capacity, "sketch_shape": list(spec.shape),
            "sketch_bytes": int(np.prod(spec.shape)) * 8, "clients_per_call": per_call,
            "secure_sum": config.secure_sum, "strings_decoded": len(users), "not_decoded": not_decoded,
            "contexts": len(contexts), "pairs": len(pairs), "seed": config.seed,
            "differential_privacy": {k: privacy[k] for k in ("noise_multiplier", "sigma", "threshold", "delta", "rho",
                                                             "guarantee") if k in privacy},
            "seconds": round(time.monotonic() - started, 3)}
    if not_decoded:
        say(f"phrases: warning: a count of {not_decoded} was left undecoded over the cohorts (capacity "
            f"{spec.capacity} per cohort too small for the strings sent); some counts are lower than the users "
            "who sent the string, never higher")
    say(f"phrases: {len(pairs)} pairs and {len(contexts)} contexts released of {len(users)} strings decoded, "
        f"{info['seconds']:.1f} s")
    return PhraseCounts(contexts=contexts, pairs=pairs, info=info)


def _release(users: dict, config: PhraseDiscoveryConfig) -> list:
    """[(string, users)] of the strings released: those of at least k users, or, under noise, those whose count
    plus Gaussian noise (``phrase_privacy``'s sigma) reaches its threshold, with the noisy count. Applied once,
    to the counts summed over every cohort, so there is one release and one draw of noise per string."""
    privacy = phrase_privacy(config)
    if privacy["sigma"] is None:
        return [(s, n) for s, n in users.items() if n >= config.k_anonymity]
    # Never seeded: numpy's generator draws its seed from the operating system's entropy.
    noise = np.random.default_rng().normal(0.0, privacy["sigma"], len(users))
    return [(s, float(n)) for s, n in zip(users, np.fromiter(users.values(), np.float64, len(users)) + noise)
            if n >= privacy["threshold"]]


def _checked_clients(client_sentences, vocab_size: int) -> dict:
    """{client id: [np.int32 sentence]}, every id checked: in the vocabulary, not <pad>/<bos>/<eos>."""
    if not isinstance(vocab_size, int) or not 4 < vocab_size <= 65536:
        raise ConfigError(f"vocab_size must be a whole number in (4, 65536], got {vocab_size!r}")
    items = client_sentences.items() if isinstance(client_sentences, Mapping) else client_sentences
    special = SPECIAL_TOKENS
    out = {}
    for cid, sentences in items:
        if cid in out:
            raise DataError(f"client {cid!r} appears twice in the phrase discovery input")
        rows = []
        for i, sentence in enumerate(sentences):
            row = np.asarray(sentence, dtype=np.int64).reshape(-1)
            bad = row[(row < 0) | (row >= vocab_size) | np.isin(row, (special.pad_id, special.bos_id,
                                                                      special.eos_id))]
            if bad.size:
                raise DataError(f"client {cid!r}, sentence {i}: id {int(bad[0])} is not a word of the vocabulary "
                                f"of {vocab_size} (sentences hold word ids, <oov> allowed, without <bos>/<eos>)")
            rows.append(row.astype(np.int32))
        out[cid] = rows
    if not out:
        raise DataError("phrase discovery needs at least one client")
    return out


def _dataset(sentences):
    """One client's tf.data.Dataset of int32 [n] sentences (its own data: it never leaves the client)."""
    import tensorflow as tf

    lengths = np.array([len(s) for s in sentences], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    values = tf.constant(np.concatenate(sentences) if sentences else np.zeros([0], np.int32), tf.int32)
    # Slices of one constant: dense int32 [n] elements, as the computation's type says (a ragged slice is not)
    return tf.data.Dataset.from_tensor_slices((starts, lengths)).map(lambda a, n: values[a:a + n])


def _fingerprint(clients: dict, ids: list, spec: SketchSpec, config: PhraseDiscoveryConfig) -> str:
    """sha256 of what the summed sketch depends on: the clients' sentences, the sketch's shape, the cohorts."""
    h = hashlib.sha256(repr((dataclasses.astuple(spec), config.clients_per_round, config.secure_sum)).encode())
    for cid in ids:
        h.update(repr(cid).encode() + b"\0")
        for row in clients[cid]:
            h.update(len(row).to_bytes(4, "little") + row.astype("<i4").tobytes())
    return h.hexdigest()


def _save_state(path: str, users: dict, done: int, not_decoded: int, fingerprint: str) -> None:
    """The counts decoded so far, written durably: the strings as one UTF-8 blob with their lengths."""
    from keyboard_lm.durable import replace_file

    strings = list(users)
    buffer = io.BytesIO()
    np.savez(buffer, version=np.int64(_STATE_VERSION), cohorts_done=np.int64(done),
             not_decoded=np.int64(not_decoded), fingerprint=np.array(fingerprint),
             strings=np.frombuffer(b"".join(strings), np.uint8),
             lengths=np.fromiter(map(len, strings), np.int64, len(strings)),
             users=np.fromiter(users.values(), np.int64, len(strings)))
    replace_file(path, buffer.getvalue())


def _load_state(path: str, fingerprint: str, cohorts: int) -> tuple[dict, int, int]:
    """The saved ({string: users}, cohorts done, not decoded); a damaged or foreign file is one ConfigError."""
    from keyboard_lm.federated.phrase_sketch import decode_strings

    def damaged(why):
        return ConfigError(f"{path}: damaged phrase discovery state ({why}); remove it to start discovery over")

    try:
        with open(path, "rb") as f, np.load(io.BytesIO(f.read()), allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in saved.files}
        if int(arrays["version"]) != _STATE_VERSION:
            raise ConfigError(f"{path}: phrase discovery state of another version; remove it to start over")
        if str(arrays["fingerprint"]) != fingerprint:
            raise ConfigError(f"{path}: phrase discovery state of other clients, sentences or settings; "
                              "remove it or give another state path")
        done, not_decoded = int(arrays["cohorts_done"]), int(arrays["not_decoded"])
        blob, lengths, counts = arrays["strings"], arrays["lengths"], arrays["users"]
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise damaged(f"{type(e).__name__}: {e}") from None
    if not (blob.dtype == np.uint8 and lengths.dtype == counts.dtype == np.int64
            and blob.ndim == lengths.ndim == counts.ndim == 1 and lengths.size == counts.size
            and 0 <= done <= cohorts and not_decoded >= 0 and (lengths > 0).all() and (counts > 0).all()
            and int(lengths.sum()) == blob.size):
        raise damaged("its counts do not add up")
    ends, data = np.cumsum(lengths).tolist(), blob.tobytes()
    users = dict(zip((data[a:b] for a, b in zip([0] + ends[:-1], ends)), counts.tolist()))
    try:
        decode_strings(users.items())
    except (ConfigError, UnicodeDecodeError) as e:
        raise damaged(f"{type(e).__name__}: {e}") from None
    if len(users) != lengths.size:
        raise damaged("a string saved twice")
    return users, done, not_decoded

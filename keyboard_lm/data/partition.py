"""Re-partitioning a corpus into synthetic clients (Ji et al. 2019's IID setting)."""

from __future__ import annotations

import numpy as np

from keyboard_lm.data.corpus import Corpus
from keyboard_lm.errors import ConfigError

PARTITIONS = ("natural", "iid", "record")


def repartition_iid(corpus: Corpus, num_clients: int, seed: int = 0) -> Corpus:
    """Pool every record of ``corpus`` and deal them IID to ``num_clients`` clients.

    Ji et al. (FedAtt, sec. IV) draw their clients IID from a pooled corpus.
    A record (a speech, a message, a line) is the unit dealt, so no record
    is split or lost: the result holds exactly the input's records.  The
    records are taken in sorted-client order and permuted with ``seed``, then
    dealt round-robin, so client sizes differ by at most one record and the
    same corpus and seed give the same clients on every machine.  The train /
    held-out split is then made over these clients as usual, so a held-out
    client's records are in no training client.
    """
    records = [text for cid in corpus.client_ids for text in corpus.clients[cid]]
    if num_clients < 2:
        raise ConfigError(f"--num-clients must be >= 2 (train and held-out), got {num_clients}")
    if num_clients > len(records):
        raise ConfigError(f"--num-clients {num_clients} exceeds the {len(records):,} records of {corpus.name}; "
                          "each client needs at least one")
    order = np.random.RandomState(seed).permutation(len(records))
    width = len(str(num_clients - 1))
    clients: dict[str, list[str]] = {f"iid-{i:0{width}d}": [] for i in range(num_clients)}
    names = list(clients)
    for rank, index in enumerate(order):
        clients[names[rank % num_clients]].append(records[index])
    return Corpus(f"{corpus.name}, re-partitioned IID into {num_clients} clients (seed {seed})", clients,
                  corpus.skipped)


def repartition_by_record(corpus: Corpus) -> Corpus:
    """One client per record: in Tiny Shakespeare a speech, in a chat corpus a message.

    User-level DP needs thousands of users; Tiny Shakespeare has 299 roles but
    7,097 speeches, so a "user" of this partition is a speech, not a speaker:
    a guarantee per speech says nothing about a role that speaks many times.
    Client ids are ``<client>/<index>`` with the index zero-padded, so sorting
    keeps a client's records together and in order; no record is lost.
    """
    clients: dict[str, list[str]] = {}
    for cid in corpus.client_ids:
        records = corpus.clients[cid]
        width = len(str(max(len(records) - 1, 0)))
        for i, text in enumerate(records):
            clients[f"{cid}/{i:0{width}d}"] = [text]
    return Corpus(f"{corpus.name}, one client per record", clients, corpus.skipped)


def apply_partition(corpus: Corpus, partition: str = "natural", num_clients: int | None = None,
                    seed: int = 0) -> Corpus:
    """``natural`` keeps the corpus' own clients; ``iid`` re-partitions (needs ``num_clients``);
    ``record`` makes one client per record."""
    if partition not in PARTITIONS:
        raise ConfigError(f"unknown partition {partition!r}; choose one of {', '.join(PARTITIONS)}")
    if partition in ("natural", "record"):
        if num_clients is not None:
            raise ConfigError("--num-clients applies to --partition iid only")
        return corpus if partition == "natural" else repartition_by_record(corpus)
    if num_clients is None:
        raise ConfigError("--partition iid needs --num-clients N")
    return repartition_iid(corpus, num_clients, seed)

"""A run's kept model (or the model it started from) on its held-out users, pooled and per user, cached in the run."""

from __future__ import annotations

import json
import os


def cached(path: str, compute, key: str = "") -> dict:
    """``compute()``, saved as JSON at ``path`` and read from there while ``key`` (what it was computed from)
    is the same."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        if saved.get("key", "") == key:
            return saved
    result = compute()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)  # a --collect before any run has no work directory
    tmp = f"{path}.{os.getpid()}.tmp"  # two benchmarks side by side may compute the same one
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"key": key, "pooled": result["pooled"], "clients": result["clients"]}, f)
    os.replace(tmp, path)
    return result


def heldout_by_user(run_dir: str, corpus_args: list[str], start: bool = False) -> dict:
    """The kept model of a run evaluated on its held-out users, pooled and per user (cached in the run while its
    weights stay the same); with ``start``, the model the run started from (its base, as training loaded it)
    on the same users."""

    def evaluate():
        import argparse
        import dataclasses

        from keyboard_lm.cli.args import add_data_args, add_split_args, load_corpus_from_args
        from keyboard_lm.data.split import SplitConfig, split_clients
        from keyboard_lm.evaluation import evaluate_model
        from keyboard_lm.models.run_dir import build_loaded_model, load_run
        from keyboard_lm.models.warm_start import start_weights

        run = load_run(run_dir)
        if start:
            weights, why = start_weights(run)
            if weights is None:
                raise SystemExit(f"{run_dir}: its start cannot be rebuilt: {why}")
            run = dataclasses.replace(run, weights=weights)
        # the clients the run trained on: the corpus flags read as `train` reads them (--partition included)
        flags = argparse.ArgumentParser(add_help=False)
        add_data_args(flags)
        add_split_args(flags)
        corpus = load_corpus_from_args(flags.parse_known_args(corpus_args)[0])
        heldout = split_clients(corpus.client_ids, SplitConfig(**run.record.split))[1]
        return evaluate_model(build_loaded_model(run), corpus, heldout, run.vocab, run.record.seq_len)

    from keyboard_lm.models.run_dir import WEIGHTS_FILE, RunRecord, sha256_file

    if start:
        key = (RunRecord.read(run_dir).init_from or {}).get("weights_sha256", "")
        return cached(os.path.join(run_dir, "start_by_user.json"), evaluate, key=key)
    # keyed by the weights: a run resumed and finished after a first collect is evaluated again
    return cached(os.path.join(run_dir, "heldout_by_user.json"), evaluate,
                   key=sha256_file(os.path.join(run_dir, WEIGHTS_FILE)))

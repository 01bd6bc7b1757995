"""Ro et al.'s Table 4 benchmark: its runs reach `train` as DP-FTRL from each cell's base with the base's public
vocabulary, and its held-out users are those of the run's own partition."""

import json
import os
import sys
from types import SimpleNamespace

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.ro_table4 import ro_table4  # noqa: E402

pytestmark = pytest.mark.bench


def test_a_run_is_dp_ftrl_from_its_base_and_is_evaluated_on_its_own_speeches(small_run, tmp_path):
    from keyboard_lm.cli import main
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.partition import apply_partition
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.federated.dp_run import PUBLIC_VOCABULARY
    from keyboard_lm.models.run_dir import load_run
    from benchmarks.common.heldout import heldout_by_user

    options = SimpleNamespace(cifg_base=small_run, si_base="unused", cohort=20, rounds=2)
    out = str(tmp_path / "run")
    args = ro_table4.train_args(options, "blt", 10.0, "cifg", 1, out, resume=False)
    assert args[args.index("--init-from") + 1] == small_run and args[args.index("--dp") + 1] == "blt"
    assert ro_table4.train_args(options, "blt", 10.0, "cifg", 1, out, resume=True)[-1] == "--resume"
    # the same flags on the embedded corpus, one client per message, at the base's toy size
    corpus = ["--format", "default", "--partition", "record"]
    small = ["train", *corpus, *args[args.index("--out"):], "--max-batches", "2", "--split-seed", "1"]
    assert main(small) == 0
    run, base = load_run(out), load_run(small_run)
    dp = run.info["differential_privacy"]
    assert (dp["mechanism"], dp["clip"], dp["clients_per_round"], dp["rounds"]) == ("blt", 0.1, 20, 2)
    assert dp["epsilon"] == pytest.approx(10.0, rel=2e-3)
    assert dp["vocabulary"] == PUBLIC_VOCABULARY and run.vocab.tokens == base.vocab.tokens
    assert ro_table4._record(out)["noise_multiplier"] == dp["noise_multiplier"]
    # held out: the run's own record partition's held-out messages, not the conversations of the natural one
    result = heldout_by_user(out, ["--format", "default", "--partition", "record", "--split-seed", "1"])
    records = apply_partition(load_corpus(None, "default"), "record")
    heldout = split_clients(records.client_ids, SplitConfig(**run.record.split))[1]
    assert set(result["clients"]) == set(heldout) and all("/" in c for c in heldout)
    with open(os.path.join(out, "heldout_by_user.json"), encoding="utf-8") as f:
        assert json.load(f)["pooled"] == result["pooled"]
    # the start row: the base itself (the run kept the base's vocabulary) on the same held-out messages
    from keyboard_lm.evaluation import evaluate_model
    from keyboard_lm.models.run_dir import build_loaded_model

    start = heldout_by_user(out, ["--format", "default", "--partition", "record", "--split-seed", "1"], start=True)
    direct = evaluate_model(build_loaded_model(base), records, heldout, base.vocab, run.record.seq_len)
    assert set(start["clients"]) == set(heldout)
    assert start["pooled"]["perplexity"] == pytest.approx(direct["pooled"]["perplexity"], rel=1e-5)
    assert start["pooled"]["perplexity"] != pytest.approx(result["pooled"]["perplexity"], rel=1e-5)
    assert os.path.exists(os.path.join(out, "start_by_user.json"))

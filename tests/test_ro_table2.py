"""Ro et al.'s Table 2 benchmark: its protocol reaches `train` as Ro's FedAdam, and the overtaking round."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import ro_table2  # noqa: E402


def test_the_protocol_flags_train_ros_fedadam_from_random_weights(tmp_path):
    from keyboard_lm.cli import main

    args = ro_table2.train_args("mail", "si-cifg", 0.1, 0.001, 2, 2, 3, 2, str(tmp_path / "run"))
    assert "--init-from" not in args and args[args.index("--model") + 1] == "si-cifg"
    # the same protocol on the embedded corpus, at a toy size
    corpus_end = args.index("--out")
    small = ["train", *args[corpus_end:], "--format", "default", "--units", "16", "--embedding-dim", "8",
             "--vocab-size", "200", "--max-batches", "2"]
    assert main(small) == 0
    fed = json.loads((tmp_path / "run" / "run.json").read_text())["federated"]
    assert (fed["server_optimizer"], fed["server_lr"], fed["server_adam_epsilon"], fed["client_lr"]) == (
        "adam", 0.001, 1e-8, 0.1)
    assert (fed["clip"], fed["client_clipnorm"], fed["dropout"], fed["weight_average"], fed["lr_decay"]) == (
        "none", None, 0.0, 0.0, 1.0)
    assert (fed["seed"], fed["clients_per_round"], fed["rounds"]) == (2, 3, 2)


def _rows(values):
    return [{"round": float(r), "perplexity": p} for r, p in values]


def test_overtaking_round_is_where_si_stays_below_cifg_on_the_seed_mean():
    cifg = [_rows([(25, 500), (50, 400), (75, 300)]), _rows([(25, 520), (50, 380), (75, 320)])]
    si = [_rows([(25, 480), (50, 420), (75, 290)]), _rows([(25, 500), (50, 400), (75, 300)])]
    # round 25: si below; round 50: si 410 above cifg 390; round 75: below -> stays below from 75
    assert ro_table2.overtakes({"cifg": cifg, "si-cifg": si}) == 75
    # the other way round: below at 50 only, above again at 75 -> never
    assert ro_table2.overtakes({"cifg": si, "si-cifg": cifg}) is None
    never = [_rows([(25, 900), (50, 900), (75, 900)])]
    assert ro_table2.overtakes({"cifg": cifg[:1], "si-cifg": never}) is None


@pytest.mark.parametrize("lines,diverged", [(["round 3 ...", "error: training diverged at round 4"], True),
                                            (["round 3 ...", "run saved"], False)])
def test_a_diverged_sweep_run_counts_as_a_result_with_infinite_loss(tmp_path, lines, diverged):
    out = tmp_path / "run"
    (tmp_path / "run.log").write_text("\n".join(lines))
    assert ro_table2._diverged(str(out)) is diverged
    if diverged:
        assert ro_table2.validation_loss(str(out)) == float("inf")

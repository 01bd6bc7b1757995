"""The warm-start sweep ranks recipes by validation only, relative to the first recipe on each corpus."""

import csv
import json
import os

import pytest

from benchmarks.base import warm_start_sweep as sweep
from benchmarks.common import runs

pytestmark = pytest.mark.bench


def _run(tmp_path, name, rows, finished=True):
    """A run directory as `train` writes it: metrics.csv with evaluation rows and run.json."""
    run_dir = tmp_path / name
    run_dir.mkdir(parents=True)
    with open(run_dir / "metrics.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["round", "elapsed_seconds", "examples_seen", "recall_at_3", "perplexity",
                               "val_recall_at_3", "val_loss"])
        w.writeheader()
        for rnd, val, heldout in rows:
            w.writerow({"round": rnd, "elapsed_seconds": 10.0 * rnd, "examples_seen": 100 * rnd,
                        "recall_at_3": heldout, "perplexity": 200.0, "val_recall_at_3": val, "val_loss": 5.0})
    (run_dir / "run.json").write_text(json.dumps({"command": "train", "final_metrics": {"recall_at_3": 0.2}
                                                  if finished else None}))
    return str(run_dir)


def test_kept_round_is_chosen_by_validation_not_heldout(tmp_path):
    r = runs.collect_run(_run(tmp_path, "a", [(25, 0.20, 0.30), (50, 0.22, 0.10), (75, 0.21, 0.40)]))
    assert r["kept"]["step"] == 50
    assert r["kept"]["recall_at_3"] == pytest.approx(0.10)


def test_rank_needs_every_corpus_and_averages_ratios(tmp_path):
    results = {
        "mail": {"ref": runs.collect_run(_run(tmp_path, "m0", [(25, 0.20, 0.2)])),
                 "new": runs.collect_run(_run(tmp_path, "m1", [(25, 0.22, 0.2)])),
                 "half": runs.collect_run(_run(tmp_path, "m2", [(25, 0.30, 0.2)]))},
        "shakespeare": {"ref": runs.collect_run(_run(tmp_path, "s0", [(25, 0.10, 0.2)])),
                        "new": runs.collect_run(_run(tmp_path, "s1", [(25, 0.095, 0.2)]))},
    }
    ranked = sweep.rank(results, ["ref", "new", "half"], ["mail", "shakespeare"])
    assert [r["recipe"] for r in ranked] == ["new", "ref", "half"]
    assert ranked[0]["mean"] == pytest.approx((1.10 + 0.95) / 2)
    # a recipe not run on every corpus is not ranked, however good it looked on one
    assert ranked[-1]["mean"] is None and ranked[-1]["ratios"] == {"mail": pytest.approx(1.5)}


def test_unfinished_run_is_marked_and_resumed(tmp_path):
    run_dir = _run(tmp_path, "u", [(25, 0.2, 0.2)], finished=False)
    assert not runs.finished(run_dir)
    assert runs.collect_run(run_dir)["finished"] is False
    assert not runs.finished(os.path.join(str(tmp_path), "missing"))


def test_a_run_stopped_before_its_last_round_is_not_done(tmp_path):
    """A SIGTERM'd federated run writes final metrics at the round it reached: it is resumed, not read as done."""
    run_dir = _run(tmp_path, "s", [(25, 0.2, 0.2)])
    info = json.loads(open(os.path.join(run_dir, "run.json"), encoding="utf-8").read())
    for done, complete in ((176, False), (350, True)):
        info.update(rounds_done=done, federated={"rounds": 350})
        with open(os.path.join(run_dir, "run.json"), "w", encoding="utf-8") as f:
            json.dump(info, f)
        assert runs.finished(run_dir) is complete
        assert runs.collect_run(run_dir)["finished"] is complete


def test_a_stopped_run_is_resumed_without_init_from(tmp_path):
    """`train` refuses --init-from with --resume: the continuation names only the run and the corpus."""
    from keyboard_lm.cli.main import build_parser
    from keyboard_lm.cli.train import warm_start_from_args

    corpus = sweep.CORPORA["shakespeare-iid300"]
    fresh = runs.train_args(corpus, ["--client-lr", "0.5"], str(tmp_path / "r"), rounds=100, eval_every=25)
    assert fresh[fresh.index("--init-from") + 1] == "base" and "--client-lr" in fresh and "--resume" not in fresh
    again = runs.train_args(corpus, ["--client-lr", "0.5"], str(tmp_path / "r"), rounds=100, eval_every=25,
                             resume=True)
    assert "--init-from" not in again and "--client-lr" not in again and again[-1] == "--resume"
    assert again[again.index("--partition") + 1] == "iid" and again[again.index("--rounds") + 1] == "100"
    assert warm_start_from_args(build_parser().parse_args(again)) is None  # accepted: no ConfigError


def _by_user(hits: list[int], events: int = 10) -> dict:
    """An evaluation as `evaluate_model` returns it: pooled and per-user recall@3 with their event counts."""
    clients = {f"u{i}": {"recall_at_3": h / events, "num_events": events} for i, h in enumerate(hits)}
    return {"pooled": {"recall_at_3": sum(hits) / (events * len(hits))}, "clients": clients}


def test_paired_interval_is_against_the_first_recipe_on_the_same_users():
    ref = _by_user([2, 3, 4, 2, 3, 5, 1, 2])
    better = _by_user([h + 1 for h in [2, 3, 4, 2, 3, 5, 1, 2]])  # one more hit for every user
    same = _by_user([2, 3, 4, 2, 3, 5, 1, 2])
    out = sweep.paired({"mail": {"ref": ref, "better": better, "same": same}, "other": {"better": better}},
                       ["ref", "better", "same"])
    b = out["mail"]["better"]
    assert b["ratio"] == pytest.approx(30 / 22) and 1 < b["lo"] <= b["ratio"] <= b["hi"]
    assert out["mail"]["same"] == {"ratio": 1.0, "lo": 1.0, "hi": 1.0}
    assert "ref" not in out["mail"] and "other" not in out  # no reference run there: no interval


def test_a_recipe_with_its_own_rounds_keeps_them_fresh_and_resumed(tmp_path):
    """An equal-cost recipe (`--local-epochs 2 --rounds 175` beside 350-round recipes) must not be resumed
    to the sweep's 350: on resume `--rounds` is the round to reach."""
    recipe = ["--local-epochs", "2", "--rounds", "175"]
    for resume in (False, True):
        args = runs.train_args(sweep.CORPORA["embedded"], recipe, str(tmp_path / "r"), rounds=350, eval_every=25,
                               resume=resume)
        assert args.count("--rounds") == 1 and args[args.index("--rounds") + 1] == "175"
    assert recipe == ["--local-epochs", "2", "--rounds", "175"]  # the caller's list is left as it was

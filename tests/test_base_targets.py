"""The base-model targets benchmark: seeds summarized, federated paired with centralized by seed, and the
package's card numbering a continued pretraining's epochs on."""

import pytest

from benchmarks.base import base_targets as bt
from benchmarks.common import heldout
from benchmarks.tools.package_base import _stages

pytestmark = pytest.mark.bench


def _run(recall):
    return {"kept": {"recall_at_3": recall, "recall_at_1": recall / 2, "perplexity": 150.0, "step": 100},
            "seconds": 60.0, "finished": True}


def test_ratios_pair_rows_by_seed_and_divide_by_the_5gram():
    results = {"mail federated": {0: _run(0.22), 1: _run(0.24), 2: _run(0.20)},
               "mail centralized": {0: _run(0.25), 2: _run(0.25)}}
    ngrams = {"mail": {"recall_at_3": 0.20}}
    assert bt.ratios(results, "mail federated", "5-gram", ngrams) == pytest.approx([1.1, 1.2, 1.0])
    # seed 1 has no centralized run: it is left out, not compared with another seed's
    assert bt.ratios(results, "mail federated", "mail centralized", ngrams) == pytest.approx([0.88, 0.80])
    s = bt.summarize([1.1, 1.2, 1.0])
    assert s["mean"] == pytest.approx(1.1) and s["sd"] == pytest.approx(0.1) and (s["min"], s["max"]) == (1.0, 1.2)


def test_report_says_met_only_when_every_seed_meets_the_aim():
    ngrams = {"mail": {"recall_at_3": 0.20, "recall_at_1": 0.1, "perplexity": 200.0}}
    results = {"mail federated": {0: _run(0.216), 1: _run(0.206)}, "mail centralized": {0: _run(0.23)},
               "shakespeare federated": {}}
    text = bt.report(results, ngrams, [0, 1])
    fed = next(line for line in text.splitlines() if line.startswith("| SpamAssassin senders: federated vs KN"))
    assert "1.055x ± " in fed and fed.endswith("| on the mean |")  # 1.08 and 1.03: the mean only
    cen = next(line for line in text.splitlines() if line.startswith("| SpamAssassin senders: centralized"))
    assert "1.150x (1 seed)" in cen and cen.endswith("| yes |")
    assert "| Tiny Shakespeare roles: federated vs KN 5-gram | not run |" in text


def test_a_continued_pretraining_numbers_its_epochs_on_after_the_packaged_ones():
    previous = {"command": "train A", "wall_seconds": 100.0,
                "epochs": [{"epoch": "1", "recall_at_3": "0.2"}, {"epoch": "2", "recall_at_3": "0.3"}]}
    rows = [{"epoch": "1", "recall_at_3": "0.31", "elapsed_seconds": "40"},
            {"epoch": "2", "recall_at_3": "0.32", "elapsed_seconds": "90"}]
    stages, epochs, wall = _stages(previous, "train B", rows)
    assert [e["epoch"] for e in epochs] == ["1", "2", "3", "4"] and epochs[2]["recall_at_3"] == "0.31"
    assert stages == [{"command": "train A", "epochs": 2, "wall_seconds": 100.0},
                      {"command": "train B", "epochs": 2, "wall_seconds": 90.0}]
    assert wall == pytest.approx(190.0)
    # a third stage keeps the first two
    stages3, epochs3, _ = _stages({"stages": stages, "epochs": epochs}, "train C", rows[:1])
    assert [s["command"] for s in stages3] == ["train A", "train B", "train C"] and epochs3[-1]["epoch"] == "5"
    # a fresh package has one stage
    assert _stages(None, "train A", rows)[0] == [{"command": "train A", "epochs": 2, "wall_seconds": 90.0}]


def test_each_seed_ratio_carries_a_paired_interval_over_users():
    """Per seed, the run and its reference pooled over the same draws of held-out users."""
    def by_user(hits):  # one evaluation: per user recall@3 over 50 events
        clients = {f"u{i}": {"recall_at_3": h / 50, "num_events": 50, "num_tokens": 60, "num_iv_events": 45}
                   for i, h in enumerate(hits)}
        return {"pooled": {"recall_at_3": sum(hits) / (50 * len(hits))}, "clients": clients}

    fed = {0: by_user([10, 12, 9, 14, 11, 10]), 1: by_user([11, 12, 10, 13, 11, 9])}
    cen = {0: by_user([11, 12, 10, 14, 12, 10])}
    ngram = by_user([10, 13, 10, 15, 12, 11])
    found = bt.paired({"mail federated": fed, "mail centralized": cen}, {"mail": ngram})
    fed_vs_ngram = found["SpamAssassin senders: federated vs KN 5-gram"]
    assert set(fed_vs_ngram) == {0, 1}
    point = 66 / 71  # seed 0: 66 hits against the 5-gram's 71 on the same users
    assert fed_vs_ngram[0][0] <= point <= fed_vs_ngram[0][1] < 1.0 + 1e-9
    # the centralized run of seed 1 is missing: no federated-vs-centralized interval for it
    assert set(found["SpamAssassin senders: federated vs centralized, same base and seed"]) == {0}
    results = {"mail federated": {s: _run(r["pooled"]["recall_at_3"]) for s, r in fed.items()},
               "mail centralized": {0: _run(cen[0]["pooled"]["recall_at_3"])}, "shakespeare federated": {}}
    ngrams = {"mail": {"recall_at_3": ngram["pooled"]["recall_at_3"], "recall_at_1": 0.1, "perplexity": 200.0}}
    text = bt.report(results, ngrams, [0, 1], found)
    row = next(line for line in text.splitlines() if line.startswith("| SpamAssassin senders: federated vs KN")
               and "[" in line)
    assert f"| {point:.3f}x [{fed_vs_ngram[0][0]:.3f}, {fed_vs_ngram[0][1]:.3f}] |" in row


def _by_user(hits):
    """One evaluation of six users with 50 events each: per user recall@3 of ``hits`` / 50."""
    clients = {f"u{i}": {"recall_at_3": h / 50, "num_events": 50, "num_tokens": 60, "num_iv_events": 45}
               for i, h in enumerate(hits)}
    return {"pooled": {"recall_at_3": sum(hits) / (50 * len(hits))}, "clients": clients}


def test_against_another_base_pairs_each_row_and_seed_over_the_same_users():
    mine = {"mail federated": {0: _by_user([12, 13, 11, 15, 12, 11]), 1: _by_user([11, 12, 10, 13, 11, 9])},
            "shakespeare federated": {0: _by_user([9, 9, 8, 10, 9, 9])}}
    theirs = {"mail federated": {0: _by_user([11, 12, 10, 14, 11, 10])},  # seed 1 not run from the other base
              "shakespeare federated": {0: _by_user([10, 9, 9, 10, 9, 9])}}
    found = bt.against(mine, theirs)
    assert set(found) == {"mail federated", "shakespeare federated"} and set(found["mail federated"]) == {0}
    ratio, lo, hi = found["mail federated"][0]
    assert ratio == pytest.approx(74 / 68) and 1.0 < lo <= ratio <= hi  # one more hit for every user
    ratio, lo, hi = found["shakespeare federated"][0]
    assert ratio == pytest.approx(54 / 56) and lo <= ratio <= hi < 1.0 + 1e-9
    text = "\n".join(bt.against_report(found, [0, 1], "runs/other"))
    assert "`--against runs/other`" in text
    row = next(line for line in text.splitlines() if line.startswith("| mail federated |"))
    assert row.startswith(f"| mail federated | {74 / 68:.3f}x [") and row.endswith(" |  | 1.088x (1 seed) |")
    assert "| mail centralized |  |  |  |" in text  # a row neither base ran


def test_the_per_user_cache_is_recomputed_when_what_it_was_computed_from_changes(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"pooled": {"recall_at_3": len(calls) / 10}, "clients": {}}

    path = str(tmp_path / "by_user.json")
    assert heldout.cached(path, compute, key="a")["pooled"]["recall_at_3"] == 0.1
    assert heldout.cached(path, compute, key="a")["pooled"]["recall_at_3"] == 0.1 and len(calls) == 1
    assert heldout.cached(path, compute, key="b")["pooled"]["recall_at_3"] == 0.2  # e.g. a resumed run's new weights


def test_a_candidate_base_is_measured_with_the_rows_own_commands(tmp_path, monkeypatch):
    """--init-from starts every row from the given base (a candidate before it is the package's); the train
    arguments each row gets are the real ones `train` parses."""
    from keyboard_lm.cli.main import build_parser
    from benchmarks.common import runs

    calls = []
    monkeypatch.setattr(bt, "train_from_base", lambda corpus, extra, run_dir, **kw: calls.append(
        runs.train_args(corpus, extra, run_dir, **kw)))
    bt.main(["--rows", "mail federated,mail centralized", "--seeds", "3", "--work", str(tmp_path / "w"),
             "--init-from", "benchmarks/records/base/base_v2", "--no-intervals", "--out", str(tmp_path / "out")])
    assert len(calls) == 2
    for argv in calls:
        parsed = build_parser().parse_args(argv)
        assert parsed.init_from == "benchmarks/records/base/base_v2" and parsed.seed == 3
    assert "--centralized" in calls[1]
    # the report's command column names the base the rows started from
    (page,) = (tmp_path / "out").glob("*.md")
    text = page.read_text()
    assert "`keyboard-lm train --init-from benchmarks/records/base/base_v2 --data" in text
    assert "--init-from base --data" not in text


def test_a_candidate_rounds_default_reaches_the_federated_rows_only(tmp_path, monkeypatch):
    """--rounds N is the federated rows' `train --rounds N` (fresh and resumed); the centralized row keeps its
    epochs; the page's commands say so."""
    from keyboard_lm.cli.main import build_parser
    from benchmarks.common import runs

    calls = []
    monkeypatch.setattr(bt, "train_from_base", lambda corpus, extra, run_dir, **kw: calls.append(
        (runs.train_args(corpus, extra, run_dir, **kw), runs.train_args(corpus, extra, run_dir, resume=True, **kw))))
    bt.main(["--rows", "mail federated,mail centralized", "--seeds", "0", "--work", str(tmp_path / "w"),
             "--rounds", "275", "--no-intervals", "--out", str(tmp_path / "out")])
    (fed, fed_resumed), (cen, cen_resumed) = calls
    assert build_parser().parse_args(fed).rounds == 275 and build_parser().parse_args(fed_resumed).rounds == 275
    assert "--rounds" not in cen and "--rounds" not in cen_resumed
    text = next((tmp_path / "out").glob("*.md")).read_text()
    assert "but 275 federated rounds" in text
    assert "--format mbox --rounds 275`" in text and "--centralized --rounds" not in text
    with pytest.raises(SystemExit):
        bt.main(["--rounds", "0", "--collect", "--work", str(tmp_path / "w")])


def test_a_candidate_recipe_reaches_the_federated_rows_only_and_the_benchmarks_own_flags_are_refused(
        tmp_path, monkeypatch, capsys):
    """--train-args ARGS is added to each federated row's train command (a resumed run reads its recipe from
    its run.json) and named on the page; the centralized row keeps its own; a candidate may not set what the
    benchmark sets itself."""
    from keyboard_lm.cli.main import build_parser
    from benchmarks.common import runs

    calls = []
    monkeypatch.setattr(bt, "train_from_base", lambda corpus, extra, run_dir, **kw: calls.append(
        (runs.train_args(corpus, extra, run_dir, **kw), runs.train_args(corpus, extra, run_dir, resume=True, **kw))))
    bt.main(["--rows", "mail federated,mail centralized", "--seeds", "0", "--work", str(tmp_path / "w"),
             "--train-args", "--server-lr 0.005 --clients-per-round 20", "--no-intervals",
             "--out", str(tmp_path / "out")])
    (fed, fed_resumed), (cen, cen_resumed) = calls
    parsed = build_parser().parse_args(fed)
    assert (parsed.server_lr, parsed.clients_per_round, parsed.seed) == (0.005, 20, 0)
    assert build_parser().parse_args(fed_resumed).resume
    assert "--server-lr" not in cen and "--server-lr" not in cen_resumed
    text = next((tmp_path / "out").glob("*.md")).read_text()
    assert "but `--server-lr 0.005 --clients-per-round 20` on the federated rows" in text
    assert "--format mbox --server-lr 0.005 --clients-per-round 20`" in text
    for bad in ("--seed 3", "--out=x", "--init-from runs/x", "'"):
        with pytest.raises(SystemExit) as e:
            bt.main(["--train-args", bad, "--collect", "--work", str(tmp_path / "w")])
        assert e.value.code == 2 and "--train-args" in capsys.readouterr().err


def test_the_demo_corpus_is_a_row_a_candidate_default_is_measured_on(tmp_path, monkeypatch):
    """The embedded corpus (what `keyboard-lm demo` trains on) runs as a federated row with its own arguments,
    seed by seed, and a candidate's rounds reach it."""
    from keyboard_lm.cli.main import build_parser
    from benchmarks.common import runs

    calls = []
    monkeypatch.setattr(bt, "train_from_base", lambda corpus, extra, run_dir, **kw: calls.append(
        (runs.train_args(corpus, extra, run_dir, **kw), run_dir)))
    bt.main(["--rows", "embedded federated", "--seeds", "1,2", "--work", str(tmp_path / "w"), "--rounds", "275",
             "--no-intervals", "--out", str(tmp_path / "out")])
    assert [d for _, d in calls] == [str(tmp_path / "w" / "embedded_federated" / f"seed{s}") for s in (1, 2)]
    for (argv, _), seed in zip(calls, (1, 2)):
        parsed = build_parser().parse_args(argv)
        assert parsed.format == "default" and parsed.data is None and parsed.seed == seed and parsed.rounds == 275
    text = next((tmp_path / "out").glob("*.md")).read_text()
    assert "| embedded federated | `keyboard-lm train --init-from base --format default --rounds 275` | not run |" \
        in text


def test_a_page_keeps_what_pairing_needs_so_its_runs_can_be_paired_against_once_gone(tmp_path):
    """--against a result file pairs exactly as against the work directory its runs lived in."""
    import json

    theirs = {"mail federated": {0: _by_user([11, 12, 10, 14, 11, 10]), 1: _by_user([10, 12, 10, 13, 11, 9])}}
    for e in theirs["mail federated"].values():  # what a real evaluation also carries, and the record drops
        e["pooled"].update(perplexity=150.0, num_events=300)
        for c in e["clients"].values():
            c.update(perplexity=140.0, loss=4.9)
    page = tmp_path / "other.json"
    page.write_text(json.dumps({"users": {row: {str(s): bt.users(e) for s, e in per.items()}
                                          for row, per in theirs.items()}}))
    kept = bt.other_by_user(bt.page_users(str(page)), {"mail federated": [0, 2], "shakespeare federated": [0]})
    assert set(kept["mail federated"]) == {0} and kept["shakespeare federated"] == {}  # only what was run there
    assert set(kept["mail federated"][0]["clients"]["u0"]) == set(bt.USER_FIELDS) - {"recall_at_1"}
    mine = {"mail federated": {0: _by_user([12, 13, 11, 15, 12, 11])}}
    assert bt.against(mine, kept) == bt.against(mine, theirs)


def test_against_a_file_that_is_not_a_page_with_per_user_records_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "v2.json"
    for text, why in (("{not json", "not a result file"), ('{"runs": {}}', "without per-user records")):
        bad.write_text(text)
        with pytest.raises(SystemExit) as e:
            bt.main(["--against", str(bad), "--collect", "--work", str(tmp_path / "w")])
        assert e.value.code == 2 and why in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        bt.main(["--against", str(tmp_path / "missing"), "--collect", "--work", str(tmp_path / "w")])
    assert e.value.code == 2 and "no such work directory or result file" in capsys.readouterr().err


def test_a_page_reports_the_rows_asked_for_not_another_rows_run_training_beside_it(tmp_path, monkeypatch):
    work = tmp_path / "w"
    for row in ("embedded federated", "shakespeare federated"):
        (work / bt.slug(row) / "seed0").mkdir(parents=True)
    read = []
    monkeypatch.setattr(bt, "collect_run", lambda d: read.append(d) or {**_run(0.6), "run_dir": d, "trained": {}})
    monkeypatch.setattr(bt, "cached", lambda path, compute, key="": {"pooled": {
        "recall_at_3": 0.61, "recall_at_1": 0.5, "perplexity": 15.0}, "clients": {}})
    bt.main(["--rows", "embedded federated", "--seeds", "0", "--work", str(work), "--collect", "--no-intervals",
             "--out", str(tmp_path / "out")])
    assert read == [str(work / "embedded_federated" / "seed0")]
    text = next((tmp_path / "out").glob("*.md")).read_text()
    assert "| shakespeare federated | `keyboard-lm train --init-from base --data" in text
    assert next(line for line in text.splitlines() if line.startswith("| shakespeare federated |")).endswith(
        "| not run | | | | | |")

"""`train --dp fedavg|ftrl`, its accounting in metrics.csv, run.json and the model card,
`--partition record`, and `audit canaries` end to end (tiny models on the embedded corpus)."""

from __future__ import annotations

import csv
import json
import os

import pytest

from keyboard_lm.cli import main
from keyboard_lm.data.partition import apply_partition
from keyboard_lm.models.run_dir import load_run
from keyboard_lm.privacy import accounting
from keyboard_lm.privacy.sampling import ftrl_schedule, poisson_sample, tree_sensitivity

TINY = ["--no-phrases", "--units", "16", "--embedding-dim", "8", "--vocab-size", "300", "--dropout", "0"]


def _rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def fedavg_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("dp") / "fedavg")
    assert main(["train", "--out", out, *TINY, "--rounds", "3", "--eval-every", "3", "--clients-per-round", "30",
                 "--dp", "fedavg", "--dp-noise-multiplier", "0.8", "--dp-clip", "0.5"]) == 0
    return out


def test_dp_fedavg_accounts_every_round_and_records_its_settings(fedavg_run):
    run = load_run(fedavg_run)
    dp = run.info["differential_privacy"]
    n = dp["population"]
    assert (dp["mechanism"], dp["noise_multiplier"], dp["clip"], dp["sampling"]) == ("fedavg", 0.8, 0.5, "poisson")
    assert dp["clients_per_round"] == 30 and dp["sampling_probability"] == pytest.approx(30 / n)
    assert dp["delta"] == pytest.approx(1 / n ** 1.1)  # the default delta
    eps = [float(r["epsilon"]) for r in _rows(fedavg_run)]
    assert eps == pytest.approx([accounting.fedavg_epsilon(0.8, 30 / n, t, dp["delta"]) for t in (1, 2, 3)])
    assert eps[0] < eps[1] < eps[2] == pytest.approx(dp["epsilon"])
    # DP noise is unseeded, and the DP clip replaced the robust one.
    assert run.info["reproducible"] is False
    assert run.info["federated"]["clip"] == "none"
    # The moving average of the global model (train's default) is unmeasured under DP: off unless asked for.
    assert run.info["federated"]["weight_average"] == 0.0


def test_dp_fedavg_cohorts_are_the_poisson_draws(fedavg_run):
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.preprocessing import encode_clients
    from keyboard_lm.data.split import SplitConfig, split_clients

    run = load_run(fedavg_run)
    corpus = load_corpus(None, "default")
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig())
    encoded = encode_clients({c: corpus.clients[c] for c in train_ids}, run.vocab, 20)
    population = [c for c in train_ids if len(encoded[c][0])]
    assert len(population) == run.info["differential_privacy"]["population"]
    sizes = [int(r["clients"]) for r in _rows(fedavg_run)]
    assert sizes == [len(poisson_sample(population, 30 / len(population), 0, t)) for t in (1, 2, 3)]


def test_dp_model_card_carries_the_guarantee(fedavg_run, tmp_path):
    out = str(tmp_path / "m.tflite")
    assert main(["export", fedavg_run, "--out", out]) == 0
    with open(out + ".card.json", encoding="utf-8") as f:
        card = json.load(f)
    dp = card["differential_privacy"]
    assert dp["mechanism"] == "fedavg" and dp["epsilon"] == pytest.approx(
        load_run(fedavg_run).info["differential_privacy"]["epsilon"])
    assert dp["delta"] > 0 and dp["rounds"] == 3


def test_dp_ftrl_calibrated_to_epsilon_follows_its_schedule_and_resumes(tmp_path, capsys):
    from keyboard_lm.federated.dp_run import CLIENT_VOCABULARY

    out = str(tmp_path / "ftrl")
    assert main(["train", "--out", out, *TINY, "--rounds", "3", "--eval-every", "3", "--clients-per-round", "40",
                 "--dp", "ftrl", "--dp-epsilon", "4", "--dp-clip", "1"]) == 0
    dp = load_run(out).info["differential_privacy"]
    # From random weights the vocabulary comes from the clients' text: the run says it is outside the guarantee.
    assert dp["vocabulary"] == CLIENT_VOCABULARY
    assert "vocabulary is built from the training clients' text without noise" in capsys.readouterr().out
    n = dp["population"]
    # The planner calibrated z so that eps after all rounds is the target (to its tolerance).
    assert dp["epsilon"] == pytest.approx(4.0, rel=2e-3) and dp["target_epsilon"] == 4.0
    assert dp["rho"] == pytest.approx(tree_sensitivity(n, 40, 3) / (2 * dp["noise_multiplier"] ** 2))
    assert dp["min_separation"] == n // 40 - 1 and dp["max_participations"] == 1
    assert [int(r["clients"]) for r in _rows(out)] == [40, 40, 40]
    assert [float(r["rho"]) for r in _rows(out)] == pytest.approx(
        [tree_sensitivity(n, 40, t) / (2 * dp["noise_multiplier"] ** 2) for t in (1, 2, 3)])
    # Resuming keeps the run's noise multiplier and accounts the rounds actually run.
    assert main(["train", "--out", out, "--resume", "--rounds", "4"]) == 0
    again = load_run(out).info["differential_privacy"]
    assert again["noise_multiplier"] == dp["noise_multiplier"] and again["rounds"] == 4
    assert again["epsilon"] >= dp["epsilon"]
    assert ftrl_schedule(list(range(n)), 40, 4, 0).max_participations == again["max_participations"]


@pytest.mark.parametrize("flags,words", [
    (["--dp", "fedavg", "--dp-noise-multiplier", "-1", "--dp-clip", "1"], "noise-multiplier"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "0"], "--dp-clip"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--dp-delta", "1.5"], "--dp-delta"),
    (["--dp", "fedavg", "--dp-epsilon", "0", "--dp-clip", "1"], "--dp-epsilon"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1"], "--dp-clip"),
    (["--dp", "fedavg", "--dp-clip", "1"], "--dp-noise-multiplier"),
    (["--dp", "ftrl", "--dp-noise-multiplier", "1", "--dp-clip-quantile", "0.5"], "--dp-clip-quantile"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--dp-sampling", "schedule"],
     "--dp-sampling"),
    (["--dp-noise-multiplier", "1"], "without --dp"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--algorithm", "fedatt"], "fedatt"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--clip", "5"], "--clip 5"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--compression"], "--compression"),
    (["--dp", "ftrl", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--server-optimizer", "adam"], "adam"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--clients-per-round", "100000"],
     "population"),
    (["--dp", "fedavg", "--dp-noise-multiplier", "1", "--dp-clip", "1", "--centralized"], "--centralized"),
])
def test_bad_dp_settings_fail_before_training(tmp_path, capsys, flags, words):
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), *TINY, "--rounds", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert not (out / "metrics.csv").exists()


def test_record_partition_makes_one_client_per_record(default_corpus):
    per_record = apply_partition(default_corpus, "record")
    assert len(per_record.client_ids) == default_corpus.num_records
    assert all(len(v) == 1 for v in per_record.clients.values())
    assert sorted(t for v in per_record.clients.values() for t in v) == sorted(
        t for v in default_corpus.clients.values() for t in v)
    some = default_corpus.client_ids[0]
    mine = [cid for cid in per_record.client_ids if cid.rsplit("/", 1)[0] == some]
    assert [per_record.clients[c][0] for c in mine] == default_corpus.clients[some]


@pytest.mark.shakespeare
def test_shakespeare_has_7097_speeches(shakespeare):
    assert len(apply_partition(shakespeare, "record").client_ids) == 7097


def test_audit_canaries_trains_audits_and_reaudits(tmp_path, capsys):
    out = str(tmp_path / "audit")
    assert main(["audit", "canaries", "--out", out, *TINY, "--vocab-size", "2000", "--rounds", "2",
                 "--eval-every", "2", "--clients-per-round", "20", "--canaries", "3", "--controls", "2",
                 "--canary-repeats", "2,5", "--canary-clients", "2", "--dp", "fedavg", "--dp-noise-multiplier", "1",
                 "--dp-clip", "1"]) == 0
    text = capsys.readouterr().out
    assert "exposure of 5 canaries" in text and "eps " in text
    with open(os.path.join(out, "canaries.json"), encoding="utf-8") as f:
        report_placements = json.load(f)["placements"]
    with open(os.path.join(out, "audit.json"), encoding="utf-8") as f:
        report = json.load(f)
    rows = report["rows"]
    assert [r["repeats"] for r in rows] == [2, 5, 2, 0, 0]
    assert all(0 <= r["exposure"] <= r["max_exposure"] for r in rows)
    # Participation is what the run's own Poisson draws gave each canary's two clients.
    run = load_run(out)
    for r in rows[:3]:
        assert len(set(r["clients"])) == 2
        assert r["participations"] == sum(len(run.info["participation"][c]) for c in r["clients"])
    assert report["differential_privacy"]["epsilon"] == run.info["differential_privacy"]["epsilon"]
    # The planted corpus is the one trained on; re-auditing gives the same ranks.
    assert main(["audit", "canaries", "--run", out, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in again["rows"]] == [r["rank"] for r in rows]
    # --resume continues the audit: the same canaries in the same clients, the rounds tracked so far kept.
    assert run.info["audit"] == {"canaries": 3, "controls": 2, "repeats": [2, 5], "seed": 0,
                                 "validation_fraction": 0.0, "slots": 4, "clients_per_canary": 2,
                                 "alphabet": ["air", "body", "city", "dust", "money", "paper", "people", "power",
                                              "time", "world"]}
    assert main(["audit", "canaries", "--out", out, "--resume", "--rounds", "3", "--canaries", "4"]) == 2
    assert "--canaries 4" in capsys.readouterr().err
    assert main(["audit", "canaries", "--out", out, "--resume", "--rounds", "3", "--canary-clients", "3"]) == 2
    assert "--canary-clients 3: the run in" in capsys.readouterr().err
    assert main(["audit", "canaries", "--out", out, "--resume", "--rounds", "3"]) == 0
    assert "exposure of 5 canaries" in capsys.readouterr().out
    resumed = load_run(out)
    assert resumed.info["rounds_done"] == 3 and resumed.info["audit"] == run.info["audit"]
    for client, rounds in run.info["participation"].items():
        later = resumed.info["participation"][client]
        assert [r for r in later if r <= 2] == rounds and all(r == 3 for r in later[len(rounds):])
    with open(os.path.join(out, "canaries.json"), encoding="utf-8") as f:
        assert json.load(f)["placements"] == report_placements
    # `train --resume` would train on the corpus without its canaries: refused, naming the command that resumes
    assert main(["train", "--out", out, "--resume", "--rounds", "4"]) == 2
    assert "audit canaries --out" in capsys.readouterr().err and load_run(out).info["rounds_done"] == 3
    # From random weights there is no start to calibrate against: the audit says so and ranks raw exposure.
    assert again["statistic"] == "exposure" and again["calibration"] == "none: the run started from random weights"
    assert all("calibrated_exposure" not in r for r in again["rows"])


def test_an_audit_from_a_base_is_calibrated_against_the_start(tmp_path, capsys):
    base, warm = str(tmp_path / "base"), str(tmp_path / "warm")
    assert main(["train", "--out", base, *TINY, "--rounds", "1", "--clients-per-round", "10"]) == 0
    # another format: 3 slots of 12 words the base's vocabulary has (|R| = 1,728); a word it lacks is refused
    # before the run directory is touched
    vocab = load_run(base).vocab
    words = [t for t in vocab.tokens[len(vocab.special.tokens):] if t.isalpha() and t not in ("my", "number", "is")]
    flags = ["--canaries", "3", "--controls", "3", "--canary-repeats", "4", "--rounds", "1",
             "--clients-per-round", "10", "--dropout", "0", "--canary-slots", "3"]
    start = ["audit", "canaries", "--out", warm, "--init-from", base, "--init-vocab", "base", *flags]
    assert main([*start, "--canary-words", ",".join([*words[:11], "zyzzyva"])]) == 2
    assert "'zyzzyva' not in the run's" in capsys.readouterr().err and not os.path.exists(warm)
    assert main([*start, "--canary-words", "a,a"]) == 2
    assert "lists 'a' twice" in capsys.readouterr().err
    assert main([*start, "--canary-words", ",".join(words[:12])]) == 0
    text = capsys.readouterr().out
    placements, _ = __import__("keyboard_lm.privacy.audit", fromlist=["load_canaries"]).load_canaries(warm)
    assert placements["format"]["alphabet"] == words[:12] and placements["format"]["slots"] == 3
    assert load_run(warm).info["audit"]["alphabet"] == words[:12]
    assert main(["audit", "canaries", "--out", warm, "--resume", "--canary-slots", "2"]) == 2
    assert "--canary-slots 2: the run in" in capsys.readouterr().err
    assert "calibrated" in text and "the audit's statistic: calibrated exposure (calibration against the run's" \
        in text
    with open(os.path.join(warm, "audit.json"), encoding="utf-8") as f:
        report = json.load(f)
    assert report["statistic"] == "calibrated_exposure" and set(report["by_statistic"]) == {
        "exposure", "calibrated_exposure"}
    assert report["power"] == report["by_statistic"]["calibrated_exposure"]["power"]
    # The reference is the model the run started from: with the base's vocabulary, the base itself.
    from keyboard_lm.privacy import audit as au
    from keyboard_lm.privacy import exposure

    placements, controls = au.load_canaries(warm)
    under_base = exposure.audit_run(base, placements, controls=controls)
    assert [r["reference_log_perplexity"] for r in report["rows"]] == pytest.approx(
        [r["log_perplexity"] for r in under_base], abs=1e-3)
    assert [r["log_perplexity"] for r in report["rows"]] != pytest.approx(
        [r["log_perplexity"] for r in under_base], abs=1e-3)
    # A control must be scored by the same statistic: one audited before calibration (or from random weights)
    # is refused, naming the command that measures it again.
    old = tmp_path / "old"
    old.mkdir()
    (old / "audit.json").write_text(json.dumps({**report, "rows": [
        {k: v for k, v in r.items() if k != "calibrated_exposure"} for r in report["rows"]]}), encoding="utf-8")
    assert main(["audit", "canaries", "--run", warm, "--control", str(old)]) == 2
    assert f"audit canaries --run {old}" in capsys.readouterr().err
    assert main(["audit", "canaries", "--run", warm, "--control", warm, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["control"]["power"] == report["power"]


def test_audit_canaries_refuses_bad_input(tmp_path, capsys):
    assert main(["audit", "canaries", *TINY]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["audit", "canaries", "--out", str(tmp_path / "a"), "--canary-repeats", "0,3"]) == 2
    assert "--canary-repeats" in capsys.readouterr().err
    assert main(["audit", "canaries", "--run", str(tmp_path)]) == 2
    assert "canaries.json" in capsys.readouterr().err
    plain = str(tmp_path / "plain")
    assert main(["train", "--out", plain, *TINY, "--rounds", "1", "--eval-every", "1"]) == 0
    assert main(["audit", "canaries", "--out", plain, "--resume", "--rounds", "2"]) == 2
    assert "records no canary settings" in capsys.readouterr().err
    assert main(["audit", "canaries", "--out", plain, "--resume", "--init-from", "base"]) == 2
    assert "--init-from do not apply" in capsys.readouterr().err


def test_adaptive_clip_is_recorded_every_round(tmp_path):
    out = str(tmp_path / "adaptive")
    assert main(["train", "--out", out, *TINY, "--rounds", "3", "--eval-every", "3", "--clients-per-round", "30",
                 "--dp", "fedavg", "--dp-noise-multiplier", "0", "--dp-clip-quantile", "0.5"]) == 0
    clips = [float(r["dp_clip"]) for r in _rows(out)]
    # TFF's adaptive clip starts at 0.1 and moves geometrically towards the median update norm.
    assert all(c > 0 for c in clips) and len(set(clips)) == 3
    dp = load_run(out).info["differential_privacy"]
    assert dp["clip"] == "adaptive" and dp["clip_quantile"] == 0.5 and dp["noise_batch_ratio"] is None

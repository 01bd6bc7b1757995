"""Hostile input and flags: one line naming what is wrong and where (file, line, flag) and exit code 2, or a
count of what was skipped; never a traceback, never a value accepted that breaks the run later.

Every case runs the real CLI in this process on tiny real files; each refusal comes before any model is built.
"""

from __future__ import annotations

import json

import pytest

from keyboard_lm.cli import build_parser, main
from keyboard_lm.cli.train_flags import FEDERATED_ONLY_FLAGS, TRAIN_FLAGS
from keyboard_lm.data.limits import MAX_ROUNDS, SEED_MAX

GOOD = [{"user": u, "text": t} for u, t in (("ann", "see you at the station tomorrow"),
                                            ("bob", "the train was late again today"),
                                            ("cy", "thanks for the lovely dinner"),
                                            ("dee", "are we still on for lunch"))]


def _jsonl(path, *bad_lines: str) -> str:
    """GOOD as JSONL, then ``bad_lines`` (written as given), one per line; returns the path."""
    lines = [json.dumps(r) for r in GOOD] + list(bad_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _no_data(tmp_path) -> list[str]:
    """A corpus that does not exist: a value that got past its check fails on the data instead (fast, and with
    another line than the one the test expects)."""
    return ["--data", str(tmp_path / "none.jsonl"), "--format", "jsonl"]


def _run(argv) -> int:
    """main(argv)'s exit code, argparse's refusals (SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---- JSONL records the parser cannot hold --------------------------------------------------------------

BAD_RECORDS = {
    "nested_100k_deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "number_of_5000_digits": ('{"user": ' + "9" * 5000 + ', "text": "hello there"}', "a number of 5,000 digits"),
    "lone_surrogate_escape": ('{"user": "eve", "text": "bad \\udc00 escape"}', "lone surrogate U+DC00"),
    "lone_surrogate_in_user": ('{"user": "\\ud800", "text": "fine text"}', "lone surrogate U+D800"),
}


@pytest.mark.parametrize("name", BAD_RECORDS)
def test_a_record_the_parser_cannot_hold_is_one_line_naming_file_and_line(tmp_path, capsys, name):
    line, words = BAD_RECORDS[name]
    path = _jsonl(tmp_path / "c.jsonl", line)
    assert _run(["data", "stats", "--data", path, "--format", "jsonl"]) == 2
    err = _one_line(capsys)
    assert f"{path}:5:" in err and words in err and "--skip-bad" in err


@pytest.mark.parametrize("name", BAD_RECORDS)
def test_with_skip_bad_such_a_record_is_skipped_and_reported(tmp_path, capsys, name):
    path = _jsonl(tmp_path / "c.jsonl", BAD_RECORDS[name][0])
    assert _run(["data", "stats", "--data", path, "--format", "jsonl", "--skip-bad", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["skipped_records"] == 1 and json.loads(out)["clients"] == 4  # stdout stays JSON
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keyboard-lm: --skip-bad: 1 of 5 records skipped in "
                                                   "jsonl:c.jsonl (1 ") and lines[0].endswith(f"): {path}:5")


@pytest.mark.heavy  # a federated train: imports TFF and checks the worker's isolation in a child process
def test_train_refuses_the_record_that_data_stats_refuses(tmp_path, capsys):
    """One policy for both commands: a lone surrogate is a bad record, named before any training starts."""
    path = _jsonl(tmp_path / "c.jsonl", BAD_RECORDS["lone_surrogate_escape"][0])
    out = tmp_path / "run"
    # (--clients-per-round above the clients: were the record read, the run would stop on that instead)
    assert _run(["train", "--out", str(out), "--data", path, "--format", "jsonl", "--rounds", "1",
                 "--clients-per-round", "1000"]) == 2
    err = _one_line(capsys)
    assert f"{path}:5: not valid Unicode" in err
    assert not out.exists()


# ---- mbox: message/rfc822 inside message/rfc822 ----------------------------------------------------------

def _nested_mbox(path, depth: int, multipart: bool) -> str:
    inner = "Content-Type: text/plain\n\nhello from the innermost part\n"
    for level in range(depth):
        if multipart:
            b = f"b{level}"
            inner = (f'Content-Type: multipart/mixed; boundary="{b}"\n\n--{b}\nContent-Type: message/rfc822\n\n'
                     f"{inner}\n--{b}--\n")
        else:
            inner = "Content-Type: message/rfc822\n\n" + inner
    deep = f"From eve@example.com Mon Aug 26 10:00:00 2002\nFrom: eve@example.com\nSubject: x\n{inner}\n"
    ok = "".join(f"From {u}@example.com Mon Aug 26 10:00:00 2002\nFrom: {u}@example.com\nSubject: y\n\n"
                 f"{u} wrote this message herself\n\n" for u in ("ann", "bob", "cy"))
    path.write_text(deep + ok, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("depth,multipart,words", [
    pytest.param(3000, False, "nested too deeply to parse", id="beyond_the_parsers_stack"),
    pytest.param(3000, True, "nested too deeply to parse", id="beyond_the_parsers_stack_in_multiparts"),
    pytest.param(200, False, "nested more than 50 deep", id="parsed_but_deeper_than_read"),
])
def test_deeply_nested_rfc822_parts_are_a_bad_record_not_a_crash(tmp_path, capsys, depth, multipart, words):
    path = _nested_mbox(tmp_path / "box.mbox", depth, multipart)
    assert _run(["data", "stats", "--data", path, "--format", "mbox"]) == 2
    err = _one_line(capsys)
    assert f"{path}: message 1: unreadable message" in err and words in err
    assert _run(["data", "stats", "--data", path, "--format", "mbox", "--skip-bad", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["skipped_by_reason"] == {"unreadable message": 1} and json.loads(out)["clients"] == 3
    assert f"{path}: message 1" in err and len(err.strip().splitlines()) == 1


# ---- --skip-bad reports its count, in every command that reads a corpus -----------------------------------

@pytest.mark.heavy  # a federated train: imports TFF and checks the worker's isolation in a child process
def test_skip_bad_in_train_reports_the_count_and_first_places(tmp_path, capsys):
    path = _jsonl(tmp_path / "c.jsonl", "garbage", '{"user": "x"}', "[1, 2]", '{"user": "y", "text": "  "}')
    # --clients-per-round above the clients stops the run right after the corpus is read: the report comes first
    code = _run(["train", "--out", str(tmp_path / "run"), "--data", path, "--format", "jsonl", "--skip-bad",
                 "--rounds", "1", "--clients-per-round", "1000"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2, lines
    assert lines[0] == (f"keyboard-lm: --skip-bad: 4 of 8 records skipped in jsonl:c.jsonl (1 not valid JSON, "
                        f"1 missing field, 1 not a JSON object, 1 empty text): {path}:5; {path}:6; {path}:7; ...")
    assert "--clients-per-round 1000" in lines[1]


def test_skip_bad_in_baseline_ngram_reports_the_count(tmp_path, capsys):
    path = _jsonl(tmp_path / "c.jsonl", "not json at all")
    assert _run(["baseline", "ngram", "--data", path, "--format", "jsonl", "--skip-bad", "--order", "2"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"keyboard-lm: --skip-bad: 1 of 5 records skipped in jsonl:c.jsonl (1 not valid JSON): {path}:5"]


# ---- train's numbers: finite, in range, refused before any model is built ---------------------------------

#: Every real-valued flag of train, with what it needs beside it to be read at all.
DP = ["--dp", "fedavg", "--dp-clip", "1", "--dp-noise-multiplier", "1"]
CEN = ["--centralized"]
FLOAT_FLAGS = {
    "--dropout": [], "--weight-average": [], "--validation-fraction": [], "--lr-decay": [],
    "--lr": CEN, "--clipnorm": CEN, "--weight-decay": CEN + ["--optimizer", "adamw"], "--weight-drop": CEN,
    "--ngram-teacher": CEN,
    "--server-lr": [], "--server-momentum": [], "--server-adam-epsilon": [], "--client-lr": [],
    "--client-clipnorm": [], "--client-momentum": [], "--clip": [], "--fedatt-p": ["--algorithm", "fedatt"],
    "--fedatt-eps": ["--algorithm", "fedatt"], "--server-noise": ["--server-optimizer", "sgd"],
    "--round-timeout": ["--workers", "127.0.0.1:1"], "--worker-grace": ["--workers", "127.0.0.1:1"],
    "--dp-noise-multiplier": DP, "--dp-epsilon": ["--dp", "fedavg", "--dp-clip", "1"], "--dp-clip": DP,
    "--dp-clip-quantile": ["--dp", "fedavg", "--dp-noise-multiplier", "1"], "--dp-delta": DP,
    "--heldout-fraction": [], "--checkpoint-seconds": [],
}


def test_the_float_flag_cases_cover_every_real_valued_flag_of_train():
    def real(flag) -> bool:
        try:
            return isinstance(flag.kwargs.get("type", str)("0.5"), float)
        except Exception:  # an int flag refuses "0.5"
            return False

    options = {f.option for f in TRAIN_FLAGS if real(f)} | {"--clip", "--heldout-fraction"}  # a norm; the split's
    assert options == set(FLOAT_FLAGS), options ^ set(FLOAT_FLAGS)


#: What names a flag in a config's message, besides the flag itself: its field.
NAMES = {f.option: set(f.fields.values()) for f in TRAIN_FLAGS}
NAMES["--heldout-fraction"] = {"heldout_fraction"}


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-1e300"])
@pytest.mark.parametrize("option", FLOAT_FLAGS)
def test_a_float_flag_out_of_range_is_one_line_naming_it(tmp_path, capsys, option, value):
    out = tmp_path / "run"
    code = _run(["train", "--out", str(out), *_no_data(tmp_path), *FLOAT_FLAGS[option], option, value])
    line = _one_line(capsys)
    assert code == 2 and any(f"{name} " in line or f"{name}:" in line for name in {option, *NAMES[option]}), line
    assert not out.exists()


def test_a_huge_but_finite_rate_is_refused_where_tff_would_have_crashed(tmp_path, capsys):
    assert _run(["train", "--out", str(tmp_path / "r"), *_no_data(tmp_path), "--client-lr", "1e300"]) == 2
    assert "argument --client-lr: must be > 0 and <= 1e+06, got 1e300" in _one_line(capsys)


@pytest.mark.parametrize("option", ["--seed", "--split-seed"])
@pytest.mark.parametrize("value", [str(SEED_MAX + 1), str(2**64), "-1"])
def test_a_seed_numpy_cannot_take_is_refused(tmp_path, capsys, option, value):
    assert _run(["train", "--out", str(tmp_path / "r"), *_no_data(tmp_path), option, value]) == 2
    assert f"argument {option}: must be a whole number in [0, 2**32 - 1]" in _one_line(capsys)


def test_the_largest_seed_is_usable_everywhere_a_seed_goes(default_corpus):
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
    from keyboard_lm.federated.config import FederatedConfig
    from keyboard_lm.training.config import CentralizedConfig

    for config in (FederatedConfig, CentralizedConfig, SplitConfig, ClientDataConfig):
        assert config(seed=SEED_MAX).seed == SEED_MAX
    train, _ = split_clients(default_corpus.client_ids, SplitConfig(seed=SEED_MAX))
    fit, validation = validation_clients(train, 0.1, seed=SEED_MAX)  # seed + 7919 wraps into numpy's range
    assert sorted(fit + validation) == train


def test_a_round_count_no_run_could_finish_is_refused(tmp_path, capsys):
    assert _run(["train", "--out", str(tmp_path / "r"), *_no_data(tmp_path), "--rounds", str(MAX_ROUNDS + 1)]) == 2
    assert f"argument --rounds: must be >= 1 and <= {MAX_ROUNDS:,}" in _one_line(capsys)


# ---- --centralized refuses what only a federated run reads -----------------------------------------------

@pytest.mark.parametrize("flags", [["--rounds", "5"], ["--clients-per-round", "3"], ["--rounds", "5",
                                   "--clients-per-round", "3"], ["--local-epochs", "2"], ["--eval-every", "1"],
                                   ["--client-lr", "0.1"], ["--compression"], ["--dp-clip", "1"]],
                         ids=lambda f: "_".join(a.strip("-") for a in f if a.startswith("--")))
def test_centralized_refuses_federated_only_flags(tmp_path, capsys, flags):
    out = tmp_path / "run"
    assert _run(["train", "--centralized", "--out", str(out), *_no_data(tmp_path), *flags]) == 2
    line = _one_line(capsys)
    named, reason = line.removeprefix("keyboard-lm: error: ").split(": ", 1)
    assert reason == "federated training only, not --centralized", line
    assert set(named.split(", ")) == {f for f in flags if f.startswith("--")}, line
    assert not out.exists()


def _sample(flag) -> list[str]:
    """``flag`` on a command line with a value its parser accepts."""
    kw = flag.kwargs
    if kw.get("action") == "store_true":
        return [flag.option]
    if kw.get("choices"):
        return [flag.option, list(kw["choices"])[0]]
    return [flag.option, {"--dp-tree-restart": "epoch", "--clip": "1"}.get(flag.option, "1")]


def test_every_federated_only_flag_is_refused_with_centralized(tmp_path, capsys):
    assert "--resume" not in {f.option for f in FEDERATED_ONLY_FLAGS}  # both trainers resume
    assert {"--rounds", "--clients-per-round", "--dp"} <= {f.option for f in FEDERATED_ONLY_FLAGS}
    assert {f.option for f in FEDERATED_ONLY_FLAGS}.isdisjoint(
        f.option for f in TRAIN_FLAGS if "centralized" in f.option or f.option in ("--seed", "--out", "--lr"))
    for flag in FEDERATED_ONLY_FLAGS:
        argv = ["train", "--centralized", "--out", str(tmp_path / "r"), *_no_data(tmp_path), *_sample(flag)]
        assert _run(argv) == 2, flag.option
        line = _one_line(capsys)  # this refusal, or an earlier one that names the flag (--tls-ca needs --workers)
        assert f"{flag.option}: federated training only" in line or f"{flag.option}" in line.split(";")[0], line
    assert not (tmp_path / "r").exists()


# ---- ports and host names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("port", ["70000", "65536", "0", "-1"])
def test_worker_port_out_of_range_is_refused_before_anything_starts(capsys, port):
    with pytest.raises(SystemExit) as refused:  # the parser refuses it: no worker is started
        build_parser().parse_args(["worker", "--port", port])
    assert refused.value.code == 2
    assert "argument --port: must be a TCP port in [1, 65535]" in _one_line(capsys)


def test_worker_ports_at_the_ends_of_the_range_parse():
    assert build_parser().parse_args(["worker", "--port", "65535"]).port == 65535
    assert build_parser().parse_args(["worker", "--port", "1"]).port == 1


def test_train_workers_with_a_port_out_of_range_is_refused(tmp_path, capsys):
    assert _run(["train", "--out", str(tmp_path / "r"), "--workers", "127.0.0.1:70000", "--rounds", "1"]) == 2
    assert "--workers: '127.0.0.1:70000' is not host:port" in _one_line(capsys)


@pytest.mark.parametrize("host,words", [("hé.example", "give its IDNA form, xn--h-bga.example"),
                                        ("bad..name", "not a host name or IP address"),
                                        ("a b", "not a host name or IP address")])
def test_tls_init_refuses_a_host_a_certificate_cannot_name(tmp_path, capsys, host, words):
    out = tmp_path / "tls"
    assert _run(["worker", "--tls-init", str(out), "--tls-host", host]) == 2
    line = _one_line(capsys)
    assert f"--tls-host {host!r}: " in line and words in line
    assert not out.exists()


# ---- privacy plan beyond what the accountant resolves ------------------------------------------------------

PLAN = ["privacy", "plan", "--delta", "1e-5", "--population", "1000", "--max-clients-per-round", "100"]


@pytest.mark.parametrize("argv,words", [
    pytest.param(["--epsilon", "1", "--rounds", str(10**12)], "argument --rounds: must be >= 1 and <= 100,000",
                 id="huge_rounds"),
    pytest.param(["--epsilon", "1e308", "--rounds", "100"], "--epsilon must be a finite number > 0 and <= 100",
                 id="epsilon_1e308"),
    pytest.param(["--epsilon", "1e308", "--rounds", "100", "--mechanism", "ftrl"],
                 "--epsilon must be a finite number > 0 and <= 100", id="epsilon_1e308_ftrl"),
])
def test_privacy_plan_out_of_range_is_one_line(capsys, argv, words):
    assert _run([*PLAN, *argv]) == 2
    assert words in _one_line(capsys)


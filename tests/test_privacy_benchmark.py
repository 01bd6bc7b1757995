"""benchmarks/privacy/privacy_benchmark.py's row commands: the audit's regime, the vocabulary, and --resume."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "privacy"))
import privacy_benchmark as pb  # noqa: E402

pytestmark = pytest.mark.bench


def _args(tmp_path, **changes):
    return SimpleNamespace(**{"out": str(tmp_path), "resume": False, "rows": "base", "data": "input.txt",
                              "rounds": 320, "clients_per_round": 20, "vocab": "target", "canaries": None,
                              "canary_repeats": None, "controls": None, "canary_words": None,
                              "canary_slots": None, "canary_clients": None, "canary_seed": None,
                              **changes})


def _flag(cmd, flag):
    return cmd[cmd.index(flag) + 1]


def test_a_base_row_takes_the_regime_and_the_vocabulary_given(tmp_path):
    name, model, extra = next(r for r in pb.BASE_ROWS if r[0] == "base_ftrl_inf")
    cmd = pb.row_command(_args(tmp_path), name, model, extra)
    assert [_flag(cmd, f) for f in ("--canaries", "--canary-repeats", "--controls", "--init-vocab")] == [
        "20", "16", "20", "target"]
    assert (_flag(cmd, "--rounds"), _flag(cmd, "--clients-per-round"), _flag(cmd, "--eval-every")) == (
        "320", "20", "160")
    cmd = pb.row_command(_args(tmp_path, canary_repeats=64, controls=40, vocab="base"), name, model, extra)
    assert [_flag(cmd, f) for f in ("--canaries", "--canary-repeats", "--controls", "--init-vocab")] == [
        "20", "64", "40", "base"]
    assert extra.count("--canary-repeats") == 1 and _flag(extra, "--canary-repeats") == "16"  # BASE unchanged
    assert "--canary-words" not in cmd  # audit canaries' own default format
    cmd = pb.row_command(_args(tmp_path, canary_words="a,b,c", canary_slots=3), name, model, extra)
    assert (_flag(cmd, "--canary-words"), _flag(cmd, "--canary-slots")) == ("a,b,c", "3")
    assert "--canary-words" not in extra and "--canary-clients" not in cmd  # one client per canary by default
    cmd = pb.row_command(_args(tmp_path, canary_clients=8, canary_seed=2), name, model, extra)
    assert (_flag(cmd, "--canary-clients"), _flag(cmd, "--canary-seed")) == ("8", "2")


def test_resume_skips_finished_rows_and_continues_interrupted_ones(tmp_path):
    name, model, extra = next(r for r in pb.BASE_ROWS if r[0] == "base_ftrl_eps10")
    args = _args(tmp_path, resume=True)
    assert "--overwrite" in pb.row_command(args, name, model, extra)  # never started: a fresh run
    (tmp_path / name / "checkpoints").mkdir(parents=True)
    assert pb.row_command(args, name, model, extra)[-5:] == ["audit", "canaries", "--out", str(tmp_path / name),
                                                             "--resume"]
    (tmp_path / name / "audit.json").write_text("{}")
    assert pb.row_command(args, name, model, extra) is None
    assert "--overwrite" in pb.row_command(_args(tmp_path), name, model, extra)  # without --resume: anew


def test_the_positive_control_differs_from_the_noiseless_row_only_in_its_clip(tmp_path):
    rows = {r[0]: r for r in pb.BASE_ROWS}
    _, _, clipped = rows["base_ftrl_inf"]
    _, _, unclipped = rows["base_ftrl_unclipped"]
    assert _flag(clipped, "--dp-clip") == "0.1" and float(_flag(unclipped, "--dp-clip")) >= 1000
    without_clip = lambda extra: [a for i, a in enumerate(extra) if "--dp-clip" not in extra[max(0, i - 1):i + 1]]  # noqa: E731
    assert without_clip(clipped) == without_clip(unclipped)
    assert _flag(unclipped, "--dp-noise-multiplier") == "0"

"""benchmarks/speed/pretrain_speed.py runs every kind of variant side by side (the padded loop, the unrolled
loop that needs a fixed width, length-grouped and packed batches) and writes its page."""

import json

import pytest

from benchmarks.speed import pretrain_speed


def test_each_recurrence_and_batching_trains_and_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(pretrain_speed, "RESULTS", str(tmp_path))
    variants = "sampled64:16,sampled64:16:unroll,sampled64:16:length,sampled64:16:packed"
    assert pretrain_speed.main(["--variants", variants, "--seconds", "1.5", "--rounds", "1", "--peak-seconds",
                                "0.1", "--warmup", "1", "--examples", "300", "--texts", "200", "--vocab-size",
                                "300", "--name", "speed"]) == 0
    with open(tmp_path / "speed.json", encoding="utf-8") as f:
        result = json.load(f)
    rows = {r["variant"]: r for r in result["rows"]}
    assert set(rows) == set(variants.split(","))
    assert rows["sampled64:16:unroll"]["recurrence"] == "unrolled"
    assert all(r["tokens_per_second"] > 0 for r in rows.values())
    assert rows["sampled64:16:packed"]["batching"] == "packed" and rows["sampled64:16:packed"]["pad_share"] < 0.2
    assert "| sampled64:16:length |" in (tmp_path / "speed.md").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")

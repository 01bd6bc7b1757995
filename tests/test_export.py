"""The exporter: builtin ops only, self-contained file, budget, fidelity, bad input."""

import json
import os
import shutil
import zipfile

import numpy as np
import pytest

from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES
from keyboard_lm.export.compaction import compact
from keyboard_lm.export.tflite_export import convert, export_run
from keyboard_lm.cli import main
from keyboard_lm.errors import ConfigError
from keyboard_lm.evaluation import evaluate_model, evaluate_predict_fn, log_softmax
from keyboard_lm.inference.model_file import ModelFile
from keyboard_lm.models.run_dir import build_loaded_model, load_run
from tests.conftest import GOLDEN_MODELS, archive_start, compacted_copy, paper_size_run

BUILTIN_OK = {"GATHER", "DEQUANTIZE", "CONCATENATION", "FULLY_CONNECTED", "SPLIT", "SPLIT_V", "LOGISTIC", "MUL",
              "SUB", "ADD", "TANH", "LOG_SOFTMAX", "TOPK_V2", "STRIDED_SLICE", "RELU", "REDUCE_MAX", "ABS",
              "GREATER", "SELECT_V2", "SELECT", "DIV", "ONES_LIKE", "FILL", "SHAPE", "BATCH_MATMUL", "MAXIMUM"}


def _ops(flatbuffer):
    import tensorflow as tf
    import io
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        tf.lite.experimental.Analyzer.analyze(model_content=flatbuffer)
    return {line.split()[1].split("(")[0] for line in buf.getvalue().splitlines() if line.strip().startswith("Op#")}


def _weight_types(flatbuffer):
    """dtype of every constant weight matrix (>= 1024 elements) in the file."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    return {names[t.type] for sg in model.subgraphs for t in sg.tensors
            if t.buffer and model.buffers[t.buffer].data is not None and len(t.shape) == 2
            and t.shape[0] * t.shape[1] >= 1024}


GOLDEN = sorted(GOLDEN_MODELS.glob("*.tflite"))


def _layout(flatbuffer):
    """(names of tensors that are not a subgraph's or signature's input or output, computed tensors whose
    buffer is not 0, buffers no tensor or metadata uses) of a flatbuffer."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    io = {(sd.subgraphIndex, t.tensorIndex) for sd in model.signatureDefs for t in list(sd.inputs) + list(sd.outputs)}
    io |= {(g, int(t)) for g, sg in enumerate(model.subgraphs) for t in list(sg.inputs) + list(sg.outputs)}
    empty = {i for i, b in enumerate(model.buffers) if b.data is None or len(b.data) == 0}
    names = [t.name for g, sg in enumerate(model.subgraphs) for i, t in enumerate(sg.tensors)
             if (g, i) not in io and t.name]
    own_empty = [t.buffer for sg in model.subgraphs for t in sg.tensors if t.buffer in empty and t.buffer != 0]
    used = {t.buffer for sg in model.subgraphs for t in sg.tensors} | {m.buffer for m in model.metadata or []}
    return names, own_empty, sorted(set(range(1, len(model.buffers))) - used)


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.stem)
def test_compaction_drops_names_and_empty_buffers_and_keeps_every_number(golden, tmp_path):
    """The committed golden files were exported before compaction: compacted, each loads through the
    structural check and computes bit for bit what it did, in both runtimes."""
    flatbuffer = golden.read_bytes()[:archive_start(golden)]
    names, own_empty, _ = _layout(flatbuffer)
    assert names and own_empty  # the converter's layout, which compaction is for
    path = compacted_copy(golden, tmp_path / golden.name)
    data = path.read_bytes()
    small = data[:archive_start(path)]
    assert _layout(small) == ([], [], [])
    assert len(small) < len(flatbuffer) - 1000 and len(data) == len(golden.read_bytes()) - (len(flatbuffer) - len(small))
    assert compact(small) == small
    rng = np.random.default_rng(0)
    for runtime in ("tflite-runtime", "ai-edge-litert"):
        old, new = ModelFile.load(str(golden), runtime=runtime), ModelFile.load(str(path), runtime=runtime)
        assert new.vocab.tokens == old.vocab.tokens
        s_old, s_new = old.initial_state(), new.initial_state()
        for token in rng.integers(4, len(old.vocab), 40):
            (lp_old, s_old), (lp_new, s_new) = old.step_full(int(token), s_old), new.step_full(int(token), s_new)
            np.testing.assert_array_equal(lp_new, lp_old)
            np.testing.assert_array_equal(s_new, s_old)
            for a, b in zip(new.step(int(token), s_new), old.step(int(token), s_old)):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("model_type,trained,mode", [
    ("cifg", "none", "dynamic-range"), ("si-cifg", "none", "dynamic-range"), ("gru", "none", "dynamic-range"),
    ("cifg", "none", "weight-only"), ("gru", "none", "weight-only"),
    ("cifg", "dynamic-range", "dynamic-range"), ("si-cifg", "dynamic-range", "dynamic-range"),
    ("gru", "dynamic-range", "dynamic-range"), ("cifg", "weight-only", "weight-only"),
    ("cifg", "dynamic-range", "weight-only")])
def test_step_uses_builtin_ops_only_and_no_loop(tmp_path, model_type, trained, mode):
    run = load_run(paper_size_run(tmp_path, model_type, vocab_words=200, quantization=trained))
    flatbuffer, _, quant = convert(run, quantization=mode)
    ops = _ops(flatbuffer)
    assert "WHILE" not in ops and not any(op.startswith("FLEX") or op == "CUSTOM" for op in ops)
    assert ops <= BUILTIN_OK, ops - BUILTIN_OK
    # Training-time roundings are not in the file: weight rounding is constant-folded, input
    # rounding is what the hybrid kernels do themselves.
    assert not ops & {"ROUND", "FLOOR", "SIGN", "CAST", "MINIMUM", "REDUCE_MIN"}
    assert _weight_types(flatbuffer) == {"INT8"}  # every weight matrix is stored as int8
    assert _layout(flatbuffer) == ([], [], [])  # compacted: no names or empty buffers beyond what readers use
    if mode == "weight-only":
        assert "DEQUANTIZE" in ops
    assert quant["mode"] == mode and quant["trained_for"] == trained
    assert quant["exact"] == (trained == mode)
    assert 0 <= quant["max_rounding_error_steps"] <= 0.5 + 1e-6
    assert (quant["max_rounding_error_steps"] == 0) == (trained != "none")


def test_paper_size_cifg_fits_the_budget_with_its_vocabulary(tmp_path):
    run_dir = paper_size_run(tmp_path)
    out = str(tmp_path / "cifg.tflite")
    card = export_run(run_dir, out)
    size = os.path.getsize(out)
    assert size == card["size_bytes"] <= DEFAULT_BUDGET_BYTES
    assert 1_400_000 < size  # 1.41M int8 weights plus vocabulary: not float32 (5.6 MB)
    b = card["size_breakdown"]
    assert b["embedding"] == 960_000 and b["recurrent_cell"] == 387_930 and b["projection"] == 64_320
    assert card["quantization"]["mode"] == "dynamic-range" and not card["quantization"]["exact"]
    with open(out + ".card.json", encoding="utf-8") as f:
        assert json.load(f)["sha256"] == card["sha256"]


def test_over_budget_names_a_vocabulary_that_fits_and_export_keeps_it(tmp_path, capsys):
    run_dir = paper_size_run(tmp_path)
    full = str(tmp_path / "full.tflite")
    size = export_run(run_dir, full, budget_bytes=None)["size_bytes"]
    budget = size - 3000  # 3,000 bytes over: 32 rows of 96 int8 weights, and the alignment's slack
    out = str(tmp_path / "fits.tflite")
    assert main(["export", run_dir, "--out", out, "--budget-bytes", str(budget)]) == 2
    err = capsys.readouterr().err
    assert "over the budget" in err and not os.path.exists(out)
    fits = int(err.split("--vocab-size ")[1].split()[0])
    assert 10_000 - 40 < fits < 10_000 - 30
    assert main(["export", run_dir, "--out", out, "--budget-bytes", str(budget), "--vocab-size", str(fits)]) == 0
    printed = capsys.readouterr().out
    assert f"the {fits:,} most frequent of the run's 10,000 words; the {10_000 - fits} rarest are <oov>" in printed
    assert os.path.getsize(out) <= budget
    with open(out + ".card.json", encoding="utf-8") as f:
        card = json.load(f)
    assert card["vocabulary"] == {"run": 10_000, "kept": fits} and card["model"]["vocab_size"] == fits
    run = load_run(run_dir)
    assert ModelFile.load(out).vocab.tokens == run.vocab.tokens[:fits]  # the most frequent, in their order


@pytest.mark.parametrize("size", ["4", "10001"])
def test_vocab_size_outside_the_run_fails_in_one_line(tmp_path, capsys, size):
    run_dir = paper_size_run(tmp_path, vocab_words=96)
    out = str(tmp_path / "m.tflite")
    assert main(["export", run_dir, "--out", out, "--vocab-size", size]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--vocab-size {size}: the run has 100 words, 4 of them special" in err
    assert not os.path.exists(out)


def test_over_budget_fails_with_breakdown_and_writes_nothing(tmp_path, capsys):
    run_dir = paper_size_run(tmp_path, vocab_words=300)
    out = str(tmp_path / "small.tflite")
    assert main(["export", run_dir, "--out", out, "--budget-bytes", "100000"]) == 2
    err = capsys.readouterr().err
    assert "over the budget of 100,000 bytes" in err and "embedding" in err and "recurrent_cell" in err
    assert not os.path.exists(out) and not os.path.exists(out + ".card.json")
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp")] == []


def test_file_is_self_contained(small_run, small_tflite):
    run = load_run(small_run)
    with zipfile.ZipFile(small_tflite) as z:
        meta = json.loads(z.read("keyboard_lm.json"))
        assert z.read("vocab.txt").decode() == run.vocab.to_text()
    assert meta["model"] == run.model_config.to_dict()
    assert meta["special_tokens"]["oov"] == ["<oov>", 3] and meta["text_spec"] == "kblm-text-1"
    model = ModelFile.load(small_tflite)
    assert model.vocab.tokens == run.vocab.tokens


@pytest.mark.parametrize("runtime", ["tflite-runtime", "ai-edge-litert"])
def test_exported_step_matches_float_model(small_run, small_tflite, runtime):
    run = load_run(small_run)
    keras_model = build_loaded_model(run)
    model = ModelFile.load(small_tflite, runtime=runtime)
    x = np.array([[1, 10, 25, 7, 99, 3, 40]], np.int32)
    float_logp = log_softmax(keras_model(x))[0]
    tfl = model.predict_log_probs(x)[0]
    assert np.abs(np.exp(tfl) - np.exp(float_logp)).max() < 0.02
    state = model.initial_state()
    for t in range(x.shape[1]):
        ids, logps, state = model.step(int(x[0, t]), state)
        assert set(ids.tolist()).isdisjoint({0, 1, 2, 3})
        np.testing.assert_allclose(logps, np.sort(tfl[t][4:])[::-1][:3], rtol=1e-4, atol=1e-5)


def test_exported_model_keeps_recall_within_half_a_point(small_run, small_tflite, default_corpus):
    from keyboard_lm.data.split import SplitConfig, split_clients

    run = load_run(small_run)
    heldout = split_clients(default_corpus.client_ids, SplitConfig(**run.info["data"]["split"]))[1]
    float_r = evaluate_model(build_loaded_model(run), default_corpus, heldout, run.vocab)["pooled"]
    model = ModelFile.load(small_tflite)
    tfl_r = evaluate_predict_fn(model.predict_log_probs, default_corpus, heldout, model.vocab, batch_size=32)["pooled"]
    assert abs(float_r["recall_at_3"] - tfl_r["recall_at_3"]) <= 0.005 + 1e-9
    assert abs(float_r["perplexity"] - tfl_r["perplexity"]) / float_r["perplexity"] < 0.02


def _top3_agreement(run_dir, model_file, corpus):
    """Share of held-out steps whose top-3 words (in order) are the same in Keras and TFLite."""
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.data.split import SplitConfig, split_clients

    run = load_run(run_dir)
    heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))[1]
    xs = np.array([x for x, _ in corpus_examples(corpus.sentences(heldout), run.vocab, 20)], np.int32)
    keras_logits = np.asarray(build_loaded_model(run)(xs))
    tfl = model_file.predict_log_probs(xs)
    top = [np.argsort(-a[..., 4:], -1, kind="stable")[..., :3] for a in (keras_logits, tfl)]
    real = xs != 0
    return float(((top[0] == top[1]).all(-1) & real).sum() / real.sum()), int(real.sum())


@pytest.mark.parametrize("mode", ["dynamic-range", "weight-only"])
def test_quantization_aware_run_exports_exactly(small_qat_run, mode, tmp_path, default_corpus, capsys):
    run_dir = small_qat_run(mode)
    out = str(tmp_path / "qat.tflite")
    assert main(["export", run_dir, "--out", out]) == 0  # auto: the mode the run was trained for
    assert "computes exactly what was evaluated" in capsys.readouterr().out
    card = json.load(open(out + ".card.json", encoding="utf-8"))
    assert card["quantization"]["mode"] == mode and card["quantization"]["exact"]
    model = ModelFile.load(out)
    x = np.array([[1, 10, 25, 7, 99, 3, 40]], np.int32)
    logp = log_softmax(build_loaded_model(load_run(run_dir))(x))[0]
    np.testing.assert_allclose(model.predict_log_probs(x)[0], logp, atol=1e-4)
    agreement, steps = _top3_agreement(run_dir, model, default_corpus)
    assert steps > 2000 and agreement >= 0.99, agreement


def test_exporting_in_another_mode_than_trained_is_flagged(small_qat_run, tmp_path, capsys):
    out = str(tmp_path / "other.tflite")
    assert main(["export", small_qat_run("dynamic-range"), "--out", out, "--quantization", "weight-only"]) == 0
    assert "trained for 'dynamic-range'" in capsys.readouterr().out
    assert not json.load(open(out + ".card.json", encoding="utf-8"))["quantization"]["exact"]


def test_export_modes_store_one_byte_per_weight_or_four_for_float(small_run, tmp_path):
    cards = {mode: export_run(small_run, str(tmp_path / f"{mode}.tflite"), budget_bytes=None, quantization=mode)
             for mode in ("dynamic-range", "weight-only", "none")}
    assert abs(cards["dynamic-range"]["size_bytes"] - cards["weight-only"]["size_bytes"]) < 2_000
    assert cards["none"]["size_bytes"] > 3 * cards["weight-only"]["size_bytes"] - 20_000
    assert cards["none"]["size_breakdown"]["embedding"] == 4 * cards["weight-only"]["size_breakdown"]["embedding"]
    x = np.array([[1, 10, 25, 7]], np.int32)
    ref = ModelFile.load(str(tmp_path / "none.tflite")).predict_log_probs(x)
    for mode in ("dynamic-range", "weight-only"):
        assert np.abs(np.exp(ModelFile.load(str(tmp_path / f"{mode}.tflite")).predict_log_probs(x)) - np.exp(ref)).max() < 0.05


def test_unknown_quantization_is_rejected(small_run, tmp_path):
    with pytest.raises(ConfigError, match="unknown quantization 'int4'"):
        export_run(small_run, str(tmp_path / "x.tflite"), quantization="int4")
    assert not os.path.exists(tmp_path / "x.tflite")


def test_eval_cli_accepts_a_tflite_file(small_tflite, capsys):
    assert main(["eval", small_tflite, "--json"]) == 0
    pooled = json.loads(capsys.readouterr().out)["pooled"]
    assert 0 < pooled["recall_at_3"] < 1


@pytest.mark.parametrize("damage,match", [
    ("missing", "not a run directory"),
    ("weights", "corrupt"),
    ("model_type", "unknown model type"),
    ("vocab", "does not match the vocabulary"),
])
def test_bad_checkpoint_leaves_no_partial_file(small_run, tmp_path, damage, match):
    bad = str(tmp_path / "bad")
    out = str(tmp_path / "out.tflite")
    if damage != "missing":
        shutil.copytree(small_run, bad)
    if damage == "weights":
        with open(os.path.join(bad, "weights.npz"), "wb") as f:
            f.write(b"\x00" * 100)
    elif damage == "model_type":
        path = os.path.join(bad, "run.json")
        doc = json.load(open(path, encoding="utf-8"))
        doc["model"]["model_type"] = "transformer"
        json.dump(doc, open(path, "w", encoding="utf-8"))
    elif damage == "vocab":
        with open(os.path.join(bad, "vocab.txt"), "a", encoding="utf-8") as f:
            f.write("zzz\n")
    with pytest.raises(ConfigError, match=match):
        export_run(bad, out)
    assert not os.path.exists(out)


def test_card_describes_the_run_as_its_run_json_says(small_run):
    """The card's training, privacy and evaluation fields are run.json's (read through RunRecord); the
    corpus path is its file name alone."""
    from keyboard_lm.export.budget import SizeBreakdown
    from keyboard_lm.export.tflite_export import model_card
    from keyboard_lm.models.run_dir import load_run

    with open(os.path.join(small_run, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    card = model_card(load_run(small_run), SizeBreakdown(1, 2, 3, 4, 5, 15), "ab" * 32, "out/m.tflite", {})
    t = card["training"]
    assert (t["trainer"], t["init_from"], t["federated"], t["rounds"], t["epochs"], t["hyperparameters"]) == (
        info.get("trainer"), info.get("init_from"), info.get("federated"), info.get("rounds_done"),
        info.get("epochs_done"), info.get("hyperparameters"))
    assert t["algorithm"] == (info["federated"]["algorithm"] if info.get("federated") else "centralized")
    assert card["differential_privacy"] == info.get("differential_privacy")
    assert card["evaluation_float_model"] == info["final_metrics"] and card["model_file"] == "m.tflite"
    source = info["data"]["source"]
    assert card["data"]["source"].get("path") == (os.path.basename(source["path"]) if source.get("path") else None)

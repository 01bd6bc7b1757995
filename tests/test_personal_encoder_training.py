"""Training the char encoder in context against a run, and shipping it .

Unit tests on a synthetic frozen "model" (a random tied table and outputs that
point at their targets) check the losses, the held-out discipline, the kept
epoch and every metric against a brute-force computation; the rest run the real
pipeline on the tiny trained run of conftest.py.
"""
import hashlib
import io
import json
import os
import zipfile

import numpy as np
import pytest

from keyboard_lm.errors import ConfigError
from keyboard_lm.export.char_encoder_export import RESERVED_KEYS, char_encoder_bytes
from keyboard_lm.inference.personal_words import CharEncoderFile
from keyboard_lm.text.spelling import encode_spellings
from keyboard_lm.char_encoder.fit import fit_char_encoder, train_char_encoder
from keyboard_lm.char_encoder.model import N_SPECIAL, CharEncoderConfig, ContextExamples, build_char_encoder
from keyboard_lm.char_encoder.training import (
    build_char_encoder_file, model_contexts, run_training_clients)

TINY = CharEncoderConfig(byte_dim=8, channels=16, kernel=3, max_bytes=10, embedding_dim=8)


def synthetic(seed=0, n_words=60, n_positions=1500):
    """Words, a [V, 8] table and outputs h = 2 E[target] + noise (the model predicts well)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = sorted({"".join(rng.choice(letters, rng.integers(3, 8))) for _ in range(3 * n_words)})[:n_words]
    table = (0.5 * rng.standard_normal((N_SPECIAL + n_words, 8))).astype(np.float32)
    ids = np.arange(N_SPECIAL, N_SPECIAL + n_words)
    p = 1.0 / np.arange(1, n_words + 1)  # Zipf-like next words, with some special-token targets mixed in
    targets = rng.choice(ids, n_positions, p=p / p.sum())
    targets[rng.random(n_positions) < 0.05] = 2  # eos
    h = (2.0 * table[targets] + 0.3 * rng.standard_normal((n_positions, 8))).astype(np.float32)
    return words, ids, ContextExamples(table, h, targets)


def logsumexp(z):
    top = z.max()
    return top + np.log(np.exp(z - top).sum())


def brute_force(fit, words, ids, ctx):
    """Held-out in-context CE and recall@3 (target column replaced), and the joint ones (all held-out replaced)."""
    enc = fit.encoder.predict(encode_spellings(words, TINY.max_bytes), verbose=0)
    held = fit.heldout_index
    held_ids = ids[held]
    emb_of = {int(ids[i]): enc[i] for i in range(len(words))}
    ce, hit, jce, jhit = [], [], [], []
    for h, t in zip(ctx.outputs, ctx.targets):
        if t < N_SPECIAL:
            continue
        z = ctx.table @ h
        joint = z.copy()
        joint[held_ids] = enc[held] @ h
        jce.append(logsumexp(joint) - joint[t])
        jhit.append((joint[N_SPECIAL:] > joint[t]).sum() < 3)
        if t in held_ids:
            z[t] = emb_of[int(t)] @ h
            ce.append(logsumexp(z) - z[t])
            hit.append((z[N_SPECIAL:] > z[t]).sum() < 3)
    return {"heldout_context_ce": np.mean(ce), "heldout_recall_at_3": np.mean(hit),
            "heldout_joint_ce": np.mean(jce), "heldout_joint_recall_at_3": np.mean(jhit)}


@pytest.mark.parametrize("context_loss", ["shared", "target"])
def test_in_context_loss_decreases_and_metrics_match_brute_force(context_loss):
    words, ids, ctx = synthetic()
    fit = fit_char_encoder(words, ctx.table[ids], word_ids=ids, contexts=ctx, config=TINY, epochs=4,
                           context_batch_size=128, learning_rate=0.01, context_loss=context_loss,
                           heldout_fraction=0.2, select_by="last", seed=0)
    ce = [row["train_context_ce"] for row in fit.history[1:]]
    assert ce[-1] < 0.8 * ce[0], ce
    assert fit.best_epoch == 4 and fit.settings["skipped_positions"] == int((ctx.targets < N_SPECIAL).sum()) > 0
    want = brute_force(fit, words, ids, ctx)
    for key, value in want.items():
        assert fit.metrics[key] == pytest.approx(value, rel=1e-4, abs=1e-4), key
    # the true rows' values are the model's own: the same brute force with the encoder replaced by E
    assert 0 <= fit.metrics["heldout_recall_at_3_true_row"] <= 1
    assert fit.metrics["heldout_joint_recall_at_3_removed"] <= fit.metrics["heldout_joint_recall_at_3_true_row"]


@pytest.mark.parametrize("context_loss", ["shared", "target"])
def test_heldout_words_are_never_trained_on(context_loss):
    """Changing everything about the held-out words (spelling, MSE row, their contexts) leaves training bit-equal."""
    words, ids, ctx = synthetic()
    kwargs = dict(word_ids=ids, config=TINY, epochs=1, context_batch_size=128, context_loss=context_loss,
                  heldout_fraction=0.2, seed=3)
    first = fit_char_encoder(words, ctx.table[ids], contexts=ctx, **kwargs)
    held = first.heldout_index
    assert len(held) == 12 and not set(held) & set(first.train_index)

    rng = np.random.default_rng(9)
    words2 = list(words)
    for i in held:
        words2[i] = "zq" + words[i][:6]
    rows2 = ctx.table[ids].copy()
    rows2[held] = rng.standard_normal((len(held), 8))
    h2 = ctx.outputs.copy()
    at_held = np.isin(ctx.targets, ids[held])
    assert at_held.sum() > 20
    h2[at_held] = rng.standard_normal((at_held.sum(), 8))
    second = fit_char_encoder(words2, rows2, contexts=ContextExamples(ctx.table, h2, ctx.targets), **kwargs)
    assert list(second.heldout_index) == list(held)
    for a, b in zip(first.encoder.get_weights(), second.encoder.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert first.history[1]["train_loss"] == second.history[1]["train_loss"]
    assert first.metrics["heldout_context_ce"] != second.metrics["heldout_context_ce"]  # the change was seen

    # the control: one training word's spelling changed does change the weights
    words3 = list(words)
    j = int(first.train_index[0])
    words3[j] = "zq" + words[j][:6]
    third = fit_char_encoder(words3, ctx.table[ids], contexts=ctx, **kwargs)
    assert any(not np.array_equal(a, b) for a, b in zip(first.encoder.get_weights(), third.encoder.get_weights()))


def test_best_epoch_by_heldout_cross_entropy_is_restored():
    words, ids, ctx = synthetic(seed=1)
    fit = fit_char_encoder(words, ctx.table[ids], word_ids=ids, contexts=ctx, config=TINY, epochs=5,
                           context_batch_size=64, learning_rate=0.05, context_loss="target", heldout_fraction=0.2,
                           select_by="context", seed=0)
    scores = [row["heldout_context_ce"] for row in fit.history[1:]]
    assert fit.best_epoch == 1 + int(np.argmin(scores))
    assert fit.best_epoch < 5, "the setting is meant to overfit: the last epoch should not be the best"
    again = brute_force(fit, words, ids, ctx)["heldout_context_ce"]
    assert again == pytest.approx(scores[fit.best_epoch - 1], rel=1e-4)
    assert again != pytest.approx(scores[-1], rel=1e-3)
    # by the joint cross-entropy (the default), the same rule
    fit = fit_char_encoder(words, ctx.table[ids], word_ids=ids, contexts=ctx, config=TINY, epochs=3,
                           context_batch_size=64, learning_rate=0.05, heldout_fraction=0.2, seed=0)
    joint = [row["heldout_joint_ce"] for row in fit.history[1:]]
    assert fit.best_epoch == 1 + int(np.argmin(joint))
    assert brute_force(fit, words, ids, ctx)["heldout_joint_ce"] == pytest.approx(min(joint), rel=1e-4)


def test_mse_only_with_contexts_reports_in_context_metrics_and_keeps_old_api():
    words, ids, ctx = synthetic()
    fit = fit_char_encoder(words, ctx.table[ids], word_ids=ids, contexts=ctx, config=TINY, epochs=2,
                           context_weight=0.0, select_by="mse", seed=0)
    assert "train_context_ce" not in fit.history[1] and "heldout_recall_at_3" in fit.metrics
    assert fit.best_epoch == 1 + int(np.argmin([r["heldout_mse"] for r in fit.history[1:]]))
    enc, losses = train_char_encoder(words, ctx.table[ids], config=TINY, epochs=2)
    assert len(losses) == 2 and enc.output_shape == (None, 8)


def test_each_epoch_is_one_line_to_logging():
    """The epoch lines go to the module's logger (the command line shows them on stdout), not to a callback."""
    import logging

    lines = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("keyboard_lm.char_encoder.fit")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        words, ids, ctx = synthetic()
        fit_char_encoder(words, ctx.table[ids], config=TINY, epochs=2, seed=0)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert [line.split("  ")[0] for line in lines] == ["char encoder epoch 1/2", "char encoder epoch 2/2"]


@pytest.mark.parametrize("kwargs,what", [
    (dict(contexts="ctx"), "needs word_ids"),
    (dict(context_loss="nope"), "context_loss"),
    (dict(personal_share=0.0), "personal_share"),
    (dict(select_by="context"), "needs held-out words with in-context positions"),
    (dict(heldout_fraction=1.0), "heldout_fraction"),
    (dict(mse_weight=0.0), "nothing to train"),
])
def test_bad_settings_raise_one_clear_error(kwargs, what):
    words, ids, ctx = synthetic()
    kwargs = {"heldout_fraction": 0.0, **kwargs}
    if kwargs.get("contexts") == "ctx":
        kwargs["contexts"] = ctx
    with pytest.raises(ConfigError, match=what):
        fit_char_encoder(words, ctx.table[ids], config=TINY, epochs=1, **kwargs)


def test_context_examples_refuse_inconsistent_arrays():
    table = np.zeros((10, 4), np.float32)
    with pytest.raises(ConfigError, match="vocabulary ids"):
        ContextExamples(table, np.zeros((2, 4)), np.array([3, 10]))
    with pytest.raises(ConfigError, match="expected \\[N, 4\\]"):
        ContextExamples(table, np.zeros((2, 5)), np.array([3, 4]))


# --- the real pipeline on the tiny trained run -------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_and_corpus(small_run, default_corpus):
    from keyboard_lm.models.run_dir import load_run

    return load_run(small_run), default_corpus


def test_training_clients_are_the_runs_and_held_out_clients_are_refused(run_and_corpus):
    from keyboard_lm.data.split import SplitConfig, split_clients

    run, corpus = run_and_corpus
    train, heldout = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    assert run_training_clients(run, corpus) == train
    with pytest.raises(ConfigError, match="held-out clients"):
        model_contexts(run, corpus, train[:5] + heldout[:1], max_positions=10)


def test_contexts_are_the_tied_output_inputs_of_the_runs_examples(run_and_corpus):
    """Every non-special position of the clients' examples, in order: h . E^T is the model's logits there."""
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.models.run_dir import build_loaded_model

    run, corpus = run_and_corpus
    clients = run_training_clients(run, corpus)[:150]
    model = build_loaded_model(run)
    h, y = model_contexts(run, corpus, clients, max_positions=10**9, model=model)
    pairs = list(corpus_examples(corpus.sentences(clients), run.vocab, 20))
    x_all = np.array([p[0] for p in pairs], np.int32)
    y_all = np.array([p[1] for p in pairs])
    logits = model.predict(x_all, verbose=0)
    keep = y_all >= N_SPECIAL
    np.testing.assert_array_equal(y, y_all[keep])
    table = model.get_layer("embedding").table().numpy()
    np.testing.assert_allclose(h @ table.T, logits[keep], rtol=1e-4, atol=1e-4)
    sub, y_sub = model_contexts(run, corpus, clients, max_positions=200, seed=1, model=model)
    again, _ = model_contexts(run, corpus, clients, max_positions=200, seed=1, model=model)
    other, _ = model_contexts(run, corpus, clients, max_positions=200, seed=2, model=model)
    assert sub.shape == (200, run.model_config.embedding_dim) and sub.dtype == np.float32 and y_sub.min() >= N_SPECIAL
    np.testing.assert_array_equal(sub, again)
    assert not np.array_equal(sub, other)


def _leaves(meta, path=""):
    if isinstance(meta, dict):
        for k, v in meta.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(meta, list):
        for i, v in enumerate(meta):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, meta


def test_build_writes_a_fingerprinted_numbers_only_encoder_file(run_and_corpus, small_tflite, small_char_encoder):
    run, corpus = run_and_corpus
    out, report = small_char_encoder
    with open(small_tflite, "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()
    encoder = CharEncoderFile(out)
    assert encoder.meta["model_fingerprint"] == model_sha == report["model_fingerprint"]
    assert encoder.encode(["rosalindx"]).shape == (1, run.model_config.embedding_dim)
    assert report["encoder_bytes"] == os.path.getsize(out)
    assert report["total_bytes"] == os.path.getsize(out) + os.path.getsize(small_tflite)
    meta = encoder.meta
    assert meta["heldout"]["heldout_recall_at_3"] == report["metrics"]["heldout_recall_at_3"]
    assert meta["training"]["epochs"] == 2 and meta["training"]["positions"] == 3000
    for path, value in _leaves(meta):
        if path in (".format", ".model_fingerprint"):
            continue
        assert value is None or isinstance(value, (int, float)), (path, value)
    # Words that occur in the file come from its format (layer names, metadata keys), not from the data:
    # the same layout from an untrained encoder with every number zeroed holds them too.
    zeroed = json.loads(json.dumps({k: v for k, v in meta.items() if k not in RESERVED_KEYS}),
                        parse_float=lambda _: 0.0, parse_int=lambda _: 0)
    config = CharEncoderConfig(embedding_dim=run.model_config.embedding_dim)
    reference = char_encoder_bytes(build_char_encoder(config), max_bytes=config.max_bytes,
                                   model_fingerprint="0" * 64, metadata=zeroed)
    data = open(out, "rb").read()
    corpus_words = {w for s in corpus.sentences() for w in s if len(w) >= 5}
    assert len(corpus_words) > 500
    in_file = {w for w in corpus_words if w.encode("utf-8") in data}
    assert in_file <= {w for w in corpus_words if w.encode("utf-8") in reference}
    assert len(in_file) < 20, sorted(in_file)  # a few format words ("project"ion, "channels", ...), nothing more


def _with_metadata(model_path, out_path, **changes):
    """A copy of the model file whose keyboard_lm.json has ``changes`` (``model_X`` sets model.X)."""
    data = open(model_path, "rb").read()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        start = min(i.header_offset for i in z.infolist())
        files = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(files["keyboard_lm.json"])
    for key, value in changes.items():
        if key.startswith("model_"):
            meta["model"][key[len("model_"):]] = value
        else:
            meta[key] = value
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, content in files.items():
            z.writestr(name, json.dumps(meta) if name == "keyboard_lm.json" else content)
    with open(out_path, "wb") as f:
        f.write(data[:start] + buf.getvalue())
    return out_path


@pytest.mark.parametrize("changes,what", [
    (dict(vocab_size=999), "vocabulary size 999"), (dict(model_embedding_dim=32), "embedding dim 32"),
    (dict(vocab_sha256="0" * 64), "vocabulary sha256 000000000000"), (dict(model_units=49), "units 49 != 48"),
])
def test_model_file_of_another_run_is_refused(small_run, small_tflite, default_corpus, tmp_path, changes, what):
    other = _with_metadata(small_tflite, str(tmp_path / "other.tflite"), **changes)
    out = tmp_path / "enc.tflite"
    with pytest.raises(ConfigError, match=what) as e:
        build_char_encoder_file(small_run, other, str(out), corpus=default_corpus, epochs=1)
    assert other in str(e.value) and small_run in str(e.value)
    assert not out.exists()


def test_foreign_model_file_and_overwriting_the_model_are_refused(small_run, small_tflite, default_corpus, tmp_path):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"junk")
    with pytest.raises(ConfigError, match="not a keyboard_lm model file"):
        build_char_encoder_file(small_run, str(junk), str(tmp_path / "enc.tflite"), corpus=default_corpus)
    with pytest.raises(ConfigError, match="would overwrite the model file"):
        build_char_encoder_file(small_run, small_tflite, small_tflite, corpus=default_corpus)


def test_over_budget_is_refused_and_nothing_is_written(small_run, small_tflite, default_corpus, tmp_path):
    model_bytes = os.path.getsize(small_tflite)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "enc.tflite"
    with pytest.raises(ConfigError) as e:  # the model alone is over: refused before any training
        build_char_encoder_file(small_run, small_tflite, str(out), corpus=default_corpus, budget_bytes=model_bytes - 1)
    assert f"{model_bytes:,} bytes" in str(e.value) and "over the personalization budget" in str(e.value)
    budget = model_bytes + 20_000  # the encoder (~120 kB at Shenoy's sizes) does not fit
    with pytest.raises(ConfigError) as e:
        build_char_encoder_file(small_run, small_tflite, str(out), corpus=default_corpus, epochs=1, max_positions=500,
                                budget_bytes=budget)
    message = str(e.value)
    assert f"model file ({model_bytes:,} bytes)" in message and "nothing was written" in message
    encoder_bytes = int(message.split("char encoder file (")[1].split(" bytes")[0].replace(",", ""))
    assert f"by {model_bytes + encoder_bytes - budget:,}" in message
    assert list(out_dir.iterdir()) == []

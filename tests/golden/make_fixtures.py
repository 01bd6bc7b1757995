"""Regenerate the golden fixture models and ``predictor_fixture.json`` (run by hand).

    .venv/bin/python tests/golden/make_fixtures.py [--retrain]

Models: one tiny centrally-trained run per model type (1 epoch on the embedded
corpus, vocabulary 300, embedding 16, 32 units), exported in both int8 modes to
``tests/golden/models/<model_type>_<mode>.tflite``. Existing model files are
kept unless ``--retrain`` is given (other tests compare against them); one
without the checksum comment (made before the exporter wrote it) is sealed in
place (``model_file.seal``: only the archive's comment changes, so the
flatbuffer, the vocabulary and every answer stay as they were).

Fixture: for every committed model and every context in CONTEXTS, the top-3
next-word ids, words and raw log-probs (``ModelFile.step_full``) that the
Python predictor's streaming session reaches, plus completions for a few
prefixes. Order: log-prob descending, ties by id ascending; completion
candidates are non-special vocabulary words whose normalized spelling starts
with the normalized prefix. tests/test_golden_fixture.py checks the committed
JSON still matches the current Python predictor; the Java core reads it too.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODELS = HERE / "models"
FIXTURE = HERE / "predictor_fixture.json"
MODEL_TYPES = ["cifg", "si-cifg", "lstm", "gru"]
MODES = ["dynamic-range", "weight-only"]
CONTEXTS = [
    "",
    "how are",
    "what is your",
    "i like it. you",
    "thank you very much for",
    "Hello, how ARE you?",
    # Longer than seq_len (20) inputs: exercises the state restart every seq_len inputs.
    "i think that you are a very good friend and i would like to know what you do "
    "when you are not at work and how you like it",
]
COMPLETIONS = [("how are", "y"), ("what is your", "n"), ("", "th"), ("i like it. you", "A")]
K = 3


def train_and_export(model_type: str, out_dir: Path) -> None:
    cli = str(REPO / ".venv" / "bin" / "keyboard-lm")
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        subprocess.run([cli, "train", "--centralized", "--model", model_type, "--vocab-size", "300",
                        "--embedding-dim", "16", "--units", "32", "--epochs", "1", "--seed", "0",
                        # the recipe these fixtures were made with (the centralized defaults before the batch-8 recipe)
                        "--optimizer", "sgd", "--lr", "1.0", "--dropout", "0", "--validation-fraction", "0",
                        "--weight-drop", "0", "--weight-average", "0",
                        "--out", run], check=True, cwd=REPO)
        for mode in MODES:
            out = out_dir / f"{model_type}_{mode}.tflite"
            if out.exists() and not ARGS.retrain:
                continue
            subprocess.run([cli, "export", run, "--out", str(out), "--quantization", mode],
                           check=True, cwd=REPO)
            # The exporter's model card describes a run that is not kept; only the model is a fixture.
            Path(str(out) + ".card.json").unlink(missing_ok=True)


def top(log_probs: np.ndarray, ids: np.ndarray, k: int) -> list[int]:
    """ids by log-prob descending, ties by id ascending."""
    order = sorted(ids.tolist(), key=lambda i: (-float(log_probs[i]), i))
    return order[:k]


def fixture_for(path: Path) -> dict:
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference import Predictor
    from keyboard_lm.text import tokenizer

    p = Predictor.load(str(path))
    entry = {"seq_len": p.model.seq_len, "vocab_size": len(p.vocab), "contexts": [], "completions": []}
    for context in CONTEXTS:
        s = p.session()
        s.commit(context)
        ids = top(s._log_probs, s._all_ids, K)
        entry["contexts"].append({"context": context, "top_ids": ids,
                                  "top_words": [p.vocab.token_of(i) for i in ids],
                                  "top_log_probs": [float(s._log_probs[i]) for i in ids]})
    for context, prefix in COMPLETIONS:
        s = p.session()
        s.commit(context)
        normalized = tokenizer.normalize(prefix).strip()
        cands = p.ranker.prefix_ids(normalized)
        ids = top(s._log_probs, np.asarray(cands), K)
        entry["completions"].append({"context": context, "prefix": prefix, "top_ids": ids,
                                     "top_words": [p.vocab.token_of(i) for i in ids],
                                     "top_log_probs": [float(s._log_probs[i]) for i in ids]})
    return entry


def build_fixture() -> dict:
    return {"k": K, "order": "log-prob descending, ties by id ascending",
            "models": {f.name: fixture_for(f) for f in sorted(MODELS.glob("*.tflite"))}}


def seal_committed() -> None:
    """Give every committed model the checksum comment the exporter now writes (its other bytes unchanged)."""
    sys.path.insert(0, str(REPO))
    from keyboard_lm.inference.model_file import check_checksum, seal

    for path in sorted(MODELS.glob("*.tflite")):
        data = path.read_bytes()
        if not check_checksum(str(path), data):
            path.write_bytes(seal(data))
            print(f"sealed {path.name}")


def main() -> None:
    MODELS.mkdir(parents=True, exist_ok=True)
    if not ARGS.fixture_only:
        for model_type in MODEL_TYPES:
            if ARGS.retrain or any(not (MODELS / f"{model_type}_{m}.tflite").exists() for m in MODES):
                train_and_export(model_type, MODELS)
        seal_committed()
    FIXTURE.write_text(json.dumps(build_fixture(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {FIXTURE.name} for {len(list(MODELS.glob('*.tflite')))} models")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--retrain", action="store_true", help="retrain and overwrite existing model files")
    ap.add_argument("--fixture-only", action="store_true", help="only rewrite the JSON from the committed models")
    ARGS = ap.parse_args()
    main()

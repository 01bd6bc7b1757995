"""Package a pretrained run as the base model shipped in keyboard_lm/models/base.

    python -m benchmarks.tools.package_base RUN_DIR --corpus-report build/base_corpus/report.json \
        --command "keyboard-lm train --centralized ..." [--out keyboard_lm/models/base]

Writes a run directory that ``train --init-from base`` loads: weights.npz in
float16 (half the bytes; the held-out metrics of the float16 weights are
measured here and recorded beside the float32 ones), vocab.txt, and run.json
carrying the model card: what the corpus is made of (package, version, license,
sha256 of each .deb, words kept per source; the mix; the overlap check against
each evaluation corpus and what it dropped), the corpus sha256, the training
command, its epochs, wall time and tokens per second, and the held-out
metrics, plus the sha256 of weights.npz that ``load_warm_start`` checks, and
fingerprint.npz: the sampled hashed set of the corpus's sentences
(``keyboard_lm.data.overlap``) against which warm-started runs measure how
much of their text the base saw.

A run continued from a packaged base (``--init-from base``) is packaged with ``--continues
keyboard_lm/models/base``: the card lists both stages and numbers the epochs on.

    python -m benchmarks.tools.package_base --fingerprint-only --data build/base_corpus/corpus.jsonl \
        [--out keyboard_lm/models/base]

writes (or replaces) only the fingerprint of a packaged base and records it in its run.json.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import shutil
import statistics
import sys

import numpy as np

from keyboard_lm.models.run_dir import RUN_FILE, VOCAB_FILE, WEIGHTS_FILE, atomic_write, load_run, sha256_file
from benchmarks.tools.base_corpus.licenses import license_of
from benchmarks.tools.run_snapshot import repo_relative


def _card_sources(report: dict) -> list[dict]:
    keep = ("package", "version", "deb_sha256", "data_sha256", "documents", "records", "words", "words_available",
            "split", "heldout_clients")
    return [{k: s.get(k) for k in keep if k in s} | {"source": name, "license": license_of(name)}
            for name, s in sorted(report.get("sources", {}).items())]


def _card_overlap(report: dict) -> dict:
    """What the corpus build checked against each evaluation corpus and dropped: the rule (shared word
    n-gram or whole sentence), and per corpus its file's sha256, the sentences checked and what was dropped."""
    rule = dict((report.get("rules") or {}).get("overlap") or {})
    filtered = report.get("filtered") or {}
    corpora = {name: {**c, "dropped": filtered.get(f"overlap_{name}", {"records": 0, "words": 0})}
               for name, c in (rule.pop("corpora", None) or {}).items()}
    return {**rule, "corpora": corpora}


def _speed(info: dict, rows: list[dict]) -> dict | None:
    """Training token slots per wall-second of an epoch, the epoch's validation and held-out evaluation
    included: train examples x sequence length / epoch seconds, for the fastest epoch (the nearest to an
    idle machine) and the median one."""
    examples = (info.get("data") or {}).get("train_examples")
    seq_len = (info.get("hyperparameters") or {}).get("seq_len")
    seconds = [float(r["seconds"]) for r in rows if r.get("seconds")]
    if not (examples and seq_len and seconds):
        return None
    fastest, median = min(seconds), statistics.median(seconds)
    return {"train_examples": examples, "seq_len": seq_len,
            "batching": (info.get("hyperparameters") or {}).get("batching"),
            "fastest_epoch_seconds": round(fastest, 2), "median_epoch_seconds": round(median, 2),
            "tokens_per_second_fastest": round(examples * seq_len / fastest),
            "tokens_per_second_median": round(examples * seq_len / median),
            "of": "train examples x seq_len per wall-second of an epoch of the last stage, evaluation included; "
                  "the step's own speed: benchmarks/results/speed/pretrain_speed_packed.md"}


def write_fingerprint(data_path: str, out: str) -> dict:
    """fingerprint.npz of every record of ``data_path`` (a corpus.jsonl) in ``out``; returns its card entry.

    The whole corpus is fingerprinted, its held-out documents included: over-reporting overlap
    with text the base only evaluated on is the safe side of the check.
    """
    from keyboard_lm.data.corpora import load_jsonl
    from keyboard_lm.data.overlap import FINGERPRINT_FILE, MIN_WORDS, SentenceFingerprint

    corpus = load_jsonl(data_path)
    fp = SentenceFingerprint.build(t for cid in corpus.client_ids for t in corpus.clients[cid])
    path = os.path.join(out, FINGERPRINT_FILE)
    fp.save(path + ".tmp")
    os.replace(path + ".tmp", path)
    return {"file": FINGERPRINT_FILE, "sha256": sha256_file(path), "bytes": os.path.getsize(path), "sentences": fp.sentences,
            "stored": int(len(fp.hashes)), "sample": fp.sample, "min_words": MIN_WORDS,
            "of": "every record of the corpus (training, validation and held-out documents)"}


def add_fingerprint(out: str, data_path: str) -> dict:
    """Write the fingerprint of ``data_path`` into the packaged base ``out`` and record it in its run.json."""
    entry = write_fingerprint(data_path, out)
    with open(os.path.join(out, RUN_FILE), encoding="utf-8") as f:
        info = json.load(f)
    info.setdefault("card", {})["fingerprint"] = entry
    atomic_write(os.path.join(out, RUN_FILE), (json.dumps(info, indent=2) + "\n").encode("utf-8"), mode=0o644)
    return entry


def _stages(previous: dict | None, command: str, rows: list[dict]) -> tuple[list[dict], list[dict], float | None]:
    """The card's stages, epochs and wall time: those of ``previous`` (a packaged card) followed by this run's.

    A run continued from a packaged base numbers its epochs from 1 again; on the card they follow on.
    """
    keys = ("epoch", "train_loss", "loss", "perplexity", "recall_at_3", "val_recall_at_3", "seconds")
    stages = list((previous or {}).get("stages") or ([{"command": previous["command"],
                                                       "epochs": len(previous.get("epochs") or []),
                                                       "wall_seconds": previous.get("wall_seconds")}]
                                                     if previous else []))
    epochs = list((previous or {}).get("epochs") or [])
    start = len(epochs)
    epochs += [{k: r[k] for k in keys if k in r} | {"epoch": str(start + int(r["epoch"]))} for r in rows]
    wall = float(rows[-1]["elapsed_seconds"]) if rows else None
    stages.append({"command": command, "epochs": len(rows), "wall_seconds": wall})
    total = None if any(s.get("wall_seconds") is None for s in stages) else sum(s["wall_seconds"] for s in stages)
    return stages, epochs, total


def package(run_dir: str, out: str, corpus_report: str, command: str, data_path: str | None = None,
            continues: str | None = None) -> dict:
    from keyboard_lm.data.corpora import load_jsonl
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_model
    from keyboard_lm.models.run_dir import build_loaded_model

    run = load_run(run_dir)
    previous = load_run(continues).info["card"] if continues else None
    with open(corpus_report, encoding="utf-8") as f:
        report = json.load(f)
    half = {k: v.astype(np.float16) for k, v in run.weights.items()}
    metrics = {"float32": run.info.get("final_metrics")}
    if data_path:
        # The held-out documents of the run's own split, scored with the float16 weights.
        corpus = load_jsonl(data_path)
        split = SplitConfig(**run.info["data"]["split"])
        heldout = split_clients(corpus.client_ids, split)[1]
        model = build_loaded_model(run)
        for var in model.weights:
            var.assign(half[var.name].astype(np.float32))
        metrics["float16"] = evaluate_model(model, corpus, heldout, run.vocab,
                                            run.info["hyperparameters"]["seq_len"])["pooled"]
    with open(os.path.join(run_dir, "metrics.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    stages, epochs, wall = _stages(previous, command, rows)
    buf = io.BytesIO()
    np.savez_compressed(buf, **half)
    data = buf.getvalue()
    os.makedirs(out, exist_ok=True)
    atomic_write(os.path.join(out, WEIGHTS_FILE), data, mode=0o644)
    shutil.copyfile(os.path.join(run_dir, VOCAB_FILE), os.path.join(out, VOCAB_FILE))
    info = dict(run.info)
    # Where the corpus was on the machine that trained is no business of the package: the path inside the
    # repository (build/...), else the builder's default.
    source = repo_relative((info["data"].get("source") or {}).get("path") or "")
    if not source or os.path.isabs(source):
        source = os.path.join("build", "base_corpus", "corpus.jsonl")
    info["data"] = {**info["data"], "source": {"path": source, "format": "jsonl"}}
    info["weights_sha256"] = hashlib.sha256(data).hexdigest()
    info["weights_dtype"] = "float16"
    info["card"] = {
        "name": "base",
        "what": f"paper-size {run.model_config.model_type.upper()} pretrained on public English text with "
                f"{run.model_config.vocab_size:,} vocabulary rows (docs/training.md)",
        "corpus": {"sha256": report.get("corpus_sha256"), "words": (report.get("totals") or {}).get("words"),
                   "records": (report.get("totals") or {}).get("records"), "rules": report.get("rules"),
                   "mix": report.get("mix"), "overlap": _card_overlap(report),
                   "sources": _card_sources(report)},
        "command": command if not previous else " && ".join(st["command"] for st in stages),
        "stages": stages,
        "wall_seconds": wall,
        "epochs": epochs,
        "heldout_metrics": metrics,
        "speed": _speed(run.info, rows),
    }
    if data_path:
        info["card"]["fingerprint"] = write_fingerprint(data_path, out)
    atomic_write(os.path.join(out, RUN_FILE), (json.dumps(info, indent=2) + "\n").encode("utf-8"), mode=0o644)
    load_run(out)  # it loads as a run directory
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", nargs="?")
    p.add_argument("--corpus-report", help="report.json of benchmarks.tools.base_corpus.builder")
    p.add_argument("--fingerprint-only", action="store_true",
                   help="only (re)write the packaged base's sentence fingerprint from --data")
    p.add_argument("--data", help="the corpus.jsonl the run trained on: score the float16 weights on its held-out "
                                  "documents")
    p.add_argument("--command", help="the training command, for the card")
    p.add_argument("--continues", metavar="PACKAGE_DIR",
                   help="the packaged base this run continued from (--init-from it): its stages and epochs come "
                        "first on the card; read before --out is written, so it may be --out itself")
    p.add_argument("--out", default=os.path.join("keyboard_lm", "models", "base"))
    args = p.parse_args(argv)
    if args.fingerprint_only:
        if not args.data:
            p.error("--fingerprint-only needs --data CORPUS.jsonl")
        entry = add_fingerprint(args.out, args.data)
        print(f"{args.out}: {entry['file']} {entry['bytes']:,} bytes, {entry['stored']:,} of {entry['sentences']:,} "
              f"sentences stored (1 in {entry['sample']})")
        return 0
    if not (args.run_dir and args.corpus_report and args.command):
        p.error("RUN_DIR, --corpus-report and --command are needed to package a run")
    info = package(args.run_dir, args.out, args.corpus_report, args.command, args.data, args.continues)
    size = os.path.getsize(os.path.join(args.out, WEIGHTS_FILE))
    m = info["card"]["heldout_metrics"]
    print(f"{args.out}: weights.npz {size:,} bytes (float16), sha256 {info['weights_sha256'][:12]}; held-out "
          + ", ".join(f"{k} recall@3 {v['recall_at_3']:.4f} ppl {v['perplexity']:.1f}" for k, v in m.items() if v))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Words per wall-second: a federated run against a centralized run on the same corpus, one after the other.

Both are `keyboard-lm train --init-from base` with their defaults (federated: 10 clients a round, batches of
10, at most 120 a client; centralized: its own batches), run here as a user runs them, with the phrase step
left out (`--no-phrases`). A word is a target token of a training example (the examples are the same
20-token chunks of the same sentences for both). Two rates per run: over the whole command (setup,
evaluation and checkpoints included) and over its training loop (the run's elapsed seconds, setup left out);
the federated run's own time breakdown (run.json) says where its loop's time went.

    python benchmarks/speed/federated_throughput.py --corpus mail --rounds 40 --epochs 1

The machine is shared by whatever else runs: the two runs are back to back, not interleaved, so the ratio
carries the machine's drift between them; run it again to see the spread.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402

CORPORA = {"mail": ["--data", "../shared/data/spamassassin-ham/ham.mbox", "--format", "mbox"],
           "shakespeare": ["--data", "../shared/data/tinyshakespeare/input.txt", "--format", "shakespeare"],
           "embedded": []}


def words_per_example(run_dir: str, corpus_args: list[str]) -> float:
    """Mean target tokens (padding left out) of the run's training examples."""
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    args = dict(zip(corpus_args[::2], corpus_args[1::2]))
    corpus = load_corpus(args.get("--data"), args.get("--format", "default"))
    run = load_run(run_dir)
    train_ids, _ = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    examples = words = 0
    for _, y in corpus_examples(corpus.sentences(train_ids), run.vocab, run.info["client_data"]["max_seq_len"]):
        examples += 1
        words += sum(1 for t in y if t != SPECIAL_TOKENS.pad_id)
    return words / examples


def timed_run(args: list[str], out: str) -> dict:
    """Run ``keyboard-lm train args --out out``; its wall seconds, examples and loop seconds."""
    cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", *args, "--out", out]
    print("$ keyboard-lm", " ".join(cmd[3:]), flush=True)
    t0 = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.time() - t0
    if done.returncode:
        raise SystemExit(f"train exited with {done.returncode}: {done.stderr.strip()[-400:]}")
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
        last = list(csv.DictReader(f))[-1]
    from keyboard_lm.models.run_dir import RunRecord

    return {"wall_seconds": round(wall, 1), "examples": int(last["examples_seen"]),
            "loop_seconds": float(last["elapsed_seconds"]), "time_breakdown": RunRecord.read(out).time_breakdown}


def report(result: dict) -> str:
    rows = ["| run | examples | words | command seconds | words/s (command) | loop seconds | words/s (loop) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for name in ("federated", "centralized"):
        r = result[name]
        rows.append(f"| {name} (`{' '.join(r['args'])}`) | {r['examples']:,} | {r['words']:,.0f} | "
                    f"{r['wall_seconds']:,.0f} | {r['words_per_second']:,.0f} | {r['loop_seconds']:,.0f} | "
                    f"{r['loop_words_per_second']:,.0f} |")
    fed = result["federated"]
    shares = (fed.get("time_breakdown") or {}).get("share", {})
    return "\n".join([
        f"Corpus: {result['corpus']} ({result['words_per_example']:.2f} words per 20-token example). "
        "Both from the packaged base, one after the other on the same machine.", "",
        *rows, "",
        f"- federated / centralized, words per wall-second: **{result['ratio_command']:.2f}x** over the command, "
        f"**{result['ratio_loop']:.2f}x** over the training loop (target >= 0.7x)",
        "- the federated loop's time: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items() if v >= 0.005)])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", choices=sorted(CORPORA), default="mail")
    p.add_argument("--rounds", type=int, default=40, help="federated rounds")
    p.add_argument("--epochs", type=int, default=1, help="centralized epochs")
    p.add_argument("--name", default="federated_throughput")
    p.add_argument("--out", default=result_file.results_dir("speed"))
    args = p.parse_args()
    if args.rounds < 1 or args.epochs < 1:
        p.error("--rounds and --epochs must be at least 1")
    started = time.time()
    data = CORPORA[args.corpus]
    result = {"corpus": args.corpus}
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        runs = {"federated": ["--init-from", "base", *data, "--rounds", str(args.rounds), "--no-phrases"],
                "centralized": ["--centralized", "--init-from", "base", *data, "--epochs", str(args.epochs)]}
        for name, run_args in runs.items():
            out = os.path.join(tmp, name)
            result[name] = {"args": [os.path.basename(a) for a in run_args], **timed_run(run_args, out)}
        result["words_per_example"] = words_per_example(os.path.join(tmp, "federated"), data)
    for name in ("federated", "centralized"):
        r = result[name]
        r["words"] = r["examples"] * result["words_per_example"]
        r["words_per_second"] = r["words"] / r["wall_seconds"]
        r["loop_words_per_second"] = r["words"] / r["loop_seconds"]
    fed, cen = result["federated"], result["centralized"]
    result["ratio_command"] = fed["words_per_second"] / cen["words_per_second"]
    result["ratio_loop"] = fed["loop_words_per_second"] / cen["loop_words_per_second"]
    result_file.publish(args.name, result, report(result), args.out, started,
                        seeds="0 (both runs are `keyboard-lm train` with its defaults, seed 0, and the default split)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The runs the privacy planner's loss model is fitted on: DP-FTRL at three model sizes, cohorts and noises.

McKenna et al. 2025 fit the loss of DP training as a function of model size,
steps and the noise-batch ratio (noise std on the averaged update, here
z * C / K). This launches that grid at the project's scale: Tiny Shakespeare
with one client per speech (``--partition record``), DP-FTRL (heavy-ball 0.9,
server lr 1, a fixed clip C = 0.1, so the ratio is known), from random
weights, 40 rounds each, at three model sizes (96, 256 and 670 units, one
10,000-word vocabulary) and four (cohort, noise multiplier) pairs. Each run's metrics.csv gives
the training loss after every round (the T axis) and run.json its size,
cohort, noise, clip and seconds per client-step.

    python benchmarks/privacy/loss_model_runs.py --data ../shared/data/tinyshakespeare/input.txt --out runs/loss_model --jobs 1

``keyboard-lm privacy fit --runs runs/loss_model/*`` then fits the model (docs/privacy.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

#: (name, units, vocabulary): small, middle, the paper's size. One vocabulary for all: a loss over 2,000
#: words (more of them <oov>, an easy target) is not comparable with one over 10,000.
SIZES = [("s", 96, 10000), ("m", 256, 10000), ("l", 670, 10000)]
#: (cohort K, noise multiplier z): noise-batch ratios z * 0.1 / K of 0, 0.0012, 0.0024 and 0.0048.
NOISE = [(50, 0.0), (100, 1.2), (200, 4.8), (50, 2.4)]
CLIP = 0.1
ROUNDS = 40


def runs() -> list[tuple[str, list[str]]]:
    out = []
    for size, units, vocab in SIZES:
        for k, z in NOISE:
            name = f"{size}_k{k}_z{z:g}"
            out.append((name, ["--units", str(units), "--vocab-size", str(vocab), "--clients-per-round", str(k),
                               "--dp", "ftrl", "--dp-noise-multiplier", str(z), "--dp-clip", str(CLIP),
                               "--rounds", str(ROUNDS), "--eval-every", str(ROUNDS)]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="Tiny Shakespeare input.txt")
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", help="comma-separated run names")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    running = []
    for name, extra in runs():
        if args.only and name not in args.only.split(","):
            continue
        if os.path.exists(os.path.join(args.out, name, "run.json")) and os.path.exists(
                os.path.join(args.out, name, "weights.npz")):
            continue  # finished before
        while len(running) >= args.jobs:
            running = [r for r in running if r.poll() is None]
            time.sleep(5)
        cmd = [sys.executable, "-m", "keyboard_lm.cli", "train", "--data", args.data, "--format", "shakespeare",
               "--partition", "record", "--out", os.path.join(args.out, name), "--overwrite",
               *([] if "--centralized" in extra else ["--no-phrases"]), *extra]
        print(" ".join(cmd), flush=True)
        log = open(os.path.join(args.out, f"{name}.log"), "w", encoding="utf-8")
        running.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env))
    for r in running:
        r.wait()


if __name__ == "__main__":
    main()

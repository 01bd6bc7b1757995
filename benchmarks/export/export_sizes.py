"""Exported file sizes by part against the 1.4 MiB budget, for the current exporter and, with ``--baseline``, the
package at another git revision, in one run.

Exports each run directory with no budget and without its phrase table (the model alone), through
``python -m keyboard_lm.cli export`` of each package, and reports the bytes by part (the model card's
breakdown), the margin to the budget, and for a file over it the vocabulary that fits
(``--vocab-size`` N: the N most frequent words), which it then exports under the budget to check it.

    python benchmarks/export/export_sizes.py RUN_DIR [RUN_DIR ...] [--baseline REF]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.baseline import package_at, resolve  # noqa: E402
from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES, SizeBreakdown, vocab_size_that_fits  # noqa: E402
from keyboard_lm.text.spec import SPECIAL_TOKENS  # noqa: E402

PARTS = ("embedding", "recurrent_cell", "projection", "vocabulary_and_metadata", "overhead", "total")


def export(tree: str, run_dir: str, out: str, *extra: str) -> dict | None:
    """The model card of ``run_dir`` (absolute) exported by the package under ``tree`` (None when the export
    refuses). Run from ``tree``, whose package then comes first on the path."""
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run([sys.executable, "-m", "keyboard_lm.cli", "export", run_dir, "--out", out, "--no-phrases",
                           *extra], env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        return None
    with open(out + ".card.json", encoding="utf-8") as f:
        return json.load(f)


def measure(tree: str, run_dir: str, tmp: str, tag: str, budget: int) -> dict:
    card = export(tree, run_dir, os.path.join(tmp, f"{tag}.tflite"), "--budget-bytes", "0")
    if card is None:
        raise SystemExit(f"export_sizes.py: {run_dir}: the package at {tag} could not export it")
    b = card["size_breakdown"]
    row = {"model_type": card["model"]["model_type"], "vocab_size": card["model"]["vocab_size"],
           **{k: b[k] for k in PARTS}, "margin": budget - b["total"]}
    if row["margin"] < 0 and tree == REPO:
        fits = vocab_size_that_fits(SizeBreakdown(**b), budget, row["vocab_size"], len(SPECIAL_TOKENS.tokens))
        check = export(tree, run_dir, os.path.join(tmp, f"{tag}-fits.tflite"), "--vocab-size", str(fits),
                       "--budget-bytes", str(budget))
        row["fits"] = {"vocab_size": fits, "bytes": check["size_bytes"] if check else None}
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--baseline", metavar="REF", help="also export with the package at this git revision")
    p.add_argument("--budget-bytes", type=int, default=DEFAULT_BUDGET_BYTES,
                   help=f"the budget the margins are against ({DEFAULT_BUDGET_BYTES}, the exporter's)")
    p.add_argument("--name", default="export_sizes")
    p.add_argument("--out", default=result_file.results_dir("export"))
    args = p.parse_args()
    for run in args.runs:
        if not os.path.isfile(os.path.join(run, "run.json")):
            p.error(f"{run}: not a run directory (no run.json)")
    if args.budget_bytes < 1:
        p.error(f"--budget-bytes must be >= 1, got {args.budget_bytes}")
    if args.baseline:
        found = resolve(args.baseline)
        if found is None:
            p.error(f"--baseline {args.baseline}: not a git revision of this repository")
        args.baseline = found
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("current", REPO)]
        if args.baseline:
            os.mkdir(os.path.join(tmp, "baseline"))
            trees.append((f"at {args.baseline}", package_at(args.baseline, os.path.join(tmp, "baseline"))))
        for run in args.runs:
            for tag, tree in trees:
                row = measure(tree, os.path.abspath(run), tmp, tag.replace(" ", "-"), args.budget_bytes)
                rows.append({"run": os.path.normpath(run), "package": tag, **row})
                print(rows[-1], flush=True)
    lines = [f"Budget {args.budget_bytes:,} bytes. Each run exported without its phrase table, with no budget, "
             "by each package; `fits`: the vocabulary the current exporter names for a file over the budget, "
             "exported under it.", "",
             "| run | model | package | vocabulary | " + " | ".join(PARTS) + " | margin | fits |",
             "|---|---|---|---:|" + "---:|" * (len(PARTS) + 2)]
    for r in rows:
        fits = (f"--vocab-size {r['fits']['vocab_size']:,}: {r['fits']['bytes']:,}" if r.get("fits") else "")
        lines.append(f"| `{r['run']}` | {r['model_type']} | {r['package']} | {r['vocab_size']:,} | "
                     + " | ".join(f"{r[k]:,}" for k in PARTS) + f" | {r['margin']:,} | {fits} |")
    result_file.write(args.name, {"budget_bytes": args.budget_bytes, "baseline": args.baseline, "rows": rows},
                      "\n".join(lines) + "\n", args.out,
                      seeds="none (deterministic: the export of a run's weights; nothing is sampled)")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Pretrain the informal base with a 40,000-word vocabulary (benchmarks/records/base/base_v2_pretraining.md),
# resumable across sessions and machines:
#   1. builds the corpus (build/base_corpus_v2) when it is missing;
#   2. restores runs/base_v2/w40k from the committed snapshot (benchmarks/records/base/w40k) when the
#      run directory is missing and a snapshot is there;
#   3. continues the run with --resume, or starts it; with packed batches, the padded recipe's steps on fewer
#      positions (the run's first epoch was padded).
# After a session: python benchmarks/tools/run_snapshot.py save runs/base_v2/w40k \
#   benchmarks/records/base/w40k  (and commit it). NICE (default 5) is the run's nice level.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=runs/base_v2/w40k
snapshot=benchmarks/records/base/w40k
python="${PYTHON:-.venv/bin/python}"
if [ ! -s build/base_corpus_v2/corpus.jsonl ]; then
  bash benchmarks/tools/base_corpus.sh build/base_corpus_v2
fi
if [ ! -e "$out/run.json" ] && [ -e "$snapshot/snapshot.json" ]; then
  "$python" benchmarks/tools/run_snapshot.py restore "$snapshot" "$out"
fi
if [ -e "$out/run.json" ]; then
  exec nice -n "${NICE:-5}" "$python" -m keyboard_lm.cli train --centralized --resume --out "$out" --batching packed
fi
exec nice -n "${NICE:-5}" "$python" -m keyboard_lm.cli train --centralized --format jsonl \
  --data build/base_corpus_v2/corpus.jsonl --out "$out" --vocab-size 40000 --epochs 20 --batch-size 256 \
  --lr 0.004 --sampled-softmax 1024 --ngram-teacher 0 --dropout 0.1 --weight-drop 0 --validation-fraction 0.05 \
  --batching packed

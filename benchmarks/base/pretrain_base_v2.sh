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
# The CIFG run ended at epoch 10 (validation gain +0.0004; packaged in benchmarks/records/base/base_v2);
# its snapshot benchmarks/records/base/w40k is epoch 7's, for the record of how it got there.
# MODEL=si-cifg pretrains Ro et al.'s SI-CIFG base the same way in runs/base_v2/si40k (snapshot
# benchmarks/records/base/si40k); the default is the CIFG in runs/base_v2/w40k.
set -euo pipefail
cd "$(dirname "$0")/../.."
model="${MODEL:-cifg}"
case "$model" in
  cifg) name=w40k ;;
  si-cifg) name=si40k ;;
  *) echo "pretrain_base_v2.sh: MODEL=$model: expected cifg or si-cifg" >&2; exit 2 ;;
esac
out=runs/base_v2/$name
snapshot=benchmarks/records/base/$name
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
  --data build/base_corpus_v2/corpus.jsonl --out "$out" --model "$model" --vocab-size 40000 --epochs 20 --batch-size 256 \
  --lr 0.004 --sampled-softmax 1024 --ngram-teacher 0 --dropout 0.1 --weight-drop 0 --validation-fraction 0.05 \
  --batching packed

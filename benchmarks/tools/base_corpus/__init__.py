"""The public-text corpus builder of the base model (not installed; run by benchmarks/tools/base_corpus.sh)."""

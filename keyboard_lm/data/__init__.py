"""Corpora, client splits, statistics and the tf.data pipeline."""

"""Shenoy & Nguyen's personal OOV expansion and per-user fine-tuning on real per-user text."""

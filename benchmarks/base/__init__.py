"""The pretrained base: its targets as a user runs them, zero-shot quality, warm-start recipes, vocabulary coverage."""

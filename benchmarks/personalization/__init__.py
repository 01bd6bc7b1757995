"""Personalization on held-out users: every method side by side, the user history, typo-tolerant completion."""

"""Centralized (server) training; federated training lives in keyboard_lm.federated."""

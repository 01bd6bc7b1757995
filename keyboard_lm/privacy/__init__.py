"""User-level differential privacy for keyboard_lm: settings and accounting.

No TFF import here; only ``keyboard_lm.federated`` imports TFF.
"""

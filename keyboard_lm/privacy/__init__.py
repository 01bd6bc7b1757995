"""User-level differential privacy for keyboard_lm: the settings (``config``), the client sampling the
accountant assumes (``sampling``), accounting and the privacy profile, BLT correlated noise, the planner
with its loss model and compute-aware plan, and the canaries planted in training text with their exposure
and the audit around them.

No TFF import here; only ``keyboard_lm.federated`` imports TFF (the mechanisms run there).
"""

"""Differential privacy for keyboard_lm (issue 12): settings and accounting.

No TFF import here; only ``keyboard_lm.federated`` imports TFF.
"""

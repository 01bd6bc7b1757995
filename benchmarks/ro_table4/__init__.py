"""Ro et al. 2024's Table 4 in this project's setting: SI-CIFG against CIFG under DP-FTRL."""

"""Ro et al. 2024's Table 2 in their protocol: CIFG against SI-CIFG from random weights under FedAdam."""

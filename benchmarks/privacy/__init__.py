"""Privacy: DP-FedAvg and DP-FTRL utility, canary audits, cohorts, tree restarts, the planner's loss model."""

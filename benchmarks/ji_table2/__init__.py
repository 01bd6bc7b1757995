"""Ji et al. 2019's Table II: FedAtt against FedAvg and FedSGD on an IID re-partition."""

"""Hard et al. 2018's Table 3: the n-gram, a server-trained CIFG and a federated CIFG, like for like."""

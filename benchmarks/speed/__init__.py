"""Training speed: federated throughput, TFF overhead, workers, a shaped network, pretraining tokens per second."""

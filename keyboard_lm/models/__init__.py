"""Next-word models (CIFG, SI-CIFG, LSTM, GRU), their metrics and checkpoints."""

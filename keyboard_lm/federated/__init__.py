"""The federated layer: the only part of keyboard_lm that imports TFF."""

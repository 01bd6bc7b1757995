"""The exported model file: int8 fidelity against the float model, and corrupted files against the loaders."""

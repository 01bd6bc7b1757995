"""Next-word models (CIFG, SI-CIFG, LSTM, GRU; ``cells``, ``language_model``, TensorFlow), their config
(``config``, no TensorFlow), metrics and quantization-aware rounding, the run directory a run writes
(``run_dir``: files, atomic writes, the typed ``RunRecord`` of run.json; ``run_guard``), starting from a
base (``warm_start``) and the shipped base itself (``base/``)."""

"""Non-neural baselines: the interpolated Kneser-Ney n-gram model (``ngram``, no TensorFlow) that the
neural models are compared with and that centralized training can distil from."""

"""Personal OOV expansion (Shenoy & Nguyen): a char-level word encoder into the tied embedding space.

Shenoy & Nguyen: a character CNN maps any spelling into the model's embedding
space so words outside the closed vocabulary can be embedded and predicted.
"""

"""On-device inference over an exported .tflite file: numpy + a TFLite runtime, no TensorFlow."""

from keyboard_lm.inference.model_file import ModelFile, ModelFileError
from keyboard_lm.inference.predictor import Predictor
from keyboard_lm.inference.session import Session
from keyboard_lm.inference.user_history import UserHistory

__all__ = ["ModelFile", "ModelFileError", "Predictor", "Session", "UserHistory"]

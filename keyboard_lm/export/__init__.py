"""The TFLite exporter (imports TensorFlow, never TFF)."""

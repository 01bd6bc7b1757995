"""Run directory -> one self-contained int8 ``.tflite`` file (imports TensorFlow, never TFF).

``tflite_export`` is the entry point (``export_run``, also ``keyboard_lm.export_run``): ``step_module`` is
the one recurrent step the file computes, ``pruning`` and ``weight_quantization`` shrink it, ``budget`` checks
its size; ``char_encoder_export`` writes the personal-word char encoder as a second file. The inference
layer reads the files and never imports this package.
"""

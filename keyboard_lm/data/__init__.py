"""Text a user brings, as clients: corpora and their readers (``corpus``, ``corpora``, ``mbox``), client
splits and re-partitions, statistics, the overlap with a base's pretraining text, the batching config and
the numeric limits every config shares (``config``, ``limits``), all without TensorFlow; and the examples
and ``tf.data`` pipeline training reads (``examples``; ``preprocessing``, the one module here that imports
TensorFlow)."""

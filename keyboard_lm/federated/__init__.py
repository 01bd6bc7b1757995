"""The federated layer, the only part of keyboard_lm that imports TFF: the algorithms and their parts (``process``,
``aggregation``, ``dp``, ``fed_att``, ...), TFF's runtime (``runtime``), and the training loop (``trainer``) over
its collaborators (``algorithm``, ``rounds``, ``round_checkpoints``, ``run_setup``)."""

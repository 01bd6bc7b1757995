"""What both trainers share (``loop``: the run writer, keep-best, the averaging decay, the progress line) and the
centralized trainer (``centralized``); federated training lives in keyboard_lm.federated."""

"""``python -m keyboard_lm.cli``: the same as the ``keyboard-lm`` command."""

import sys

from keyboard_lm.cli.main import main

sys.exit(main())

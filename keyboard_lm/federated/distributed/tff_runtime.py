"""The former home of :mod:`keyboard_lm.federated.runtime`, kept so that older imports of it still work.

Importing this name gives the very same module object, so its state (the registered exit hook, the workers it
started) is one, whichever name a caller used.
"""

import sys

from keyboard_lm.federated import runtime as _runtime

sys.modules[__name__] = _runtime

"""What the benchmark studies share: result files, run records, corpora, training runs, n-gram references,
held-out evaluation, the Java core and the emulated aarch64 environment. Public names only; a study imports
from here, never a private name of another study."""

"""The Android demo's Java core: step engine against TFLite, heap, emulated aarch64 JVM, key to strip."""

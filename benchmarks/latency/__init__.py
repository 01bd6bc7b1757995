"""Suggestion latency per keystroke, native and emulated aarch64: history, personal words, phrase table, typos."""

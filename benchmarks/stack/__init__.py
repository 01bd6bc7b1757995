"""The whole suggestion stack (model, phrase table, gate) against the Kneser-Ney 5-gram."""

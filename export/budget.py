"""Size breakdown of an exported model and the size budget (Hard et al.: 1.4 MB)."""

from __future__ import annotations

import dataclasses

from keyboard_lm.errors import ConfigError

#: 1.4 MiB for the whole .tflite, vocabulary included.
DEFAULT_BUDGET_BYTES = 1_468_006


@dataclasses.dataclass(frozen=True)
class SizeBreakdown:
    """Bytes by part: int8 weights at one byte per parameter, the rest overhead."""

    embedding: int
    recurrent_cell: int
    projection: int
    vocabulary_and_metadata: int
    overhead: int
    total: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def table(self) -> str:
        return "\n".join(f"  {name:24s} {value:>10,} B" for name, value in self.as_dict().items())


def size_breakdown(run, flatbuffer_bytes: int, associated_bytes: int, bytes_per_weight: int = 1) -> SizeBreakdown:
    """Split the file size into the parts a reader cares about (estimates: biases counted like weights)."""
    c = run.model_config
    v, d, h = c.vocab_size, c.embedding_dim, c.units
    embedding = v * d * bytes_per_weight
    projection = h * d * bytes_per_weight
    recurrent = c.num_parameters() * bytes_per_weight - embedding - projection
    overhead = flatbuffer_bytes - embedding - recurrent - projection
    return SizeBreakdown(embedding, recurrent, projection, associated_bytes, overhead,
                         flatbuffer_bytes + associated_bytes)


def check_budget(breakdown: SizeBreakdown, budget_bytes: int | None) -> None:
    """Raise ConfigError with the breakdown when the file would exceed the budget."""
    if budget_bytes is not None and breakdown.total > budget_bytes:
        raise ConfigError(
            f"the exported model would be {breakdown.total:,} bytes, over the budget of {budget_bytes:,} bytes "
            f"by {breakdown.total - budget_bytes:,}; nothing was written. Size breakdown:\n{breakdown.table()}\n"
            "Shrink the vocabulary or the cell, or raise --budget-bytes.")

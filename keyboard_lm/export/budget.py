"""Size breakdown of an exported model and the size budget.

The budget is the project's: 1.4 MiB (1,468,006 bytes) for the whole file, vocabulary and metadata
included. Hard et al. 2018 quote 1.4 MB for their quantized model of 1.4 million parameters; 1.4 MiB
is 4.9% more than 1,400,000 bytes, and the paper-size CIFG file here (about 1,465,000 bytes with a
10k-word vocabulary) fits the first, not the second.
"""

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
    phrase_table: int = 0  # counted in total, not in vocabulary_and_metadata

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def table(self) -> str:
        return "\n".join(f"  {name:24s} {value:>10,} B" for name, value in self.as_dict().items())


def size_breakdown(run, flatbuffer_bytes: int, associated_bytes: int, bytes_per_weight: int = 1,
                   phrase_bytes: int = 0) -> SizeBreakdown:
    """Split the file size into the parts a reader cares about (estimates: biases counted like weights).

    ``associated_bytes``: the archive after the flatbuffer, ``phrase_bytes`` of it the phrase table."""
    c = run.model_config
    v, d, h = c.vocab_size, c.embedding_dim, c.units
    embedding = v * d * bytes_per_weight
    projection = h * d * bytes_per_weight
    recurrent = c.num_parameters() * bytes_per_weight - embedding - projection
    overhead = flatbuffer_bytes - embedding - recurrent - projection
    return SizeBreakdown(embedding, recurrent, projection, associated_bytes - phrase_bytes, overhead,
                         flatbuffer_bytes + associated_bytes, phrase_bytes)


#: Bytes a smaller vocabulary may move the file by apart from its rows: the converter aligns each
#: constant buffer to 16 bytes.
ALIGNMENT_SLACK = 16


def vocab_size_that_fits(breakdown: SizeBreakdown, budget_bytes: int, vocab_size: int, specials: int) -> int | None:
    """The largest vocabulary (most frequent words kept) whose file fits ``budget_bytes``, counting only
    the embedding rows it drops (its vocabulary text shrinks too, so the file ends up a little under);
    None when no vocabulary with a word beside the ``specials`` fits."""
    over = breakdown.total - budget_bytes + ALIGNMENT_SLACK
    row_bytes = breakdown.embedding // vocab_size  # one row of the tied embedding, as stored
    size = vocab_size - -(-over // row_bytes)
    return size if size > specials else None


def check_budget(breakdown: SizeBreakdown, budget_bytes: int | None, fits: int | None = None) -> None:
    """Raise ConfigError with the breakdown when the file would exceed the budget; ``fits``: a vocabulary
    size that would fit (``vocab_size_that_fits``), named as the way out."""
    if budget_bytes is not None and breakdown.total > budget_bytes:
        way = (f"--vocab-size {fits} keeps the {fits:,} most frequent words and fits; or shrink the cell, or "
               "raise --budget-bytes." if fits else "Shrink the vocabulary or the cell, or raise --budget-bytes.")
        raise ConfigError(
            f"the exported model would be {breakdown.total:,} bytes, over the budget of {budget_bytes:,} bytes "
            f"by {breakdown.total - budget_bytes:,}; nothing was written. Size breakdown:\n{breakdown.table()}\n"
            + way)


#: 1.6 MiB for what ships with personal words: the 1.4 MiB model budget plus 0.2 MiB
#: for the personalization add-on (the char encoder file).
DEFAULT_PERSONAL_BUDGET_BYTES = 1_677_721


def check_personal_budget(model_bytes: int, encoder_bytes: int,
                          budget_bytes: int | None = DEFAULT_PERSONAL_BUDGET_BYTES) -> None:
    """Raise ConfigError when the model file and the char encoder file together exceed the budget.

    Both files ship to the device, so the budget covers their sum; None or 0 means no budget.
    """
    if not budget_bytes:
        return
    total = model_bytes + encoder_bytes
    if total > budget_bytes:
        raise ConfigError(
            f"the model file ({model_bytes:,} bytes) and the char encoder file ({encoder_bytes:,} bytes) would be "
            f"{total:,} bytes together, over the personalization budget of {budget_bytes:,} bytes by "
            f"{total - budget_bytes:,}; nothing was written. Shrink the encoder (fewer channels or a smaller "
            "byte embedding) or the model, or raise the budget.")

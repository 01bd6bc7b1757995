"""Batches of examples of similar length, so a training step computes few pad positions (NumPy, no TensorFlow).

An example is a sentence's chunk padded to the sequence length (``data.examples``); on the base corpus 42% of
a padded batch's positions are pads, which the recurrence and the output still compute and the loss then
masks. Here each epoch's shuffled examples are cut into windows, each window sorted by length and cut into
batches of about ``batch_size`` x the corpus's mean length in real targets, and every batch is trimmed to its
longest example (pads are only ever at an example's end, so trimming them changes no real position's inputs
or state). The batches then run in a shuffled order.

Tokens per batch stay about what a padded batch of ``batch_size`` examples holds, so each target keeps its
weight in the per-batch mean loss and an epoch takes about as many steps; what changes is which examples
share a batch. Fairseq's ``--max-tokens`` batching and ``tf.data``'s ``bucket_by_sequence_length`` are the
same idea.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from keyboard_lm.text.spec import SPECIAL_TOKENS

#: Batches' worth of examples sorted together: wide enough that most batches hold one length, narrow enough
#: that an epoch's batches still mix the corpus's parts.
WINDOW_BATCHES = 64


def example_lengths(inputs: np.ndarray, pad_id: int = SPECIAL_TOKENS.pad_id) -> np.ndarray:
    """Real (non-pad) positions of each example [N] from its input ids [N, S] (an example's inputs and
    targets are equally long; pads only at the end)."""
    return np.count_nonzero(np.asarray(inputs) != pad_id, axis=1).astype(np.int64)


def length_batches(lengths: np.ndarray, batch_size: int, seed: int,
                   window_batches: int = WINDOW_BATCHES) -> list[np.ndarray]:
    """One epoch's batches: arrays of example indices, every example in exactly one.

    The examples are shuffled by ``seed``, cut into windows of ``window_batches * batch_size``, each window
    sorted by length (stable) and cut greedily into batches whose real positions reach
    ``batch_size * mean(lengths)``; the batches' order is shuffled by the same seed. The same
    ``lengths``, ``batch_size`` and ``seed`` give the same batches.
    """
    lengths = np.asarray(lengths, np.int64)
    if len(lengths) == 0:
        return []
    if batch_size < 1 or window_batches < 1:
        raise ValueError(f"batch_size and window_batches must be >= 1, got {batch_size}, {window_batches}")
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(lengths))
    budget = batch_size * float(lengths.mean())
    window = window_batches * batch_size
    batches = []
    for start in range(0, len(order), window):
        part = order[start:start + window]
        part = part[np.argsort(lengths[part], kind="stable")]
        ends = np.cumsum(lengths[part])
        first = 0
        while first < len(part):
            # the first index where this batch's real positions reach the budget (at least one example)
            last = int(np.searchsorted(ends, (ends[first - 1] if first else 0) + budget, side="left")) + 1
            last = min(max(last, first + 1), len(part))
            batches.append(part[first:last])
            first = last
    return [batches[i] for i in rng.permutation(len(batches))]


def trimmed(x: np.ndarray, y: np.ndarray, lengths: np.ndarray, batches: list[np.ndarray]
            ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(inputs, targets) of each batch, cut after the batch's longest example."""
    for index in batches:
        width = int(lengths[index].max())
        yield x[index, :width], y[index, :width]


def padded_share(lengths: np.ndarray, seq_len: int, batches: list[np.ndarray] | None = None) -> float:
    """Share of the computed positions that are pads: of padded batches (``batches`` None), or of ``batches``."""
    lengths = np.asarray(lengths, np.int64)
    real = int(lengths.sum())
    if batches is None:
        computed = len(lengths) * seq_len
    else:
        computed = sum(len(b) * int(lengths[b].max()) for b in batches)
    return 1.0 - real / computed if computed else 0.0


def pack_rows(lengths: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Place examples of ``lengths`` (each <= ``width``) end to end in as few rows of ``width`` positions as
    best-fit decreasing finds: (row of each example, its first position in that row). Deterministic."""
    lengths = np.asarray(lengths, np.int64)
    if len(lengths) and int(lengths.max()) > width:
        raise ValueError(f"an example of {int(lengths.max())} positions does not fit a row of {width}")
    rows, starts = np.zeros(len(lengths), np.int64), np.zeros(len(lengths), np.int64)
    free: list[list[int]] = [[] for _ in range(width + 1)]  # free[k]: rows with exactly k positions left
    used: list[int] = []  # positions used in each row
    for i in np.argsort(-lengths, kind="stable"):
        need = int(lengths[i])
        k = next((k for k in range(need, width + 1) if free[k]), None)  # the tightest row it fits
        if k is None:
            row = len(used)
            used.append(0)
        else:
            row = free[k].pop()
        rows[i], starts[i] = row, used[row]
        used[row] += need
        free[width - used[row]].append(row)
    return rows, starts


def packed(x: np.ndarray, y: np.ndarray, lengths: np.ndarray, index: np.ndarray, pad_id: int = SPECIAL_TOKENS.pad_id
           ) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The examples ``index`` of a padded batch packed into full rows (``pack_rows``): ((inputs [R, S], resets
    [R, S] float32, 1 at each example's first position), targets [R, S, ...]); the rest are pads. Trained
    with the state reset at each 1 (``models.language_model.packed_model``), each example is computed as in
    its own padded row, so a step sees the same examples, targets and mean loss with fewer pad positions."""
    width = x.shape[1]
    n = lengths[index]
    rows, starts = pack_rows(n, width)
    count = int(rows.max()) + 1 if len(index) else 0
    ex = np.repeat(np.arange(len(index)), n)  # one entry per real position
    pos = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)  # its position inside its example
    r, c = rows[ex], starts[ex] + pos
    inputs = np.full((count, width), pad_id, x.dtype)
    targets = np.zeros((count, width, *y.shape[2:]), y.dtype)
    if y.ndim == 2:
        targets[:] = pad_id
    inputs[r, c] = x[index[ex], pos]
    targets[r, c] = y[index[ex], pos]
    resets = np.zeros((count, width), np.float32)
    resets[rows, starts] = 1.0
    return (inputs, resets), targets

"""The epoch order of a source made of files of rows (CSVDataset, TextFileDataset), with
MindSpore 2.10's shard rule for them.

MindSpore's CSV and text sources do not deal rows to shards round-robin: they lay the files
end to end (in name order, or in a new random order each epoch with ``Shuffle.FILES`` or
``Shuffle.GLOBAL``) and give shard ``k`` of ``s`` the contiguous block of ``ceil(n / s)`` rows
starting at row ``k * ceil(n / s)``, wrapping around to the first rows past the end, so every
shard reads whole runs of a file and all shards read the same number of rows. ``num_samples``
keeps the first rows of the block. ``Shuffle.GLOBAL`` (and ``True``) then shuffles the shard's
rows; MindSpore does it with a buffer of at most 10,000 rows, jisu with a full permutation of
the shard. ``Shuffle.INFILE`` is where jisu goes its own way: MindSpore ignores it (rows as with
``shuffle=False``); jisu keeps those rows and shuffles them within each run of one file.

Every draw comes from the epoch's generator (keyed by seed and epoch, not by shard), so the
shards of one epoch agree on the file order and together read every row.
"""

from __future__ import annotations

import itertools

import numpy as np

from .options import EpochOrder, Shuffle


def block_positions(n: int, num_shards: int, shard_id: int) -> np.ndarray:
    """Positions (in the files laid end to end) of shard ``shard_id``: the contiguous block of
    ``ceil(n / num_shards)`` rows from ``shard_id * ceil(n / num_shards)``, wrapped modulo ``n``
    (so ``num_shards > n`` gives every shard one row, cycling through the rows)."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    count = -(-n // num_shards)
    return (shard_id * count + np.arange(count, dtype=np.int64)) % n


def _shuffle_runs(rows: np.ndarray, file_of: np.ndarray, rng: np.random.Generator) -> None:
    """Shuffle ``rows`` in place within each run of consecutive rows of one file."""
    if len(rows) == 0:
        return
    files = file_of[rows]
    bounds = np.concatenate([[0], np.flatnonzero(files[1:] != files[:-1]) + 1, [len(rows)]])
    for start, end in itertools.pairwise(bounds):
        rows[start:end] = rows[start:end][rng.permutation(end - start)]


def file_rows_order(
    order: EpochOrder, n: int, rng: np.random.Generator, file_starts: np.ndarray
) -> np.ndarray:
    """Source indices of one epoch of ``n`` rows stored file after file (file ``k`` holds rows
    ``file_starts[k]`` to ``file_starts[k + 1] - 1``), by MindSpore's rule for CSV and text
    files (see the module's docstring). A sampler (``use_sampler``) decides alone."""
    if order.sampler is not None:
        return order.indices(n, rng)
    starts = np.asarray(file_starts, dtype=np.int64)
    files = len(starts) - 1
    level = order.shuffle
    if level in (Shuffle.FILES, Shuffle.GLOBAL) and files > 1:
        laid = np.concatenate(
            [np.arange(starts[k], starts[k + 1], dtype=np.int64) for k in rng.permutation(files)]
        )
    else:
        laid = np.arange(n, dtype=np.int64)
    rows = laid if order.shards is None else laid[block_positions(n, *order.shards)]
    if order.num_samples is not None:
        rows = rows[: order.num_samples]
    rows = np.array(rows, dtype=np.int64)  # a copy: shuffled in place below
    if level is Shuffle.GLOBAL:
        rng.shuffle(rows)
    elif level is Shuffle.INFILE:
        file_of = np.repeat(np.arange(files, dtype=np.int64), np.diff(starts))
        _shuffle_runs(rows, file_of, rng)
    return rows

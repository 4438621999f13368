"""Row orders every layer shares: shard positions (MindSpore's rule) and the buffer shuffle.

Used by the ``shard`` and ``shuffle`` ops and by the sources, which shard and shuffle their own
reads (``num_shards``/``shard_id``, ``shuffle=``) with the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def shard_positions(n: int, num_shards: int, shard_id: int) -> np.ndarray:
    """Positions of shard ``shard_id``: round-robin, wrapped to the first rows when short.

    Every shard gets ``ceil(n / num_shards)`` rows (MindSpore's rule), so ranks agree on the
    number of steps.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    count = -(-n // num_shards)
    return (shard_id + num_shards * np.arange(count, dtype=np.int64)) % n


def shard_stream(rows: Iterator[tuple], num_shards: int, shard_id: int) -> Iterator[tuple]:
    """:func:`shard_positions` on a stream of unknown length: round-robin, then wrap around."""
    head: list[tuple] = []  # the first num_shards rows, for wrapping short shards around
    produced = total = 0
    for total, row in enumerate(rows, 1):
        if len(head) < num_shards:
            head.append(row)
        if (total - 1) % num_shards == shard_id:
            produced += 1
            yield row
    if total:
        for g in shard_positions(total, num_shards, shard_id)[produced:]:
            yield head[g]


def buffer_shuffle(rows: Iterator[tuple], buffer_size: int, rng: np.random.Generator):
    """tf.data's buffer shuffle: fill a buffer, then emit a random element for each new one."""
    buffer: list[tuple] = []
    for row in rows:
        if len(buffer) < buffer_size:
            buffer.append(row)
            continue
        j = int(rng.integers(buffer_size))
        out, buffer[j] = buffer[j], row
        yield out
    for j in rng.permutation(len(buffer)):
        yield buffer[j]

"""Small rows cross the iterator's output queue in chunks (engine/row_queue.py): the rows, their
order and the iterator's position are exactly those of one-by-one hand-offs; big rows go alone."""

from __future__ import annotations

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.row_queue import CHUNK_BYTES, CHUNK_ROWS, RowChunk, RowQueue, Rows, chunks


def row(nbytes: int, tag: int) -> tuple:
    return (np.full(nbytes, tag % 256, np.uint8),)


@pytest.mark.parametrize(
    "sizes", [[8] * 200, [4096] * 300, [8, 2 << 20, 8, 8, 3 << 20], [600_000] * 5]
)
def test_chunks_keep_the_order_and_the_bounds(sizes):
    rows = [row(n, k) for k, n in enumerate(sizes)]
    items = list(chunks(rows))
    flat = [r for item in items for r in (item if isinstance(item, RowChunk) else [item])]
    assert [id(r) for r in flat] == [id(r) for r in rows]  # the same rows, in order
    for item in items:
        if isinstance(item, RowChunk):
            assert 0 < len(item) <= CHUNK_ROWS
            sizes_in = [RowQueue._size(r) for r in item]
            assert sum(sizes_in[:-1]) < CHUNK_BYTES  # closed once it reached the bound
            assert all(s < CHUNK_BYTES for s in sizes_in)
        else:
            assert RowQueue._size(item) >= CHUNK_BYTES  # a big row goes alone, as is


def test_rows_reads_a_chunk_row_by_row_then_the_next_item():
    queue = [RowChunk([1, 2, 3]), "end", RowChunk([4])]
    rows = Rows()
    got = [rows.next(lambda: queue.pop(0)) for _ in range(5)]
    assert got == [1, 2, 3, "end", 4] and len(rows) == 0


def test_small_rows_cross_the_queue_in_few_items(monkeypatch):
    puts = []
    real = RowQueue.put
    monkeypatch.setattr(
        RowQueue,
        "put",
        lambda self, item, timeout=None: (puts.append(item), real(self, item, timeout))[1],
    )
    data = ds.NumpySlicesDataset({"x": np.arange(1000)}, shuffle=False)
    assert [int(r[0]) for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)] == list(
        range(1000)
    )
    assert len(puts) <= 1000 // CHUNK_ROWS + 40  # chunks and the epoch's end, not 1000 items


@pytest.mark.parametrize("stop_at", [1, 63, 64, 100, 999])
def test_a_state_taken_inside_a_chunk_resumes_at_the_next_row(stop_at):
    data = ds.NumpySlicesDataset({"x": np.arange(1000)}, shuffle=True)
    ds.config.set_seed(7)
    whole = [int(r[0]) for r in data.create_tuple_iterator(num_epochs=2, output_numpy=True)]
    ds.config.set_seed(7)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    first = [int(next(it)[0]) for _ in range(stop_at)]
    state = it.get_state()
    it.close()
    assert state["position"] == stop_at
    ds.config.set_seed(123)  # the state carries the seed
    again = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    again.set_state(state)
    rest = [int(r[0]) for r in again]
    assert first + rest == whole

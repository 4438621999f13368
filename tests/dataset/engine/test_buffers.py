"""The batch-array pool: reuse only what nobody holds, within a byte budget, across iterators."""

from __future__ import annotations

import numpy as np
import torch

import jisu.dataset as ds
from jisu.dataset.engine.buffers import BufferPool, batch_buffers

MB = 1 << 20


def test_a_free_array_is_reused_and_a_held_one_never_is():
    pool = BufferPool(max_bytes=64 * MB)
    first = pool.empty((2, MB), np.uint8)
    address = first.ctypes.data
    del first
    second = pool.empty((2, MB), np.uint8)
    assert second.ctypes.data == address  # nobody held it: the same memory again
    held = [torch.from_numpy(second), second[:1]]  # a tensor and a view keep it alive
    del second
    for _ in range(3):
        assert pool.empty((2, MB), np.uint8).ctypes.data != address
    del held
    assert pool.empty((2, MB), np.uint8).ctypes.data == address


def test_small_arrays_and_other_shapes_or_dtypes_are_not_mixed_up():
    pool = BufferPool(max_bytes=64 * MB)
    a = pool.empty((MB,), np.float32)
    address = a.ctypes.data
    del a
    b = pool.empty((MB,), np.int32)  # same bytes, other dtype: a different array
    assert b.dtype == np.int32 and b.ctypes.data != address
    assert pool.empty((4, MB // 4), np.float32).ctypes.data != address  # other shape
    assert pool.kept_bytes == 12 * MB
    pool.empty((10,), np.float32)  # below the pooling size: not kept
    assert pool.kept_bytes == 12 * MB


def test_budget_drops_free_arrays_of_the_least_recently_used_shape_first():
    pool = BufferPool(max_bytes=10 * MB)
    a, b = pool.empty((4 * MB,), np.uint8), pool.empty((3 * MB,), np.uint8)
    del a, b  # both free; (4 MB) used before (3 MB)
    pool.empty((3 * MB,), np.uint8)  # refresh the 3 MB shape
    kept = pool.empty((5 * MB,), np.uint8)  # 4 + 3 + 5 > 10: the 4 MB array goes
    assert pool.kept_bytes == 8 * MB
    held = pool.empty((3 * MB,), np.uint8)
    extra = pool.empty((6 * MB,), np.uint8)  # nothing free to drop: handed out, not kept
    assert extra.shape == (6 * MB,) and pool.kept_bytes == 8 * MB
    del kept, held, extra


def test_a_new_iterator_reuses_the_batch_memory_of_the_previous_one():
    images = np.arange(8 * 64 * 64 * 64, dtype=np.float32).reshape(8, 64, 64, 64)
    data = ds.NumpySlicesDataset({"image": images}, shuffle=False).map(lambda x: x + 1)
    data = data.batch(4)  # 4 MB float32 batches: pooled
    seen = set()
    for batch in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        seen.add(batch[0].ctypes.data)
    del batch
    again = [b[0] for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert {b.ctypes.data for b in again} & seen  # memory of the first epoch came back
    np.testing.assert_array_equal(np.concatenate(again), images + 1)  # and holds new data
    assert batch_buffers.kept_bytes <= batch_buffers.max_bytes


def test_dropping_free_arrays_passes_over_held_ones_of_the_same_shape():
    # issue 51: free arrays were dropped with list.remove, which compares arrays with ==, so a
    # held array before a free one of the same shape raised "The truth value of an array ...
    # is ambiguous"; they are dropped by identity now
    pool = BufferPool(max_bytes=10 * MB)
    held = pool.empty((3 * MB,), np.uint8)
    held[:] = 7
    free = pool.empty((3 * MB,), np.uint8)  # the first is held: a second array of that shape
    del free
    big = pool.empty((5 * MB,), np.uint8)  # 6 + 5 > 10: the free 3 MB array goes, not the held
    assert pool.kept_bytes == 8 * MB
    assert pool.empty((3 * MB,), np.uint8) is not held  # still held: never handed out again
    assert (held == 7).all()
    del big


def test_a_pipeline_of_another_shape_makes_room_while_an_old_batch_is_held(monkeypatch):
    # issue 51 through the public API: keep the first batch of one pipeline (as a training loop
    # keeps its last loss input), then iterate a pipeline of larger batches within the budget
    batch_buffers.clear()
    monkeypatch.setattr(batch_buffers, "max_bytes", 8 * MB)
    try:
        rows = np.ones((16, MB // 4), np.float32)  # 1 MB rows: 2 MB batches
        train = ds.NumpySlicesDataset({"x": rows}, shuffle=False)
        train = train.map(lambda x: x * 2, num_parallel_workers=1)
        train = train.batch(2, num_parallel_workers=1)  # one worker: pooled in batch order
        batches = [x for (x,) in train.create_tuple_iterator(num_epochs=1, output_numpy=True)]
        first = batches[0]
        del batches  # the pool keeps 4 arrays of the train shape: the first held, 3 free
        rows = np.ones((8, MB // 2), np.float32)  # 4 MB batches: room made by dropping free ones
        evals = ds.NumpySlicesDataset({"x": rows}, shuffle=False).map(lambda x: x + 1).batch(2)
        out = [x for (x,) in evals.create_tuple_iterator(num_epochs=1, output_numpy=True)]
        assert len(out) == 4 and all((x == 2).all() for x in out)
        assert (first == 2).all()  # the held batch kept its data
        assert batch_buffers.kept_bytes <= batch_buffers.max_bytes
    finally:
        batch_buffers.clear()

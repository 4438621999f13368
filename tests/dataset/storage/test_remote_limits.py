"""Memory bounds of remote reads: one ranged read is capped, and the record batches a reader
keeps are bounded in count and in bytes (a footer could describe huge batches)."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import storage
from jisu.dataset.record.remote_batches import BatchLRU
from jisu.dataset.record.storage import RemoteFile
from jisu.dataset.record.validate import MalformedFileError


def test_the_batch_lru_keeps_to_its_count_and_byte_bounds():
    lru = BatchLRU(capacity=4, max_bytes=100)
    sizes = [30, 30, 30, 30, 60, 10, 250, 5]
    for k, size in enumerate(sizes):
        lru.put((0, k), f"batch{k}", size)
        kept = [key for key in lru._items]
        total = sum(entry[1] for entry in lru._items.values())
        assert lru.nbytes == total
        assert len(kept) <= 4
        assert total <= 100 or kept == [(0, k)]  # only the newest may exceed the bound alone
        assert lru.get((0, k)) == f"batch{k}"  # the newest is always kept
    lru.put((1, 0), "other", 1)
    lru.drop_shard(0)
    assert list(lru._items) == [(1, 0)] and lru.nbytes == 1


def test_a_read_larger_than_the_cap_is_refused_by_name(monkeypatch):
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/jisu-limits/object", bytes(5000))
    remote = RemoteFile(fs, "/jisu-limits/object", "memory://jisu-limits/object", 5000, tail=64)
    try:
        monkeypatch.setattr(storage, "MAX_READ_BYTES", 1000)
        assert remote.read_range(0, 1000) == bytes(1000)
        with pytest.raises(MalformedFileError, match=r"memory://jisu-limits/object.*1001 bytes"):
            remote.read_range(0, 1001)
    finally:
        fs.rm("/jisu-limits", recursive=True)


def test_a_record_batch_over_the_cap_fails_the_read_with_the_url(monkeypatch):
    url = "memory://jisu-limits/big/train.rec"
    writer = ds.FileWriter(url)
    writer.add_schema({"data": {"type": "bytes"}})
    writer.write_raw_data([{"data": bytes(3000)} for _ in range(8)])  # one 24 KB batch
    writer.commit()
    try:
        monkeypatch.setattr(storage, "MAX_READ_BYTES", 10_000)
        with pytest.raises((MalformedFileError, RuntimeError), match=r"jisu-limits/big.*at most"):
            data = ds.RecordDataset(url, shuffle=False, verify=False)  # the tail read: refused
            list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
        monkeypatch.setattr(storage, "MAX_READ_BYTES", 1 << 30)
        rows = list(ds.RecordDataset(url, shuffle=False, verify=False))
        assert len(rows) == 8 and np.asarray(rows[0][0]).size == 3000
    finally:
        fsspec.filesystem("memory").rm("/jisu-limits", recursive=True)

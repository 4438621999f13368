"""Batches of a record data set in object storage, against moto's S3 server over HTTP: rows read
from the verified cache are gathered into the batch, rows read by ranges are not, and only
the first kind of stage is narrowed to one thread (its work holds the GIL)."""

from __future__ import annotations

import pytest

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV
from jisu.dataset.engine.plan import plan
from jisu.dataset.record import writer as writer_module

pytestmark = pytest.mark.timeout(60)


def payload(k: int) -> bytes:
    return bytes((k * 13 + i) % 256 for i in range(48))


def test_batches_from_the_cache_and_by_ranges_hold_the_written_rows(s3, tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)  # many record batches
    monkeypatch.setenv(CPUS_ENV, "4")
    url = f"s3://{s3.bucket}/batches/train.rec"
    writer = ds.FileWriter(url, shard_num=3)
    writer.add_schema({"blob": {"type": "bytes"}, "label": {"type": "int64"}})
    writer.write_raw_data([{"blob": payload(k), "label": k} for k in range(200)])
    writer.commit()

    cached = ds.RecordDataset(url, cache_dir=str(tmp_path / "cache")).batch(16)
    by_ranges = ds.RecordDataset(url, verify=False).batch(16)
    (stage,) = plan(cached).stages
    assert stage.workers == 1  # rows read from local verified copies
    (stage,) = plan(by_ranges).stages
    assert stage.workers == 4  # reads wait on the network: threads overlap them
    for data in (cached, by_ranges):
        iterator = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
        for _ in range(2):  # the first epoch fills the cache, the second reads from it
            labels = []
            for blobs, batch_labels in iterator:
                assert blobs.shape == (len(batch_labels), 48)
                for row, k in zip(blobs, batch_labels.tolist()):
                    assert row.tobytes() == payload(k)
                labels += batch_labels.tolist()
            assert sorted(labels) == list(range(200))

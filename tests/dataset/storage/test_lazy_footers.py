"""What a data set in object storage asks of its shards (jisu/dataset/record/remote.py):
footers only where a read by ranges needs them (with a cache and ``verify``, the downloads
into the cache are all that epoch 1 fetches of the shards), nothing of a shard whose verified
copy is in the cache, and a shard whose footer disagrees with the manifest still fails,
naming it, whether it is read from the cache or by ranges (moto)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.validate import MalformedFileError

from .test_records_s3 import shard_gets

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)


def write(url: str, kind: str = "int64", rows: int = 64, shards: int = 2) -> None:
    writer = ds.FileWriter(url, shard_num=shards)
    writer.add_schema({"k": {"type": kind}, "v": {"type": "float32", "shape": [64]}})
    writer.write_raw_data([{"k": k, "v": np.full(64, k, np.float32)} for k in range(rows)])
    writer.commit()


def keys(values) -> list[int]:
    return [int(row[0]) for row in values]


def test_with_a_cache_and_checks_epoch_1_fetches_each_shard_byte_once(s3, tmp_path, monkeypatch):
    url = f"s3://{s3.bucket}/once/train.rec"
    write(url)
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the reads go through the counting proxy
    fs = s3.fs()
    sizes = {
        path.rsplit("/", 1)[-1]: fs.size(path)
        for path in fs.ls(f"{s3.bucket}/once")
        if not path.endswith(".manifest.json")
    }
    s3.proxy.reset()
    options = {"endpoint_url": s3.proxy.url}
    data = ds.RecordDataset(
        url, shuffle=False, cache_dir=str(tmp_path / "cache"), storage_options=options
    )
    assert keys(data.create_tuple_iterator(num_epochs=1, output_numpy=True)) == list(range(64))
    fetched: dict[str, int] = {}
    for path, _, nbytes in shard_gets(s3):
        name = path.rsplit("/", 1)[-1]
        fetched[name] = fetched.get(name, 0) + nbytes
    assert fetched == sizes  # the downloads only: no footer fetched by ranges besides them


def swap_in_float_shards(s3, url: str, prefix: str) -> str:
    """Replace the int64 shards of ``url`` by float64 shards of the same rows, with the
    manifest's sizes and checksums updated to them: every check passes, the footers (schema)
    disagree with the manifest's schema. The first shard's URL."""
    other = f"s3://{s3.bucket}/{prefix}-float/train.rec"
    write(other, kind="float64")
    fs = s3.fs()
    manifest_key = f"{s3.bucket}/{prefix}/train.rec.manifest.json"
    manifest = json.loads(fs.cat(manifest_key))
    floats = json.loads(fs.cat(f"{s3.bucket}/{prefix}-float/train.rec.manifest.json"))
    for mine, theirs in zip(manifest["shards"], floats["shards"]):
        data = fs.cat(f"{s3.bucket}/{prefix}-float/{theirs['file']}")
        fs.pipe_file(f"{s3.bucket}/{prefix}/{mine['file']}", data)
        mine["bytes"], mine["crc32"] = theirs["bytes"], theirs["crc32"]
    fs.pipe_file(manifest_key, json.dumps(manifest).encode())
    return f"s3://{s3.bucket}/{prefix}/{manifest['shards'][0]['file']}"


@pytest.mark.parametrize("cached", [True, False])
def test_a_footer_that_disagrees_with_the_manifest_fails_naming_the_shard(s3, tmp_path, cached):
    url = f"s3://{s3.bucket}/bad{int(cached)}/train.rec"
    write(url)
    shard_url = swap_in_float_shards(s3, url, f"bad{int(cached)}")
    cache = str(tmp_path / "cache") if cached else None
    with pytest.raises(MalformedFileError, match="schema") as info:
        data = ds.RecordDataset(url, shuffle=False, cache_dir=cache)  # no cache: fails here
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert shard_url in str(info.value)


def test_a_data_set_whose_shards_are_all_cached_opens_without_asking_for_them(
    s3, tmp_path, monkeypatch
):
    """Reopened (a new run, a worker process) with every shard's verified copy in the cache,
    the reader asks storage for the manifest only: no HEAD, no GET of a shard."""
    url = f"s3://{s3.bucket}/warm/train.rec"
    write(url, shards=3)
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # through the counting proxy
    options = {"endpoint_url": s3.proxy.url}
    cache = str(tmp_path / "cache")
    first = ds.RecordDataset(url, shuffle=False, cache_dir=cache, storage_options=options)
    assert keys(first.create_tuple_iterator(num_epochs=1, output_numpy=True)) == list(range(64))
    s3.proxy.reset()
    again = ds.RecordDataset(url, shuffle=False, cache_dir=cache, storage_options=options)
    assert keys(again.create_tuple_iterator(num_epochs=1, output_numpy=True)) == list(range(64))
    pickle.loads(pickle.dumps(again.reader))  # as a worker process opens it
    shards = [path for _, path in s3.proxy.requests if ".g" in path.rsplit("/", 1)[-1]]
    assert shards == []
    assert s3.proxy.requests  # the manifest was read through the proxy

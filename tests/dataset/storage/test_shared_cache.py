"""Readers in several processes sharing one bounded ``cache_dir`` (issue 47, item 5), against
moto's server over HTTP: they evict each other's shards at any moment, and used to fail 1 to 3
epochs of 9 with ``FileNotFoundError`` when a shard was evicted between its download (or
lookup) and its open. The cache now hands a shard over open, so eviction at any later moment
is harmless.

The interleaving is forced rather than left to timing: in each child, every time the cache
hands a shard over (``ShardCache.lookup`` / ``fetch`` return), every shard in the folder is
evicted at once, under the folder's eviction lock, as another process needing the room
would do at that very moment. Three such children run at once on a cache that holds one shard
of four, a fresh reader each epoch, and check every row of every epoch.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jisu.dataset as ds
from jisu.dataset.record import writer as writer_module

pytestmark = pytest.mark.timeout(150)
REPO = Path(__file__).resolve().parents[3]
ROWS, SHARDS, EPOCHS = 64, 4, 3

CHILD = textwrap.dedent(
    """
    import contextlib, json, os, sys
    sys.path.insert(0, {repo!r})
    import jisu.dataset as ds
    from jisu.dataset.record import storage

    config = json.loads(sys.argv[1])
    folder = config["cache"]
    evictions = [0]

    def evict_all():  # another reader of the folder, making room at this very moment
        with storage._flock(os.path.join(folder, ".evict.lock")):
            for name in os.listdir(folder):
                if name.endswith(storage.CACHE_SUFFIX):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(folder, name))
                        evictions[0] += 1

    def evicting(method):
        def wrapper(*args, **kwargs):
            found = method(*args, **kwargs)
            if found is not None:
                evict_all()
            return found
        return wrapper

    storage.ShardCache.lookup = evicting(storage.ShardCache.lookup)
    storage.ShardCache.fetch = evicting(storage.ShardCache.fetch)
    out = {{"epochs": []}}
    try:
        for epoch in range(config["epochs"]):
            data = ds.RecordDataset(
                config["url"], cache_dir=folder, cache_size=config["size"], shuffle=True
            )
            it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
            xs = []
            for x, blob in it:
                assert bytes(blob) == bytes([int(x) % 256]) * len(blob), int(x)
                xs.append(int(x))
            out["epochs"].append(sorted(xs))
    except Exception as exc:
        out["error"] = f"{{type(exc).__name__}}: {{exc}}"
    out["evictions"] = evictions[0]
    print(json.dumps(out))
    """
)


def test_processes_sharing_a_small_cache_read_every_epoch(s3, tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)
    url = f"s3://{s3.bucket}/shared/train.rec"
    writer = ds.FileWriter(url, shard_num=SHARDS)
    writer.add_schema({"x": {"type": "int64"}, "blob": {"type": "bytes"}})
    writer.write_raw_data([{"x": k, "blob": bytes([k % 256]) * 2000} for k in range(ROWS)])
    writer.commit()
    sizes = [s3.fs().size(p.removeprefix("s3://")) for p in writer.paths]
    cache = tmp_path / "cache"
    config = {"url": url, "cache": str(cache), "size": max(sizes), "epochs": EPOCHS}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD.format(repo=str(REPO)), json.dumps(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for _ in range(3)
    ]
    for child in children:
        stdout, stderr = child.communicate(timeout=140)
        assert child.returncode == 0, stderr[-3000:]
        seen = json.loads(stdout.splitlines()[-1])
        assert "error" not in seen, seen["error"]
        assert seen["epochs"] == [list(range(ROWS))] * EPOCHS
        assert seen["evictions"] >= SHARDS  # the interleaving was forced, every shard at least


def test_a_cached_shard_whose_descriptor_was_let_go_survives_its_eviction(
    s3, tmp_path, monkeypatch
):
    """A process holding many files keeps only some descriptors (pread's pool) and reopens
    the others by name: a cached shard evicted meanwhile by another reader used to fail its
    reads ("replaced or removed while being read"). Here no file is pinned and one descriptor
    is kept: every shard's descriptor is let go, then the folder is emptied."""
    from jisu.dataset.record import pread, remote

    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)
    monkeypatch.setattr(pread, "MAX_OPEN_FILES", 0)
    monkeypatch.setattr(pread, "POOLED_FILES", 1)
    monkeypatch.setattr(remote, "VIEW_BATCHES", 0)  # every row read from the file again
    monkeypatch.setattr(remote, "VIEW_BYTES", 0)
    url = f"s3://{s3.bucket}/pooled/train.rec"
    writer = ds.FileWriter(url, shard_num=SHARDS)
    writer.add_schema({"x": {"type": "int64"}, "blob": {"type": "bytes"}})
    writer.write_raw_data([{"x": k, "blob": bytes([k % 256]) * 2000} for k in range(ROWS)])
    writer.commit()
    cache = tmp_path / "cache"
    data = ds.RecordDataset(url, cache_dir=str(cache), shuffle=False)

    def epoch(data: ds.Dataset) -> list[int]:
        out = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
        assert all(bytes(b) == bytes([int(x) % 256]) * len(b) for x, b in out)
        return [int(x) for x, _ in out]

    assert epoch(data) == list(range(ROWS))  # every shard downloaded, then read from the cache
    evicted = [p for p in cache.iterdir() if p.name.endswith(".arrow")]
    assert len(evicted) == SHARDS
    for path in evicted:  # another reader's eviction
        path.unlink()
    assert epoch(data) == list(range(ROWS))
    links = [p for p in cache.iterdir() if ".tmp-" in p.name]  # this process's own links
    assert len(links) == SHARDS
    del data
    gc.collect()
    assert not [p for p in cache.iterdir() if ".tmp-" in p.name]  # gone with the reader

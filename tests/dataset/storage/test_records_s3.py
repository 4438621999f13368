"""Record data sets in object storage, against moto's S3 server over HTTP: write, read, shuffle,
shard, ranged reads, the shard cache, truncated and altered shards, the commit protocol."""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.convert import convert
from jisu.dataset.record.remote import RemoteRecordReader
from jisu.dataset.record.validate import MalformedFileError

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Record batches of 8 rows, so that small data sets have several batches and shards."""
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)


SCHEMA = {
    "i32": {"type": "int32"},
    "i64": {"type": "int64"},
    "f32": {"type": "float32"},
    "f64": {"type": "float64"},
    "text": {"type": "string"},
    "blob": {"type": "bytes"},
    "fixed": {"type": "float32", "shape": [2, 3]},
    "ragged": {"type": "int64", "shape": [-1, 2]},
}


def make_rows(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "i32": np.int32(k - 7),
            "i64": np.int64(k * 10**12),
            "f32": np.float32(k / 3),
            "f64": float(k) / 7,
            "text": f"row {k} ü",
            "blob": bytes(rng.integers(0, 256, k % 9, dtype=np.uint8)),
            "fixed": rng.random((2, 3), dtype=np.float32),
            "ragged": rng.integers(0, 100, (k % 4, 2)),
        }
        for k in range(n)
    ]


def write(name: str, rows: list[dict], shards: int = 1, **kwargs: object) -> ds.FileWriter:
    writer = ds.FileWriter(name, shard_num=shards, **kwargs)
    writer.add_schema(SCHEMA)
    writer.write_raw_data(rows)
    writer.commit()
    return writer


def read_all(dataset: ds.Dataset) -> list[tuple]:
    it = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [tuple(np.asarray(c) for c in row) for row in it]


def expected(rows: list[dict]) -> list[tuple]:
    """The rows as the reader should give them, built from the written values alone."""
    out = []
    for r in rows:
        out.append(
            (
                np.array(r["i32"], np.int32),
                np.array(r["i64"], np.int64),
                np.array(r["f32"], np.float32),
                np.array(r["f64"], np.float64),
                np.array(r["text"]),
                np.frombuffer(r["blob"], np.uint8),
                np.asarray(r["fixed"], np.float32),
                np.asarray(r["ragged"], np.int64).reshape(-1, 2),
            )
        )
    return out


def assert_rows_equal(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
            np.testing.assert_array_equal(a, b)


def wait_fills(guard: float = 300.0) -> None:
    """Wait until no background cache fill of this process runs: until none is alive (a fill
    running can be followed by another), not one pass of 30 s joins, which a loaded machine
    outlasted (a shard evicted while the test listed the cache). ``guard``: a hang guard."""
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        fills = [t for t in threading.enumerate() if t.name == "jisu-cache-fill" and t.is_alive()]
        if not fills:
            return
        for thread in fills:
            thread.join(max(0.0, deadline - time.monotonic()))


def shard_gets(s3) -> list:
    """GET requests the proxy saw for shard objects (not manifests, not listings)."""
    return [g for g in s3.proxy.gets if ".g" in g[0].rsplit("/", 1)[-1]]


def test_round_trip_every_column_type_equals_the_local_data_set(s3, tmp_path):
    rows = make_rows(150)
    url = f"s3://{s3.bucket}/sets/train.rec"
    writer = write(url, rows, shards=3)
    assert all(p.startswith(url + ".g") for p in writer.paths)
    write(str(tmp_path / "train.rec"), rows, shards=3)
    remote = read_all(ds.RecordDataset(url, shuffle=False))
    assert_rows_equal(remote, expected(rows))
    assert_rows_equal(
        remote, read_all(ds.RecordDataset(str(tmp_path / "train.rec"), shuffle=False))
    )
    # the data set opens by its manifest or a shard's name too
    assert len(read_all(ds.RecordDataset(url + ".manifest.json", shuffle=False))) == 150
    assert len(read_all(ds.RecordDataset(writer.paths[1], shuffle=False))) == 150


@pytest.mark.parametrize("shuffle", [True, ds.Shuffle.FILES, ds.Shuffle.INFILE])
def test_shuffle_and_shard_give_the_local_rows(s3, tmp_path, shuffle):
    rows = make_rows(60, seed=1)
    url = f"s3://{s3.bucket}/train.rec"
    write(url, rows, shards=2)
    write(str(tmp_path / "train.rec"), rows, shards=2)
    seen = []
    for shard_id in range(3):
        options = dict(shuffle=shuffle, num_shards=3, shard_id=shard_id)
        local = read_all(ds.RecordDataset(str(tmp_path / "train.rec"), **options))
        remote = read_all(ds.RecordDataset(url, verify=False, **options))
        assert_rows_equal(remote, local)
        seen += [int(r[0]) for r in remote]
    assert sorted(seen) == sorted(int(r["i32"]) for r in rows)  # 60 rows, 3 equal shards


def big_rows(n: int) -> list[dict]:
    """Rows of ~1 KiB (8 rows per record batch)."""
    return [{"k": np.int64(k), "v": np.full(256, k, np.float32)} for k in range(n)]


def write_big(url: str, n: int, shards: int = 1, **kwargs: object) -> ds.FileWriter:
    writer = ds.FileWriter(url, shard_num=shards, **kwargs)
    writer.add_schema({"k": {"type": "int64"}, "v": {"type": "float32", "shape": [256]}})
    writer.write_raw_data(big_rows(n))
    writer.commit()
    return writer


def test_one_row_fetches_its_record_batch_not_the_shard(s3, monkeypatch):
    # storage_options' endpoint (the counting proxy) works without AWS_ENDPOINT_URL
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    options = {"endpoint_url": s3.proxy.url}
    url = f"s3://{s3.bucket}/big.rec"
    writer = write_big(url, 2048, storage_options=options)
    shard_bytes = s3.fs().info(writer.paths[0].removeprefix("s3://"))["size"]
    assert shard_bytes > 2 * 1024 * 1024
    s3.proxy.reset()
    reader = RemoteRecordReader(url, verify=False, storage_options=options)
    row = reader[1500]
    assert int(row[0]) == 1500 and (row[1] == 1500).all()
    fetched = sum(n for _, _, n in shard_gets(s3))
    # the footer (the last 64 KiB, fetched once) and one record batch of 8 rows (8 KiB)
    assert 0 < fetched < shard_bytes / 20, (fetched, shard_bytes)
    s3.proxy.reset()
    assert int(reader[7][0]) == 7  # another batch: one GET of its bytes alone
    (one_get,) = [n for _, _, n in shard_gets(s3)]
    assert 8 * 1024 <= one_get < 9 * 1024  # 8 rows of 1 KiB and the batch's metadata
    assert all(rng is not None for _, rng, _ in shard_gets(s3))  # ranged GETs only


def test_without_the_extra_a_url_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    with pytest.raises(ImportError, match=r'pip install "jisu\[s3\]"'):
        ds.RecordDataset("s3://bucket/train.rec")


def test_the_cache_serves_later_epochs_without_remote_bytes(s3, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    options = {"endpoint_url": s3.proxy.url}
    rows = make_rows(40)
    url = f"s3://{s3.bucket}/c/train.rec"
    write(url, rows, shards=2, storage_options=options)
    cache = tmp_path / "cache"
    s3.proxy.reset()
    data = ds.RecordDataset(url, verify=False, storage_options=options, cache_dir=str(cache))
    first = read_all(data)
    assert shard_gets(s3)  # the first epoch read the shards remotely (ranges, then the fills)
    wait_fills()
    assert len([n for n in os.listdir(cache) if n.endswith(".arrow")]) == 2
    s3.proxy.reset()
    second = read_all(data)
    assert shard_gets(s3) == []
    assert sorted(int(r[0]) for r in second) == sorted(int(r[0]) for r in first)
    # a new reader (another process, another run) uses the verified copies, fetching no shard
    s3.proxy.reset()
    again = ds.RecordDataset(url, storage_options=options, cache_dir=str(cache), shuffle=False)
    assert_rows_equal(read_all(again), expected(rows))
    assert shard_gets(s3) == []


def test_a_corrupted_cache_file_is_fetched_again(s3, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    options = {"endpoint_url": s3.proxy.url}
    rows = make_rows(30)
    url = f"s3://{s3.bucket}/train.rec"
    writer = write(url, rows, storage_options=options)
    cache = tmp_path / "cache"
    read_all(ds.RecordDataset(url, storage_options=options, cache_dir=str(cache)))  # fills it
    (cached,) = [cache / n for n in os.listdir(cache) if n.endswith(".arrow")]
    original = cached.read_bytes()
    assert original == s3.fs().cat(writer.paths[0].removeprefix("s3://"))
    damaged = bytearray(original)
    damaged[len(damaged) // 2] ^= 0xFF
    cached.write_bytes(bytes(damaged))
    s3.proxy.reset()
    data = ds.RecordDataset(url, storage_options=options, cache_dir=str(cache), shuffle=False)
    assert_rows_equal(read_all(data), expected(rows))
    assert sum(n for _, _, n in shard_gets(s3)) >= len(original)  # fetched again
    assert cached.read_bytes() == original


def test_the_cache_size_bound_evicts_whole_shards(s3, tmp_path):
    rows = make_rows(90)
    url = f"s3://{s3.bucket}/train.rec"
    writer = write(url, rows, shards=3)
    sizes = [s3.fs().info(p.removeprefix("s3://"))["size"] for p in writer.paths]
    bound = max(sizes) + min(sizes) // 2  # room for one shard, not two
    cache = tmp_path / "cache"
    data = ds.RecordDataset(url, cache_dir=str(cache), cache_size=bound, shuffle=False)
    data.reader[0]  # waits for the first shard's check: its download into the cache
    wait_fills()
    kept = [cache / n for n in os.listdir(cache) if n.endswith(".arrow")]
    assert len(kept) == 1 and kept[0].stat().st_size in sizes
    assert sum(p.stat().st_size for p in kept) <= bound
    assert_rows_equal(read_all(data), expected(rows))
    wait_fills()
    kept = [cache / n for n in os.listdir(cache) if n.endswith(".arrow")]
    assert len(kept) >= 1 and sum(p.stat().st_size for p in kept) <= bound
    assert not [n for n in os.listdir(cache) if ".tmp-" in n]
    with pytest.raises(ValueError, match="cache_size must be an int >= 0"):
        ds.RecordDataset(url, cache_dir=str(cache), cache_size=-1)


def test_a_truncated_remote_shard_is_an_error_naming_its_url(s3):
    url = f"s3://{s3.bucket}/train.rec"
    writer = write(url, make_rows(50), shards=2)
    fs = s3.fs()
    key = writer.paths[1].removeprefix("s3://")
    fs.pipe_file(key, fs.cat(key)[:-100])
    with pytest.raises(MalformedFileError, match=rf"'{writer.paths[1]}'.*truncated"):
        ds.RecordDataset(url, verify=False)


def test_a_remote_shard_that_fails_its_checksum_is_detected(s3, tmp_path):
    url = f"s3://{s3.bucket}/train.rec"
    writer = write(url, make_rows(50))
    fs = s3.fs()
    key = writer.paths[0].removeprefix("s3://")
    data = bytearray(fs.cat(key))
    data[200] ^= 0x01  # same size, one bit off (in the first record batch's data)
    fs.pipe_file(key, bytes(data))
    with pytest.raises(MalformedFileError, match=rf"'{writer.paths[0]}'.*checksum"):
        read_all(ds.RecordDataset(url))  # built: object storage is not read at build time
    with pytest.raises(MalformedFileError, match=rf"'{writer.paths[0]}'.*checksum"):
        read_all(ds.RecordDataset(url, cache_dir=str(tmp_path / "cache")))
    # by ranges with a cache: the background fill finds it, the shard's next read fails
    cache = tmp_path / "cache2"
    reader = ds.RecordDataset(url, verify=False, cache_dir=str(cache)).reader
    reader[0]
    wait_fills()
    with pytest.raises(MalformedFileError, match=rf"'{writer.paths[0]}'.*checksum"):
        reader[1]
    assert not [n for n in os.listdir(cache) if n.endswith(".arrow") or ".tmp-" in n]


def test_the_writer_never_replaces_an_existing_data_set_unless_told(s3):
    url = f"s3://{s3.bucket}/train.rec"
    first_rows, second_rows = make_rows(20), make_rows(25, seed=5)
    first = write(url, first_rows)
    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True"):
        ds.FileWriter(url)
    # two writers racing: the second to commit fails (conditional PUT) and leaves nothing
    a = ds.FileWriter(f"s3://{s3.bucket}/race.rec")
    b = ds.FileWriter(f"s3://{s3.bucket}/race.rec")
    for w in (a, b):
        w.add_schema(SCHEMA)
        w.write_raw_data(first_rows)
    a.commit()
    with pytest.raises(FileExistsError, match="another writer committed"):
        b.commit()
    fs = s3.fs()
    listing = sorted(p.rsplit("/", 1)[1] for p in fs.ls(s3.bucket))
    assert sum(n.startswith("race.rec.g") for n in listing) == 1
    # overwrite: readers see the new data set, the old shards are removed
    second = write(url, second_rows, shards=2, overwrite=True)
    assert_rows_equal(read_all(ds.RecordDataset(url, shuffle=False)), expected(second_rows))
    listing = {p.rsplit("/", 1)[1] for p in fs.ls(s3.bucket, refresh=True)}
    assert not {p.rsplit("/", 1)[1] for p in first.paths} & listing
    assert {p.rsplit("/", 1)[1] for p in second.paths} <= listing


def test_a_commit_whose_answer_was_lost_keeps_its_shards(s3, monkeypatch):
    """The manifest's conditional PUT succeeds but its answer is lost: the retry finds the
    manifest (this writer's own) in place. The commit went through; its shards must stay."""
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    options = {"endpoint_url": s3.proxy.url}
    rows = make_rows(20, seed=6)
    url = f"s3://{s3.bucket}/lost.rec"
    s3.proxy.lose_put_answers.append("/lost.rec.manifest.json")
    write(url, rows, storage_options=options)
    assert s3.proxy.lose_put_answers == []  # the answer was lost, the PUT retried
    data = ds.RecordDataset(url, storage_options=options, shuffle=False)
    assert_rows_equal(read_all(data), expected(rows))


def test_save_and_convert_round_trip_through_s3(s3, tmp_path):
    rows = make_rows(33)
    source = ds.RecordDataset(str(write(str(tmp_path / "src.rec"), rows).file_name), shuffle=False)
    url = f"s3://{s3.bucket}/saved.rec"
    summary = source.save(url, num_files=2)
    assert summary["rows"] == 33 and all(f.startswith(url) for f in summary["files"])
    assert_rows_equal(read_all(ds.RecordDataset(url, shuffle=False)), expected(rows))
    # convert: remote to remote, then back to a local folder
    back = f"s3://{s3.bucket}/converted.rec"
    assert convert(url, back, shards=3)["rows"] == 33
    convert(back, str(tmp_path / "local.rec"))
    local = ds.RecordDataset(str(tmp_path / "local.rec"), shuffle=False)
    assert_rows_equal(read_all(local), expected(rows))
    with pytest.raises(FileExistsError):
        convert(url, back)


def test_a_class_map_round_trips_through_s3(s3, tmp_path):
    classes = {"cat": 0, "dog": 1, "狗": 1}
    url = f"s3://{s3.bucket}/classes.rec"
    writer = ds.FileWriter(url, shard_num=2)
    writer.add_schema(SCHEMA)
    writer.set_class_indexing(classes)
    writer.write_raw_data(make_rows(10))
    writer.commit()
    remote = ds.RecordDataset(url)
    assert remote.get_class_indexing() == classes
    assert pickle.loads(pickle.dumps(remote.reader)).class_indexing == classes
    convert(url, str(tmp_path / "local.rec"))  # kept by a conversion out of object storage
    assert ds.RecordDataset(str(tmp_path / "local.rec")).get_class_indexing() == classes
    # a malformed class map in a remote manifest is a MalformedFileError naming its URL
    s3.fs().pipe(
        f"{s3.bucket}/bad.rec.manifest.json",
        s3.fs().cat(f"{s3.bucket}/classes.rec.manifest.json").replace(b'"cat": 0', b'"cat": -1'),
    )
    with pytest.raises(MalformedFileError, match=r"class_indexing\['cat'\] must be an int"):
        ds.RecordDataset(f"s3://{s3.bucket}/bad.rec")


def test_a_reader_pickles_by_url(s3, tmp_path):
    rows = make_rows(20)
    url = f"s3://{s3.bucket}/train.rec"
    write(url, rows, shards=2)
    reader = ds.RecordDataset(url, cache_dir=str(tmp_path / "c")).reader
    clone = pickle.loads(pickle.dumps(reader))
    assert_rows_equal([clone[i] for i in range(20)], expected(rows))


def test_a_hostile_remote_manifest_is_refused_before_any_shard_is_read(s3):
    fs = s3.fs()
    url = f"s3://{s3.bucket}/train.rec"
    write(url, make_rows(5))
    key = f"{s3.bucket}/train.rec.manifest.json"
    text = fs.cat(key).decode()
    import json

    manifest = json.loads(text)
    manifest["shards"][0]["file"] = "../other/train.rec"
    fs.pipe_file(key, json.dumps(manifest).encode())
    with pytest.raises(MalformedFileError, match="not a plain file name"):
        ds.RecordDataset(url)
    fs.pipe_file(key, b"[" * 10 + b"]" * 10)
    with pytest.raises(MalformedFileError, match="not a jisu record manifest"):
        ds.RecordDataset(url)


def test_any_fsspec_url_works_the_same(tmp_path):
    """memory:// (fsspec's in-memory filesystem): the same write, read, refusal and cache."""
    rows = make_rows(40, seed=3)
    url = "memory://jisu-test/any/train.rec"
    write(url, rows, shards=2)
    try:
        assert_rows_equal(read_all(ds.RecordDataset(url, shuffle=False)), expected(rows))
        with pytest.raises(FileExistsError):
            ds.FileWriter(url)
        cached = ds.RecordDataset(url, shuffle=False, cache_dir=str(tmp_path / "c"))
        assert_rows_equal(read_all(cached), expected(rows))
        assert len([n for n in os.listdir(tmp_path / "c") if n.endswith(".arrow")]) == 2
    finally:
        import fsspec

        fsspec.filesystem("memory").rm("/jisu-test", recursive=True)


def _read_through_cache(url: str, cache: str) -> list:
    """In a fresh process: open the data set through the shared cache, read every row."""
    data = ds.RecordDataset(url, cache_dir=cache, shuffle=False)
    return [int(r[0]) for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]


def test_processes_filling_one_cache_at_once_leave_one_verified_copy_per_shard(s3, tmp_path):
    import multiprocessing

    rows = make_rows(48, seed=2)
    url = f"s3://{s3.bucket}/train.rec"
    writer = write(url, rows, shards=3)
    cache = str(tmp_path / "cache")
    context = multiprocessing.get_context("fork")  # fsspec resets its event loop in a child
    with context.Pool(3) as pool:
        results = pool.starmap(_read_through_cache, [(url, cache)] * 3)
    assert results == [[int(r["i32"]) for r in rows]] * 3
    files = sorted(os.listdir(cache))
    assert not [n for n in files if ".tmp-" in n]
    copies = [n for n in files if n.endswith(".arrow")]
    assert len(copies) == 3
    remote = {s3.fs().cat(p.removeprefix("s3://")) for p in writer.paths}
    assert {(tmp_path / "cache" / n).read_bytes() for n in copies} == remote


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=300),
    ops=st.lists(
        st.tuples(st.sampled_from(["read", "seek0", "seek1", "seek2"]), st.integers(-50, 400)),
        max_size=12,
    ),
)
def test_a_ranged_file_reads_like_an_in_memory_file(data, ops):
    """RemoteFile (every read a ranged GET, the tail kept) against io.BytesIO."""
    import io

    import fsspec

    from jisu.dataset.record.storage import RemoteFile

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/jisu-fuzz/object", data)
    remote = RemoteFile(fs, "/jisu-fuzz/object", "memory://jisu-fuzz/object", len(data), tail=64)
    local = io.BytesIO(data)
    for op, n in ops:
        if op == "read":
            assert remote.read(n) == local.read(n)
        else:
            whence = int(op[-1])
            target = {0: 0, 1: local.tell(), 2: len(data)}[whence] + n
            if target < 0:
                continue  # BytesIO refuses a negative position; Arrow never asks for one
            assert remote.seek(n, whence) == local.seek(n, whence)
        assert remote.tell() == local.tell()


def test_a_cache_file_evicted_after_its_check_is_still_read(tmp_path, monkeypatch):
    """Another reader sharing the cache may evict a shard's copy right after this reader's
    check of it: the cache hands the copy over open, so it is still read, not an error."""
    from jisu.dataset.record.storage import ShardCache

    rows = make_rows(30, seed=4)
    (tmp_path / "remote").mkdir()
    url = (tmp_path / "remote" / "train.rec").as_uri()  # file://: fsspec's local filesystem
    write(url, rows, shards=2)
    cache = str(tmp_path / "cache")
    ds.RecordDataset(url, cache_dir=cache)  # verify: fills the cache
    lookup = ShardCache.lookup

    def evicted_after_check(self, *args):
        found = lookup(self, *args)
        if found is not None:
            os.remove(self.name(*args))  # what another process's eviction does
        return found

    monkeypatch.setattr(ShardCache, "lookup", evicted_after_check)
    data = ds.RecordDataset(url, verify=False, cache_dir=cache, shuffle=False)
    assert_rows_equal(read_all(data), expected(rows))

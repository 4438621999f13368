"""The node-local shard cache (``cache_dir``) without room, against moto's S3 server over HTTP
(issue 26): opening used to fail with a bare ``OSError: [Errno 28]`` naming no path; now the
shards are verified all the same, a warning names the folder, and rows are read by ranges. A
cached copy truncated while it is read is an error naming it, not a SIGBUS."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

import jisu.dataset as ds
from jisu.dataset.record import storage
from jisu.dataset.record import writer as writer_module

pytestmark = pytest.mark.timeout(90)
REPO = Path(__file__).resolve().parents[3]
SCHEMA = {"x": {"type": "int64"}, "blob": {"type": "bytes"}}


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)


def write(url: str, rows: int = 40, shards: int = 2, size: int = 3000) -> None:
    writer = ds.FileWriter(url, shard_num=shards)
    writer.add_schema(SCHEMA)
    writer.write_raw_data([{"x": k, "blob": bytes([k % 256]) * size} for k in range(rows)])
    writer.commit()


def xs(data: ds.Dataset) -> list[int]:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        rows = list(it)
    finally:
        it.close()
    assert all(bytes(r[1]) == bytes([int(r[0]) % 256]) * len(r[1]) for r in rows)
    return sorted(int(r[0]) for r in rows)


@pytest.fixture
def full_disk(monkeypatch):
    """Writes of the cache's temporary files go to /dev/full: the kernel's own ENOSPC."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")

    def open_(path, mode="r", *args, **kwargs):
        if ".tmp-" in os.fspath(path) and "w" in mode:
            return builtins.open("/dev/full", mode, *args, **kwargs)
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(storage, "open", open_, raising=False)
    monkeypatch.setattr(storage, "_warned_full", set())


def cached_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


@pytest.mark.parametrize("verify", [True, False])
def test_a_full_cache_dir_reads_by_ranges_with_a_warning_naming_it(s3, tmp_path, full_disk, verify):
    url = f"s3://{s3.bucket}/train.rec"
    write(url)
    cache = tmp_path / "cache"
    with pytest.warns(RuntimeWarning, match="has no room") as caught:
        data = ds.RecordDataset(url, cache_dir=str(cache), verify=verify, shuffle=False)
        assert xs(data) == list(range(40))
        if not verify:  # the background fill that met the full disk
            for thread in threading.enumerate():
                if thread.name == "jisu-cache-fill":
                    thread.join(10)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len([m for m in messages if "has no room" in m]) == 1  # once per folder
    assert f"'{cache}'" in messages[0] and "No space left on device" in messages[0]
    assert "ranged requests" in messages[0] and "cache_dir" in messages[0]
    assert cached_files(cache) == []  # nothing half-written left behind
    reader = data.reader
    assert reader.cache.full and all(shard.local is None for shard in reader._shards)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second epoch: no new warning, same rows
        assert xs(data) == list(range(40))


def test_a_damaged_shard_is_still_an_error_when_the_cache_is_full(s3, tmp_path, full_disk):
    """No room to cache is no reason to skip the checksum."""
    url = f"s3://{s3.bucket}/train.rec"
    write(url, shards=1)
    fs = s3.fs()
    (shard,) = [p for p in fs.ls(s3.bucket) if not p.endswith(".manifest.json")]
    data = bytearray(fs.cat_file(shard))
    data[100] ^= 1
    fs.pipe_file(shard, bytes(data))
    data = ds.RecordDataset(url, cache_dir=str(tmp_path / "cache"))  # no row read yet
    with pytest.raises(ValueError, match="does not match its checksum") as info:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert shard in str(info.value) and cached_files(tmp_path / "cache") == []


CHILD = textwrap.dedent(
    """
    import json, os, resource, signal, sys, time, warnings
    sys.path.insert(0, {repo!r})
    import jisu.dataset as ds
    from jisu.dataset.record import writer as writer_module

    config = json.loads(sys.argv[1])
    writer_module.MAX_BLOCK_ROWS = 8
    out = {{}}
    if config["file_size"]:  # writes past it fail with EFBIG (the signal is ignored)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["file_size"], resource.RLIM_INFINITY))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = ds.RecordDataset(config["url"], cache_dir=config["cache"], shuffle=False)
        if config["truncate"]:  # read tasks sized by time: a few dozen rows read ahead
            data = data.map(lambda x: (time.sleep(0.0005), x)[1], input_columns=["x"])
        rows = 0
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            for _ in it:
                rows += 1
                if rows == 10 and config["truncate"]:
                    for name in os.listdir(config["cache"]):
                        if name.endswith(".arrow"):
                            os.truncate(os.path.join(config["cache"], name), 4096)
        except Exception as exc:
            out["error"] = [[k.__name__ for k in type(exc).__mro__], str(exc)]
        finally:
            it.close()
    out["rows"] = rows
    out["warnings"] = [str(w.message) for w in caught]
    out["cached"] = sorted(n for n in os.listdir(config["cache"]) if not n.endswith(".lock"))
    print(json.dumps(out))
    """
)


def run_child(url: str, cache: Path, file_size: int = 0, truncate: bool = False) -> dict:
    """Open ``url`` with ``cache`` in a child process (under a file-size limit, or cutting the
    cached copies after 10 rows) and read every row; what it saw. A SIGBUS fails here."""
    config = {"url": url, "cache": str(cache), "file_size": file_size, "truncate": truncate}
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(repo=str(REPO)), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=80,
        cwd=REPO,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_FSIZE")
def test_a_cache_that_cannot_grow_falls_back_in_a_real_process(s3, tmp_path):
    """No patching: the child may not write files past 16 KiB (EFBIG, as a full disk refuses
    with ENOSPC), and its shards are ~60 KB."""
    url = f"s3://{s3.bucket}/train.rec"
    write(url)
    cache = tmp_path / "cache"
    cache.mkdir()
    seen = run_child(url, cache, file_size=16 << 10)
    assert seen["rows"] == 40 and "error" not in seen, seen
    (warning,) = [w for w in seen["warnings"] if "has no room" in w]
    assert f"'{cache}'" in warning and "File too large" in warning
    assert seen["cached"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs truncate semantics")
def test_a_cached_copy_truncated_while_read_is_an_error_naming_it(s3, tmp_path):
    """The cached copies used to be memory-mapped: cutting one under the reader was a
    SIGBUS. They are read by pread now: the error names the cache file."""
    url = f"s3://{s3.bucket}/train.rec"
    write(url, rows=400, shards=1)
    cache = tmp_path / "cache"
    seen = run_child(url, cache)  # fills the cache
    assert seen["rows"] == 400 and len(seen["cached"]) == 1, seen
    seen = run_child(url, cache, truncate=True)  # reads the cached copy, then cuts it
    types, message = seen["error"]
    assert "MalformedFileError" in types and "RuntimeError" in types, seen
    assert f"'{cache / seen['cached'][0]}': was truncated while being read" in message
    assert 10 <= seen["rows"] < 400 and len(message) < 2000

"""Hostile record manifests and shards: names outside the folder, FIFOs, malformed manifests,
swapped or mixed shards. Each gives one MalformedFileError naming the file, before any row."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.validate import MalformedFileError

SCHEMA = {"x": {"type": "int64"}, "s": {"type": "string"}, "v": {"type": "float32", "shape": [2]}}


def write(path, start: int, rows: int, shards: int = 2, **kwargs) -> str:
    """Rows x = start..start+rows-1 (s = f"r{x}", v = [x, -x]) in blocks of 3 rows."""
    writer = ds.FileWriter(str(path), shard_num=shards, **kwargs)
    writer.add_schema(SCHEMA)
    writer.write_raw_data(
        [
            {"x": x, "s": f"r{x}", "v": np.array([x, -x], np.float32)}
            for x in range(start, start + rows)
        ]
    )
    writer.commit()
    return str(path)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of 3 rows, so a few rows make several blocks per shard."""
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 3)


def xs(path) -> list[int]:
    data = ds.RecordDataset(str(path), columns_list=["x"], shuffle=False)
    return [int(r[0]) for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]


def edit_manifest(path: str, change) -> None:
    manifest = path + ".manifest.json"
    with open(manifest) as f:
        content = json.load(f)
    content = change(content) or content
    with open(manifest, "w") as f:
        json.dump(content, f)


# ---------------------------------------------------------------- shards outside the folder
@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_a_shard_outside_the_manifests_folder_is_refused(tmp_path, how):
    (tmp_path / "mine").mkdir()
    (tmp_path / "other").mkdir()
    mine = write(tmp_path / "mine" / "data.rec", 0, 10, shards=1)
    other = write(tmp_path / "other" / "x.rec", 100, 10, shards=1)
    with open(other + ".manifest.json") as f:
        entry = json.load(f)["shards"][0]  # its rows, bytes and crc: everything else matches
    entry["file"] = "../other/x.rec" if how == "relative" else other

    def point_outside(m):
        m["shards"][0] = entry
        m.pop("id")  # the other data set's shard carries its own id

    edit_manifest(mine, point_outside)
    with pytest.raises(MalformedFileError, match=r"data.rec.manifest.json'.*not a plain file name"):
        xs(mine)


def test_an_error_reveals_nothing_of_a_file_outside(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 12345)
    (tmp_path / "d").mkdir()
    path = write(tmp_path / "d" / "data.rec", 0, 5, shards=1)
    edit_manifest(path, lambda m: m["shards"][0].update(file=str(secret)))
    with pytest.raises(MalformedFileError) as caught:
        xs(path)
    assert "12345" not in str(caught.value) and "not a plain file name" in str(caught.value)


def test_a_shard_that_is_a_link_out_of_the_folder_is_refused_unread(tmp_path):
    """A link in a data set's archive pointing outside: neither served nor described."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * 12345)
    (tmp_path / "d").mkdir()
    path = write(tmp_path / "d" / "data.rec", 0, 5, shards=1)
    os.remove(path)
    os.symlink(secret, path)
    with pytest.raises(MalformedFileError, match="symbolic link out of the folder") as caught:
        xs(path)
    assert "12345" not in str(caught.value)


def test_a_shard_that_is_a_link_within_the_folder_is_read(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10, shards=2)
    os.rename(path + "1", tmp_path / "stored-elsewhere-here")
    os.symlink("stored-elsewhere-here", path + "1")  # relative, beside the manifest
    assert sorted(xs(path)) == list(range(10))


def test_a_data_set_in_a_download_cache_of_links_is_read(tmp_path):
    """Hugging Face's cache keeps snapshots/<rev>/<file> as links to ../../blobs/<hash>."""
    (tmp_path / "made").mkdir()
    made = write(tmp_path / "made" / "data.rec", 0, 10, shards=2)
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "rev1"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    for k, name in enumerate(sorted(os.listdir(tmp_path / "made"))):
        os.rename(tmp_path / "made" / name, blobs / f"hash{k}")
        os.symlink(f"../../blobs/hash{k}", snapshot / name)
    assert sorted(xs(snapshot / os.path.basename(made))) == list(range(10))


def test_a_fifo_named_as_a_shard_is_refused_at_once(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10, shards=2)
    fifo = path + "1"
    os.remove(fifo)
    os.mkfifo(fifo)
    # sizes agree (a FIFO has size 0), so only opening the FIFO would tell
    edit_manifest(path, lambda m: m["shards"][1].update(bytes=0, crc32=0))
    outcome: list = []

    def open_it():
        try:
            ds.RecordDataset(path)
            outcome.append("opened")
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    thread.join(60)  # a generous bound: the fixed reader answers in milliseconds
    if thread.is_alive():  # release the reader blocked in open(), then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        pytest.fail("opening the data set blocked on a FIFO named as a shard")
    assert isinstance(outcome[0], MalformedFileError), outcome
    assert outcome[0].path == fifo and "not a regular file" in str(outcome[0])


def test_a_folder_named_as_a_shard_is_refused(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10, shards=2)
    os.remove(path + "0")
    os.mkdir(path + "0")
    with pytest.raises(MalformedFileError, match=r"data.rec0'.*not a regular file"):
        xs(path)


# ---------------------------------------------------------------- malformed manifests
def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(m):
        target = m
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


def _delete(*keys):
    def change(m):
        target = m
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return change


MALFORMED = {
    "a list": (lambda m: [m], r"not a JSON object"),
    "no schema": (_delete("schema"), r"schema must be a non-empty dict"),
    "schema a list": (_set("schema", ["x"]), r"schema must be a non-empty dict"),
    "field not a dict": (_set("schema", "x", "int64"), r"field 'x' needs a type"),
    "unknown type": (_set("schema", "x", {"type": "int128"}), r"field 'x' needs a type"),
    "bad shape": (_set("schema", "v", {"type": "float32", "shape": "2"}), r"shape must be"),
    "huge shape": (_set("schema", "v", {"type": "float32", "shape": [2**40]}), r"at most"),
    "no shards": (_delete("shards"), r"shards must be a non-empty list"),
    "empty shards": (_set("shards", []), r"shards must be a non-empty list"),
    "shard a str": (_set("shards", 0, "data.rec0"), r"shards\[0\] must be a dict"),
    "no file": (_delete("shards", 0, "file"), r"shard name None is not a plain file name"),
    "file an int": (_set("shards", 0, "file", 7), r"shard name 7 is not a plain file name"),
    "rows a str": (_set("shards", 0, "rows", "6"), r"shards\[0\].rows must be an int"),
    "rows negative": (_set("shards", 1, "rows", -1), r"shards\[1\].rows must be an int"),
    "rows a bool": (_set("rows", True), r"rows must be an int"),
    "no bytes": (_delete("shards", 0, "bytes"), r"shards\[0\].bytes must be an int"),
    "crc too big": (
        _set("shards", 0, "crc32", 2**32),
        r"crc32 must be an int in \[0, 4294967296\)",
    ),
    "no block_rows": (_delete("block_rows"), r"block_rows must be an int"),
    "block_rows 0": (_set("block_rows", 0), r"block_rows must be positive"),
    "block_rows a float": (_set("block_rows", 3.0), r"block_rows must be an int"),
    "total differs": (_set("rows", 11), r"rows is 11 but its shards hold 10"),
    "index not a field": (_set("index_fields", ["nope"]), r"index_fields must be a list of field"),
    "version 2": (_set("version", 2), r"not a jisu record manifest of version <= 1"),
    "no format": (_delete("format"), r"not a jisu record manifest"),
    "desc a dict": (_set("desc", {}), r"desc must be a str"),
    "id a list": (_set("id", []), r"id must be a str"),
    "listed twice": (lambda m: m["shards"].__setitem__(1, m["shards"][0]), r"listed twice"),
    # block_rows=6 puts 6 rows in shard 0 and 4 in shard 1: these shards hold 6 and 4 rows
    # (blocks of 3) but in another layout, which would make locate() read wrong rows
    "other layout": (_set("block_rows", 6), r"data.rec0'.*record batches hold \[3, 3\]"),
    "deal mismatch": (_set("block_rows", 5), r"shard rows \[6, 4\] are not 10 rows dealt"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_manifest_gives_one_clear_error(tmp_path, case):
    change, message = MALFORMED[case]
    path = write(tmp_path / "data.rec", 0, 10, shards=2)  # shards of 6 and 4 rows
    edit_manifest(path, change)
    with pytest.raises(MalformedFileError, match=message) as caught:
        xs(path)
    assert caught.value.path.endswith("data.rec.manifest.json") or "data.rec0" in caught.value.path


def test_a_huge_manifest_is_refused_unread(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10)
    with open(path + ".manifest.json", "r+b") as f:
        f.truncate(writer_module.MAX_MANIFEST_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(MalformedFileError, match=r"has 67108865 bytes, more than a manifest may"):
        xs(path)


def test_deeply_nested_json_is_a_clear_error(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10)
    with open(path + ".manifest.json", "w") as f:
        f.write("[" * 200_000 + "]" * 200_000)
    with pytest.raises(MalformedFileError, match=r"nested too deeply"):
        xs(path)


def test_swapped_shard_entries_are_detected(tmp_path):
    path = write(tmp_path / "data.rec", 0, 12, shards=2)  # 6 and 6 rows: counts cannot tell
    edit_manifest(path, lambda m: m["shards"].reverse())
    with pytest.raises(MalformedFileError, match=r"is shard 1/2 of its data set, but .* 0/2"):
        xs(path)


def test_a_shard_of_another_data_set_is_detected(tmp_path):
    (tmp_path / "a").mkdir()
    a = write(tmp_path / "a" / "data.rec", 0, 12, shards=2)
    b = write(tmp_path / "b.rec", 100, 12, shards=2)
    os.replace(b + "1", a + "1")  # same shape, same place: only the data set id tells
    with open(b + ".manifest.json") as f:
        entry = json.load(f)["shards"][1]
    edit_manifest(a, lambda m: m["shards"][1].update(bytes=entry["bytes"], crc32=entry["crc32"]))
    with pytest.raises(MalformedFileError, match=r"data.rec1'.*belongs to another data set"):
        xs(a)


def test_a_shard_rewritten_within_one_mtime_tick_is_checked_again(tmp_path):
    path = write(tmp_path / "data.rec", 0, 10, shards=1)
    future = time.time_ns() + 3600 * 10**9  # "just modified", whatever the machine's speed
    os.utime(path, ns=(future, future))
    assert xs(path) == list(range(10))
    with open(path, "r+b") as f:  # same size, and the same mtime as the kernel's coarse
        f.seek(os.path.getsize(path) // 2)  # clock would give a rewrite in the same tick
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x55]))
    os.utime(path, ns=(future, future))
    with pytest.raises(MalformedFileError, match=r"does not match its checksum"):
        xs(path)


def test_a_reader_opening_while_the_data_set_is_replaced_sees_the_new_one(tmp_path, monkeypatch):
    from jisu.dataset.record import reader as reader_module

    path = write(tmp_path / "data.rec", 0, 10)
    real = reader_module.open_regular
    replaced = []

    def replace_first(*args):
        if not replaced:  # the manifest is read; now a writer replaces the data set
            replaced.append(write(tmp_path / "data.rec", 50, 7, overwrite=True))
        return real(*args)

    monkeypatch.setattr(reader_module, "open_regular", replace_first)
    assert xs(path) == list(range(50, 57))


def test_a_shard_name_longer_than_the_system_allows_is_a_malformed_file(tmp_path):
    # a damaged page table may name a shard by a few hundred characters: the reader's error,
    # not the OS's bare "File name too long" (found by test_mindrecord_fuzz)
    from jisu.dataset.record.validate import open_regular

    name = str(tmp_path / ("x" * 300))
    for listed_in in (None, str(tmp_path / "data.mindrecord")):
        with pytest.raises(MalformedFileError, match=r"longer than this system allows \(\d+ char"):
            open_regular(name, listed_in)

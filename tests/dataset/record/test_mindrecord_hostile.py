"""Malformed and hostile MindRecord files: each gets one MalformedFileError naming the file and
what is wrong (the page and row for a row), before any large allocation; shards never come from
outside the listing shard's folder; nothing blocks on a FIFO."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import threading
import tracemalloc
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from jisu.dataset.record.mindrecord import MindRecordReader, decode_ints, is_mindrecord
from jisu.dataset.record.validate import MalformedFileError

from .mindrecord_files import copy_set, header_of, row_records, snapshot, write_header


def read_all(path: Path | list) -> list[tuple]:
    files = str(path) if isinstance(path, Path) else [str(p) for p in path]
    return snapshot(MindRecordReader(files))


def first_page(h: dict, kind: str) -> dict:
    return next(p for p in h["page"] if p["page_type"] == kind)


def field(h: dict, name: str) -> dict:
    return h["schema"][0]["schema"][name]


# (edit of all_types' header, what the error must say): every one gave a raw TypeError,
# KeyError or IndexError naming no file, or read without complaint
HEADER_EDITS: list[tuple[Callable[[dict], None], str]] = [
    (lambda h: h.update(header_size="16384"), r"'header_size' must be an int"),
    (lambda h: h.update(header_size=-5), r"'header_size' must be an int"),
    (lambda h: h.update(page_size=None), r"'page_size' must be an int"),
    (lambda h: h.update(page_size=2**70), r"'page_size' must be an int"),
    (lambda h: h.update(page={}), r"'page' must be a list"),
    (lambda h: h["page"].__setitem__(0, "x"), r"page table entry 0 must be an object"),
    (lambda h: h["page"][1].update(page_size=-1), r"entry 1: page_size must be an int"),
    (lambda h: h["page"][1].update(page_size=2**40), r"entry 1: page_size must be an int"),
    (lambda h: h["page"][0].update(page_type="BLOB"), r"entry 0: page_type must be"),
    (lambda h: h["page"][0].update(page_id=1), r"entry 0: page_id must be an int in \[0, 0\]"),
    (lambda h: h["page"].reverse(), r"entry 0: page_id must be an int in \[0, 0\]"),
    (lambda h: h["page"][0].update(end_row_id=True), r"entry 0: end_row_id must be an int"),
    (lambda h: h["page"][0].update(page_type_id=1), r"page 0 must be blob page 0"),
    (lambda h: h["page"][0].update(start_row_id=2), r"page 0 must be blob page 0, of rows from 0"),
    (lambda h: h["page"][1].update(row_group_ids=None), r"entry 1: row_group_ids must be"),
    (
        lambda h: h["page"][1].update(row_group_ids=[{"id": 0, "offset": 9999}]),
        r"entry 1: a row group offset must be an int in \[0, 746\]",
    ),
    (
        lambda h: h["page"][1].update(row_group_ids=[{"id": 1, "offset": 0}]),
        r"raw page 1 lists row group 1 where group 0 of 1",
    ),
    (lambda h: h.update(schema={}), r"'schema' must list one object"),
    (lambda h: field(h, "id").update(type="int33"), r"schema field 'id' must be"),
    (lambda h: field(h, "name").update(shape=[2]), r"schema field 'name': a shape lists"),
    (lambda h: field(h, "vec").update(shape="3"), r"schema field 'vec': a shape lists"),
    (lambda h: field(h, "vec").update(shape=[0]), r"schema field 'vec': a shape lists"),
    (lambda h: field(h, "ivec").update(shape=[-1, -1]), r"schema field 'ivec': a shape lists"),
    (lambda h: h["schema"][0].update(blob_fields=["data"]), r"'blob_fields' must list the bytes"),
    (lambda h: h["schema"][0].update(blob_fields=[{}]), r"'blob_fields' must list the bytes"),
    (lambda h: h.update(shard_addresses="x"), r"'shard_addresses' must list 1 to 4096 shards"),
    (lambda h: h.update(shard_addresses=[]), r"'shard_addresses' must list 1 to 4096 shards"),
    (lambda h: h.update(version="4.0"), r"version '4.0'; MindSpore wrote versions 2.0 and 3.0"),
    (lambda h: h.update(version=3.0), r"version 3.0; MindSpore wrote versions 2.0 and 3.0"),
    (lambda h: h.pop("version"), r"version None; MindSpore wrote versions 2.0 and 3.0"),
]


@pytest.mark.parametrize("edit, message", HEADER_EDITS, ids=[m for _, m in HEADER_EDITS])
def test_a_malformed_header_field_is_named(tmp_path, edit, message):
    (shard,) = copy_set(tmp_path, "all_types")
    header = header_of(shard)
    edit(header)
    write_header(shard, header)
    with pytest.raises(MalformedFileError, match=message) as info:
        read_all(shard)
    assert info.value.path == str(shard)


@pytest.mark.parametrize(
    "damage, message",
    [
        (b"\xff" * 8, r"declares a 18446744073709551615-byte JSON header"),
        (struct.pack("<Q", 955) + b"[" * 955, r"has a corrupt JSON header"),
        (struct.pack("<Q", 3) + b"[1]", r"has a JSON header that is not an object"),
        (struct.pack("<Q", 3000), r"has a corrupt JSON header"),  # JSON, then zero padding
    ],
)
def test_a_corrupt_json_header_is_named(tmp_path, damage, message):
    (shard,) = copy_set(tmp_path, "all_types")
    data = bytearray(shard.read_bytes())
    data[: len(damage)] = damage
    shard.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=message):
        read_all(shard)


def test_an_emptied_page_table_is_an_error_not_zero_rows(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    header = header_of(shard)
    header["page"] = []
    write_header(shard, header)
    with pytest.raises(MalformedFileError, match=r"has 33514 bytes after its header"):
        read_all(shard)


def test_a_page_table_that_lost_its_last_page_is_an_error(tmp_path):
    first, second = copy_set(tmp_path, "raw_only")
    header = header_of(second)
    header["page"].pop()  # the raw page of the last row group: its 7 rows would vanish
    write_header(second, header)
    last = header["page"][-1]
    lost = second.stat().st_size - (
        header["header_size"] + last["page_id"] * header["page_size"] + last["page_size"]
    )
    with pytest.raises(
        MalformedFileError, match=rf"has {lost} bytes after its last page \(page 4\)"
    ):
        read_all(first)


def test_bytes_after_the_last_page_are_an_error(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    with open(shard, "ab") as f:
        f.write(b"\0" * 10)
    with pytest.raises(MalformedFileError, match=r"has 10 bytes after its last page \(page 1\)"):
        read_all(shard)


def test_a_blob_page_must_hold_the_rows_its_entry_says(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    header = header_of(first)
    header["page"][1]["end_row_id"] = 149
    write_header(first, header)
    with pytest.raises(
        MalformedFileError, match=r"blob page 1 holds 38 rows; the page table says 37"
    ):
        read_all(first)


def test_a_row_group_must_hold_the_rows_of_its_blob_page(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    header = header_of(first)
    # both pages' row counts move by one row, consistently, but the raw pages do not
    header["page"][0]["end_row_id"] = header["page"][1]["start_row_id"] = 111
    write_header(first, header)
    with pytest.raises(MalformedFileError, match=r"blob page 0 holds 112 rows; the page table"):
        read_all(first)


def test_a_row_that_runs_past_its_page_names_file_page_and_row(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    start, end = row_records(shard)[3]["raw"]
    data = bytearray(shard.read_bytes())
    length = end - start - 8 + 10_000
    data[start : start + 8] = struct.pack("<Q", length)
    shard.write_bytes(bytes(data))
    with pytest.raises(
        MalformedFileError, match=rf"raw page 1: row 3 \({length} bytes at byte {start}\) runs past"
    ):
        read_all(shard)


def test_a_blob_field_that_runs_past_its_row_names_file_page_and_row(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    start, _ = row_records(shard)[3]["blob"]
    data = bytearray(shard.read_bytes())
    data[start + 8 : start + 16] = (2**40).to_bytes(8, "big")  # the length of field 'data'
    shard.write_bytes(bytes(data))
    reader = MindRecordReader(str(shard))
    assert snapshot_row(reader, 2) and snapshot_row(reader, 4)  # the other rows read
    with pytest.raises(
        MalformedFileError,
        match=r"all_types.mindrecord': row 3 \(blob page 0, raw page 1\): blob field 'data' "
        r"\(1099511627776 bytes\) runs past its record's end",
    ):
        reader[3]


def snapshot_row(reader: MindRecordReader, index: int) -> tuple:
    return tuple(np.asarray(v).tobytes() for v in reader[index])


def test_raw_bytes_that_are_not_msgpack_are_named(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    start, _ = row_records(shard)[2]["raw"]
    data = bytearray(shard.read_bytes())
    data[start + 8] = 0xC1  # a byte msgpack never uses
    shard.write_bytes(bytes(data))
    with pytest.raises(
        MalformedFileError,
        match=r"row 2 \(blob page 0, raw page 1\): its raw record is not msgpack",
    ):
        MindRecordReader(str(shard))[2]


@pytest.mark.parametrize(
    "name, spec, message",
    [
        ("f64", {"type": "string"}, r"field 'f64': a string field holds 0.0"),
        ("big", {"type": "int32"}, r"field 'big': an int32 field holds 1099511627776"),
        ("name", {"type": "float64"}, r"field 'name': a float64 field holds 'row-0-"),
    ],
)
def test_a_raw_value_of_another_type_than_the_schema_is_named(tmp_path, name, spec, message):
    (shard,) = copy_set(tmp_path, "all_types")
    header = header_of(shard)
    header["schema"][0]["schema"][name] = spec
    write_header(shard, header)
    with pytest.raises(MalformedFileError, match=r"row 0 \(blob page 0, raw page 1\): " + message):
        MindRecordReader(str(shard))[0]


@pytest.mark.parametrize(
    "edit, message",
    [
        # the rows would lose a column unnoticed
        (lambda s: s.pop("f32"), r"its raw record holds \['f32'\], which the schema does not name"),
        (lambda s: s.update(extra={"type": "int32"}), r"its raw record lacks \['extra'\]"),
    ],
)
def test_a_raw_record_with_other_fields_than_the_schema_is_named(tmp_path, edit, message):
    (shard,) = copy_set(tmp_path, "all_types")
    header = header_of(shard)
    edit(header["schema"][0]["schema"])
    write_header(shard, header)
    with pytest.raises(MalformedFileError, match=r"row 0 \(blob page 0, raw page 1\): " + message):
        MindRecordReader(str(shard))[0]


def blob_field_at(shard: Path, row: int, name: str) -> int:
    """The file offset of a blob field's bytes (blob fields: 8-byte big-endian length each)."""
    start, _ = row_records(shard)[row]["blob"]
    data = shard.read_bytes()
    pos = start + 8
    for blob in header_of(shard)["schema"][0]["blob_fields"]:
        if blob == name:
            return pos + 8
        pos += 8 + int.from_bytes(data[pos : pos + 8], "big")
    raise KeyError(name)


def test_an_absurd_compressed_count_fails_before_allocating(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    at = blob_field_at(shard, 5, "ivec")
    data = bytearray(shard.read_bytes())
    data[at : at + 4] = b"\xff\xff\xff\xff"  # 4294967295 int32 values: 16 GiB
    shard.write_bytes(bytes(data))
    reader = MindRecordReader(str(shard))
    tracemalloc.start()
    try:
        with pytest.raises(
            MalformedFileError,
            match=r"row 5 .*field 'ivec': a compressed integer array of 12 bytes declares "
            r"4294967295 values",
        ):
            reader[5]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"\x00\x00", r"has no 4-byte count"),
        (b"\xff\xff\xff\xff" + bytes(8), r"of 12 bytes declares 4294967295 values"),
        (bytes.fromhex("00000002c00102"), r"needs 14 bytes but has 7"),  # widths 8 and 1
        (bytes.fromhex("00000001000506"), r"needs 6 bytes but has 7"),
        # 80 values (decoded vectorised) of 2 bytes each, given 1 byte each
        ((80).to_bytes(4, "big") + b"\x55" * 20 + bytes(80), r"needs 184 bytes but has 104"),
    ],
)
def test_decode_ints_refuses_bytes_that_are_no_compressed_array(payload, message):
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            decode_ints(memoryview(payload), np.dtype(np.int64))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_decode_ints_refuses_a_value_outside_the_field_type():
    payload = bytes.fromhex("00000001c0") + (2**40).to_bytes(8, "little")
    with pytest.raises(ValueError, match=r"holds a value outside int32"):
        decode_ints(memoryview(payload), np.dtype(np.int32))


def test_an_array_that_does_not_fit_its_shape_is_named(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    header = header_of(shard)
    header["schema"][0]["schema"]["dvec"]["shape"] = [3]  # the rows hold 2 float64 values
    write_header(shard, header)
    with pytest.raises(
        MalformedFileError, match=r"field 'dvec': 2 values do not fit the shape \[3\]"
    ):
        MindRecordReader(str(shard))[0]


# shard addresses: plain names beside the listing shard, distinct files, regular files


@pytest.mark.parametrize(
    "address",
    [
        "../other/raw_only.mindrecord1",
        "OTHER/raw_only.mindrecord1",  # an absolute path to the other data set
        "sub/raw_only.mindrecord1",
        "..",
        "",
        7,
        None,
    ],
)
def test_a_shard_address_outside_the_folder_is_refused(tmp_path, address):
    first, _ = copy_set(tmp_path / "data", "raw_only")
    copy_set(tmp_path / "other", "raw_only")
    copy_set(tmp_path / "data" / "sub", "raw_only")
    if address == "OTHER/raw_only.mindrecord1":
        address = str(tmp_path / "other" / "raw_only.mindrecord1")
    header = header_of(first)
    header["shard_addresses"][1] = address
    write_header(first, header)
    with pytest.raises(MalformedFileError, match=r"is not a plain file name") as info:
        read_all(first)
    assert info.value.path == str(first)


def test_a_repeated_shard_address_is_an_error_not_twice_the_rows(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    header = header_of(first)
    header["shard_addresses"].append("raw_only.mindrecord1")
    write_header(first, header)
    with pytest.raises(
        MalformedFileError, match=r"lists \['raw_only.mindrecord1'\] more than once"
    ):
        read_all(first)


def test_shards_that_name_other_shards_than_the_first_are_an_error(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    header = header_of(first)
    header["shard_addresses"].reverse()  # the rows would come in another order
    write_header(first, header)
    with pytest.raises(
        MalformedFileError,
        match=r"mindrecord1': names the shards \['raw_only.mindrecord0', 'raw_only.mindrecord1'\], "
        r"but '.*mindrecord0' names \['raw_only.mindrecord1', 'raw_only.mindrecord0'\]",
    ):
        read_all(first)


def test_one_file_under_two_shard_names_is_an_error(tmp_path):
    first, second = copy_set(tmp_path, "raw_only")
    os.link(second, tmp_path / "again.mindrecord")
    for shard in (first, second):  # every header names the three
        header = header_of(shard)
        header["shard_addresses"].append("again.mindrecord")
        write_header(shard, header)
    with pytest.raises(
        MalformedFileError, match=r"raw_only.mindrecord1' and '.*again.mindrecord' are one file"
    ):
        read_all(first)
    with pytest.raises(ValueError, match=r"are one file; name each shard once"):
        read_all([second, tmp_path / "again.mindrecord"])


def test_a_missing_shard_is_file_not_found_naming_the_listing_shard(tmp_path):
    first, second = copy_set(tmp_path, "raw_only")
    second.unlink()
    with pytest.raises(
        FileNotFoundError, match=r"raw_only.mindrecord1' \(listed in '.*raw_only.mindrecord0'\)"
    ):
        read_all(first)


def within(seconds: float, work: Callable[[], object]) -> object:
    """Run ``work`` in a thread; its result or exception, or fail if it has not ended in time
    (a blocked open of a FIFO: the thread stays blocked, as a daemon)."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_a_shard_is_refused_without_blocking(tmp_path):
    first, second = copy_set(tmp_path, "raw_only")
    second.unlink()
    os.mkfifo(second)
    with pytest.raises(
        MalformedFileError, match=r"raw_only.mindrecord1': is not a regular file \(listed in"
    ):
        within(10, lambda: read_all(first))
    assert within(10, lambda: is_mindrecord(str(second))) is False


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_an_index_is_refused_without_blocking(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    index = Path(f"{first}.db")
    index.unlink()
    os.mkfifo(index)
    with pytest.raises(MalformedFileError, match=r"mindrecord0.db': is not a regular file"):
        within(10, lambda: read_all(first))


def test_a_shard_or_index_that_links_out_of_the_folder_is_refused(tmp_path):
    outside = copy_set(tmp_path / "elsewhere", "raw_only")
    first, second = copy_set(tmp_path / "set", "raw_only")
    second.unlink()
    os.symlink(outside[1], second)  # the same bytes: only the link's target is wrong
    with pytest.raises(MalformedFileError, match=r"mindrecord1': is a symbolic link out of"):
        read_all(first)
    second.unlink()
    os.symlink(second.parent / "moved", second)  # a link beside it is fine
    shutil.copyfile(outside[1], second.parent / "moved")
    index = Path(f"{first}.db")
    index.unlink()
    os.symlink(Path(f"{outside[0]}.db"), index)
    with pytest.raises(MalformedFileError, match=r"mindrecord0.db': is a symbolic link out of"):
        read_all(first)
    index.unlink()
    assert len(read_all(first)) == len(read_all(outside[0]))


def test_an_index_sqlite_cannot_read_is_named(tmp_path):
    first, _ = copy_set(tmp_path, "raw_only")
    Path(f"{first}.db").write_bytes(b"not a database" * 100)
    with pytest.raises(
        MalformedFileError, match=r"mindrecord0.db': is not a readable MindRecord index"
    ) as info:
        read_all(first)
    assert info.value.path == f"{first}.db"


def test_an_index_with_another_row_count_is_named(tmp_path):
    (shard,) = copy_set(tmp_path, "all_types")
    with closing(sqlite3.connect(f"{shard}.db")) as conn:
        conn.execute("DELETE FROM INDEXES WHERE ROW_ID = 4")
        conn.commit()
    with pytest.raises(
        MalformedFileError, match=r"has 12 rows but its index '.*all_types.mindrecord.db' lists 11"
    ):
        read_all(shard)


def test_a_shard_whose_header_says_another_schema_is_named(tmp_path):
    first, second = copy_set(tmp_path, "raw_only")
    header = header_of(second)
    header["schema"][0]["schema"]["label"]["type"] = "int32"
    write_header(second, header)
    with pytest.raises(
        MalformedFileError, match=r"mindrecord1': has another schema than '.*mindrecord0'"
    ):
        read_all(first)


def test_an_untouched_copy_reads_as_the_fixture(tmp_path):
    """The damage above is all that differs: an untouched copy reads without complaint."""
    first, _ = copy_set(tmp_path, "raw_only")
    (shard,) = copy_set(tmp_path / "b", "all_types")
    assert len(read_all(first)) == 300 and len(read_all(shard)) == 12

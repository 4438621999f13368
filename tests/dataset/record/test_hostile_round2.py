"""Trust, round 2 (issue 26), the file readers: shards truncated while they are read (record,
TFRecord, MindRecord, CIFAR/MNIST) are an error naming the file, never a SIGBUS; TFRecord files
that would take absurd memory or disk (padded values, huge schema shapes, GZIP bombs, a full
TMPDIR) are refused naming the file and the record; and a hypothesis fuzzer of the TFRecord
reader (plain and GZIP, with and without a schema).

The truncation and memory probes run in a child process (a SIGBUS or an allocation past the
address-space limit fails the test instead of killing or starving pytest); each probe is a
function of this module that the child imports and runs.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record import pread, tfrecord_format
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.tfrecord_format import example_class, masked_crc
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources import vision_sets
from jisu.dataset.sources.tfrecord import TFRecordDataset

REPO = Path(__file__).resolve().parents[3]
MINDRECORD = REPO / "tests" / "fixtures" / "mindrecord"
LINUX = sys.platform.startswith("linux")
pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------------------ helpers
def example(features: dict[str, list]) -> bytes:
    """A serialized ``tf.train.Example``: bytes values as a bytes list, ints as an int64 list,
    floats as a float list."""
    message = example_class()()
    for name, values in features.items():
        entry = message.features.feature.add()
        entry.key = name
        if values and isinstance(values[0], bytes):
            entry.value.bytes_list.value.extend(values)
        elif values and isinstance(values[0], float):
            entry.value.float_list.value.extend(values)
        else:
            entry.value.int64_list.value.extend(values)
    return message.SerializeToString()


def framed(data: bytes) -> bytes:
    """One TFRecord record holding ``data``."""
    length = struct.pack("<Q", len(data))
    return (
        length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))
    )


def rows_of(data) -> list[tuple]:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return [tuple(row) for row in it]
    finally:
        it.close()


def error_of(exc: BaseException) -> dict:
    return {"types": [k.__name__ for k in type(exc).__mro__], "message": str(exc)}


CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    import jisu, torch  # the baseline the address-space limit is measured over
    sys.path.insert(0, {repo!r})
    from tests.dataset.record import test_hostile_round2 as probes

    def address_space():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024

    config = json.loads(sys.argv[1])
    if config["headroom"]:
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (address_space() + config["headroom"], hard))
    if config["file_size"]:  # a write past it fails with EFBIG (the signal is ignored)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["file_size"], resource.RLIM_INFINITY))
    for k, (name, args) in enumerate(config["probes"]):
        try:
            result = {{"value": getattr(probes, name)(*args)}}
        except BaseException as exc:
            result = probes.error_of(exc)
        print(json.dumps([k, result]), flush=True)
    """
)
HEADROOM = 1 << 30  # the address space a probe may add to `import jisu, torch`


def run_child(
    probes: list[tuple[str, list]], headroom: int = 0, file_size: int = 0, env: dict | None = None
) -> list[dict]:
    """Run probes (``(function name, args)``) one after the other in a child process, under
    an address-space limit of ``headroom`` bytes over its imports and a file-size limit (0:
    none); their results in order, each ``{"value": ...}`` or the error's ``types`` and
    ``message``. The child must exit normally: a SIGBUS fails here, with its stderr."""
    config = {"probes": probes, "headroom": headroom, "file_size": file_size}
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(repo=str(REPO)), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-3000:]}"
    results = dict(json.loads(line) for line in done.stdout.splitlines() if line.startswith("["))
    assert sorted(results) == list(range(len(probes))), done.stdout[-3000:]
    return [results[k] for k in range(len(probes))]


def probe_control_allocation() -> int:
    """More than the headroom: must fail, or the limit is not in force."""
    return int(np.ones(HEADROOM + (256 << 20), dtype=np.uint8).sum())


# ------------------------------------------------------------------ truncated while read
def paced(x: np.ndarray) -> np.ndarray:
    """A map that takes half a millisecond a row: the pipeline sizes its read tasks by time,
    so it then reads a few dozen rows ahead, not the whole file before the cut."""
    time.sleep(0.0005)
    return x


def read_and_truncate(data, victim: str, after: int = 10) -> dict:
    """Iterate ``data``; after ``after`` rows cut ``victim`` to 4096 bytes and go on. The rows
    read and the error met."""
    rows = 0
    data = data.map(paced, input_columns=[data.get_col_names()[0]])
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        for _ in it:
            rows += 1
            if rows == after:
                os.truncate(victim, 4096)
    except Exception as exc:
        return {"rows": rows, **error_of(exc)}
    finally:
        it.close()
    return {"rows": rows}


def probe_truncated_record_shard(
    folder: str, columns: list | None, copy_bytes: int, rows: int = 400, blob: int = 9000
) -> dict:
    """A shard of ``rows`` rows (``blob`` bytes each, in batches of 8 rows) read, and cut
    after 10 rows; ``copy_bytes``: the columns copied whole (0: every one read row by row).
    Rows read ahead before the cut may come from copies; the rest must fail."""
    from jisu.dataset.record import arrow_file

    writer_module.MAX_BLOCK_ROWS = 8  # many record batches
    arrow_file.COPY_COLUMN_BYTES = arrow_file.COPY_BUDGET_BYTES = copy_bytes
    path = os.path.join(folder, "data.rec")
    writer = ds.FileWriter(path)
    schema = {"x": {"type": "int64"}, "blob": {"type": "bytes"}}
    writer.add_schema({**schema, "v": {"type": "float32", "shape": [64]}})
    values = [(k, bytes([k % 256]) * blob, np.full(64, k, np.float32)) for k in range(rows)]
    writer.write_raw_data([{"x": x, "blob": b, "v": v} for x, b, v in values])
    writer.commit()
    data = ds.RecordDataset(path, columns_list=columns, shuffle=False, num_parallel_workers=2)
    return {**read_and_truncate(data, path), "path": path}


def probe_truncated_tfrecord(folder: str) -> dict:
    path = os.path.join(folder, "data.tfrecord")
    with open(path, "wb") as f:
        for k in range(300):
            f.write(framed(example({"blob": [bytes([k % 256]) * 2000], "label": [k]})))
    data = TFRecordDataset(path, shuffle=False, num_parallel_workers=2)
    return {**read_and_truncate(data, path), "path": path}


def probe_truncated_mindrecord(folder: str) -> dict:
    for name in ("raw_only.mindrecord0", "raw_only.mindrecord1"):
        shutil.copyfile(MINDRECORD / name, os.path.join(folder, name))
    second = os.path.join(folder, "raw_only.mindrecord1")  # its rows come after the first's
    data = ds.MindDataset(os.path.join(folder, "raw_only.mindrecord0"), shuffle=False)
    return {**read_and_truncate(data, second), "path": second}


def probe_truncated_cifar(folder: str) -> dict:
    path = os.path.join(folder, "test_batch.bin")
    records = np.arange(100 * 3073, dtype=np.int64).astype(np.uint8).reshape(100, 3073)
    records[:, 0] = np.arange(100) % 10
    records.tofile(path)
    data = ds.Cifar10Dataset(folder, usage="test", shuffle=False)
    return read_and_truncate(data, path)


@pytest.mark.skipif(not LINUX, reason="needs /proc and Linux's truncate semantics")
def test_shards_truncated_while_read_are_errors_naming_the_file_not_sigbus(tmp_path):
    """``os.truncate(shard, 4096)`` after 10 rows used to kill the process with SIGBUS (exit
    135): the readers mapped the files. Now they read by pread: the child exits normally and
    the iteration fails with the reader's MalformedFileError (also a RuntimeError, the
    iteration contract) naming the file."""
    cases = {
        "record, batches copied": ("probe_truncated_record_shard", [None, 64 << 20]),
        "record, scalars only": ("probe_truncated_record_shard", [["x"], 64 << 10, 400, 8]),
        "record, row by row": ("probe_truncated_record_shard", [["blob", "v"], 0]),
        "tfrecord": ("probe_truncated_tfrecord", []),
        "mindrecord": ("probe_truncated_mindrecord", []),
    }
    probes = []
    for k, (name, args) in enumerate(cases.values()):
        (tmp_path / str(k)).mkdir()
        probes.append((name, [str(tmp_path / str(k)), *args]))
    for label, outcome in zip(cases, run_child(probes)):
        result = outcome["value"]
        assert "types" in result, (label, result)  # an error, not the whole data set
        assert "MalformedFileError" in result["types"] and "RuntimeError" in result["types"]
        assert result["path"] in result["message"], (label, result["message"])
        assert "truncated while being read" in result["message"], (label, result["message"])
        assert result["rows"] >= 10 and len(result["message"]) < 2000


@pytest.mark.skipif(not LINUX, reason="needs Linux's truncate semantics")
def test_cifar_files_truncated_after_opening_still_read(tmp_path):
    """CIFAR and MNIST files are read into memory when the data set is made (they were
    mapped): cutting the file afterwards changes nothing."""
    (result,) = run_child([("probe_truncated_cifar", [str(tmp_path)])])
    assert result == {"value": {"rows": 100}}


def test_a_vision_file_that_shrank_before_it_was_read_is_an_error(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(100))
    with pytest.raises(MalformedFileError, match="shrank while being read") as info:
        vision_sets._read_bytes("Cifar10Dataset", str(path), 0, (2, 3073))
    assert str(path) in str(info.value)


# ------------------------------------------------------------------ the read paths
ALL_TYPES = {
    "i32": {"type": "int32"},
    "f64": {"type": "float64"},
    "text": {"type": "string"},
    "blob": {"type": "bytes"},
    "fixed": {"type": "float32", "shape": [2, 3]},
    "ragged": {"type": "int64", "shape": [-1, 2]},
}


def all_types_row(k: int) -> dict:
    rng = np.random.default_rng(k)
    return {
        "i32": np.int32(k - 7),
        "f64": k / 7,
        "text": f"row {k} ü" * (k % 3),
        "blob": bytes(rng.integers(0, 256, k % 9, dtype=np.uint8)),
        "fixed": rng.random((2, 3), dtype=np.float32),
        "ragged": rng.integers(0, 100, (k % 4, 2)),
    }


@pytest.mark.parametrize(
    ("column_bytes", "budget"),
    [(64 << 10, 128 << 20), (0, 128 << 20), (0, 0)],
    ids=["small columns copied", "batches kept whole", "row by row"],
)
def test_every_read_path_gives_the_written_rows(tmp_path, monkeypatch, column_bytes, budget):
    """Columns copied whole (small ones, or within the copy budget) and columns read row by
    row by pread give the same rows: the written values, in every type."""
    from jisu.dataset.record import arrow_file

    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 5)
    monkeypatch.setattr(arrow_file, "COPY_COLUMN_BYTES", column_bytes)
    monkeypatch.setattr(arrow_file, "COPY_BUDGET_BYTES", budget)
    writer = ds.FileWriter(str(tmp_path / "data.rec"), shard_num=3)
    writer.add_schema(ALL_TYPES)
    written = [all_types_row(k) for k in range(37)]
    writer.write_raw_data(written)
    writer.commit()
    reader = ds.RecordDataset(str(tmp_path / "data.rec"), shuffle=False).reader
    for k in np.random.default_rng(0).permutation(37).tolist() * 2:
        row = dict(zip(reader.columns, reader[k]))
        expected = written[k]
        assert row["i32"].dtype == np.int32 and int(row["i32"]) == expected["i32"]
        assert row["f64"].shape == () and float(row["f64"]) == expected["f64"]
        assert str(row["text"]) == expected["text"]
        assert bytes(row["blob"]) == expected["blob"] and row["blob"].dtype == np.uint8
        np.testing.assert_array_equal(row["fixed"], expected["fixed"])
        assert row["fixed"].shape == (2, 3) and row["fixed"].dtype == np.float32
        np.testing.assert_array_equal(row["ragged"], expected["ragged"].reshape(-1, 2))
    copied = len(reader._copies._items)
    assert (copied > 0) == (budget > 0 and column_bytes == 0)


# ------------------------------------------------------------------ descriptors
@pytest.fixture
def pooled_files(monkeypatch):
    """Every file opened from now on shares a pool of 2 descriptors (none is pinned)."""
    monkeypatch.setattr(pread, "_pinned", [1 << 30])
    monkeypatch.setattr(pread, "POOLED_FILES", 2)


def write_records(path: Path, rows: int, shards: int) -> str:
    writer = ds.FileWriter(str(path), shard_num=shards)
    writer.add_schema({"x": {"type": "int64"}, "blob": {"type": "bytes"}})
    writer.write_raw_data([{"x": k, "blob": bytes([k % 256]) * (k % 5)} for k in range(rows)])
    writer.commit()
    return str(path)


def test_more_shards_than_descriptors_are_read_by_reopening_them(
    tmp_path, monkeypatch, pooled_files
):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 3)
    path = write_records(tmp_path / "data.rec", 60, shards=6)
    reader = ds.RecordDataset(path, shuffle=False).reader
    assert all(not f.pinned for f in reader._files)
    for _ in range(2):  # the files take turns on the two descriptors
        rows = [reader[k] for k in np.random.default_rng(0).permutation(60)]
        assert sorted(int(r[0]) for r in rows) == list(range(60))
        assert all(bytes(r[1]) == bytes([int(r[0]) % 256]) * (int(r[0]) % 5) for r in rows)
    assert sum(f._fd[0] is not None for f in reader._files) <= 2


def test_a_pooled_shard_replaced_meanwhile_is_an_error_naming_it(
    tmp_path, monkeypatch, pooled_files
):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 3)
    path = write_records(tmp_path / "data.rec", 60, shards=6)
    reader = ds.RecordDataset(path, shuffle=False, verify=False).reader
    for k in range(60):  # every shard read: most descriptors were closed again
        reader[k]
    closed = [s for s, f in enumerate(reader._files) if f._fd[0] is None]
    assert len(closed) >= 4
    victim = reader._files[closed[0]]
    shutil.copyfile(victim.path, victim.path + ".new")
    os.replace(victim.path + ".new", victim.path)  # same bytes, another file
    reader._views.clear()  # the batches' copied columns: read them again
    with pytest.raises(MalformedFileError, match="replaced or removed while being read") as info:
        reader[int(reader.shard_indices(closed[0])[0])]
    assert victim.path in str(info.value)


# ------------------------------------------------------------------ TFRecord: memory
def probe_tfrecord_rows(path: str, schema: list | None) -> int:
    """Read every row of a TFRecord file; ``schema``: ``[name, dtype, shape]`` columns."""
    kwargs = {}
    if schema is not None:
        s = ds.Schema()
        for name, dtype, shape in schema:
            s.add_column(name, str if dtype == "string" else np.dtype(dtype), shape)
        kwargs["schema"] = s
    return len(rows_of(TFRecordDataset(path, shuffle=False, **kwargs)))


def padded_bomb(path: Path) -> None:
    """A 180 KB record: one 100 KB bytes value and 40,000 empty ones (MindSpore pads every
    value to the longest: 4 GB)."""
    path.write_bytes(framed(example({"f": [b"x" * 100_000] + [b""] * 40_000})))


def zeros_gzip(path: Path, inflated: int) -> None:
    """A GZIP file inflating to ``inflated`` zero bytes (about 1000x smaller)."""
    chunk = bytes(1 << 20)
    with gzip.open(path, "wb", compresslevel=6) as f:
        for _ in range(inflated // len(chunk)):
            f.write(chunk)


def records_gzip(path: Path, count: int, size: int) -> None:
    """A GZIP file of ``count`` valid records, each an Example holding ``size`` zero bytes
    as feature ``f``."""
    record = framed(example({"f": [bytes(size)]}))
    with gzip.open(path, "wb", compresslevel=6) as f:
        for _ in range(count):
            f.write(record)


@pytest.mark.timeout(200)
@pytest.mark.skipif(not LINUX, reason="needs /proc and RLIMIT_AS")
def test_tfrecord_files_cannot_take_absurd_memory_or_disk(tmp_path):
    """Each used to take gigabytes (4 GB for the padded record, 16 GB as text, 6 GB for the
    schema shape; a 2 MB gzip of zeros was inflated in full to TMPDIR before any check). Now,
    under an address-space limit of 1 GiB over the imports and a 96 MiB file-size limit, each
    is refused with a MalformedFileError naming the file (and the record and field)."""
    padded = tmp_path / "padded.tfrecord"
    padded_bomb(padded)
    assert padded.stat().st_size < 200_000
    tiny = tmp_path / "tiny.tfrecord"
    tiny.write_bytes(framed(example({"f": [b"a", b"b"]})))
    zeros = tmp_path / "zeros.tfrecord.gz"
    zeros_gzip(zeros, 256 << 20)
    bomb = tmp_path / "records.tfrecord.gz"
    records_gzip(bomb, 100, 1 << 20)  # 100 MiB of valid records: over max(64 MiB, 100x)
    assert zeros.stat().st_size < 1 << 20 and bomb.stat().st_size < 1 << 20
    probes = [
        ("probe_control_allocation", []),
        ("probe_tfrecord_rows", [str(padded), None]),
        ("probe_tfrecord_rows", [str(padded), [["f", "string", None]]]),
        ("probe_tfrecord_rows", [str(tiny), [["f", "uint8", [-1, 3_000_000_000]]]]),
        ("probe_gzip_rows", [str(zeros)]),
        ("probe_gzip_rows", [str(bomb)]),
    ]
    results = run_child(
        probes, headroom=HEADROOM, file_size=96 << 20, env={"TMPDIR": str(tmp_path)}
    )
    control, *refused = results
    assert "MemoryError" in control["types"], control  # the limit is in force
    padded_bytes, padded_text, shape, zeros_result, bomb_result = refused
    for result in refused:
        assert "MalformedFileError" in result["types"], result
        assert len(result["message"]) < 2000
    for result in (padded_bytes, padded_text, shape):
        assert "record 0: feature 'f' would read as" in result["message"], result
    assert str(padded) in padded_bytes["message"] and str(tiny) in shape["message"]
    assert "40001 values padded to 100000 bytes" in padded_bytes["message"]
    assert "40001 strings of up to 100000 characters" in padded_text["message"]
    assert "2 values padded to 3000000000 bytes each" in shape["message"]
    assert str(zeros) in zeros_result["message"] and "damaged length" in zeros_result["message"]
    assert str(bomb) in bomb_result["message"]
    assert f"inflates to more than {64 << 20} bytes" in bomb_result["message"]


def probe_gzip_rows(path: str) -> int:
    return len(rows_of(TFRecordDataset(path, shuffle=False, compression_type="GZIP")))


def test_the_inflate_limit_is_the_documented_one_and_can_be_raised(tmp_path, monkeypatch):
    """max(INFLATE_ALLOWANCE, MAX_INFLATE_RATIO x the compressed size), read at each open."""
    bomb = tmp_path / "records.tfrecord.gz"
    records_gzip(bomb, 12, 1 << 20)  # 12 MiB of records in ~12 KB
    monkeypatch.setattr(tfrecord_format, "INFLATE_ALLOWANCE", 4 << 20)
    with pytest.raises(MalformedFileError, match=f"inflates to more than {4 << 20} bytes") as info:
        TFRecordDataset(str(bomb), compression_type="GZIP")
    assert info.value.path == str(bomb) and "MAX_INFLATE_RATIO" in str(info.value)
    monkeypatch.setattr(tfrecord_format, "INFLATE_ALLOWANCE", 16 << 20)
    reader = TFRecordDataset(str(bomb), compression_type="GZIP", schema=_uint8_schema()).reader
    assert len(reader) == 12 and all(n > 1 << 20 for n in reader.files[0].lengths)


def _uint8_schema() -> ds.Schema:
    s = ds.Schema()
    s.add_column("f", np.uint8)
    return s


def test_feature_size_limits_scale_with_the_record(tmp_path, monkeypatch):
    """Padding is allowed up to VALUE_ALLOWANCE + MAX_VALUE_EXPANSION x the record's size:
    MindSpore's padding of ordinary lists still reads; the limits are module attributes."""
    from jisu.dataset.record import tfrecord_reader as source

    path = tmp_path / "ok.tfrecord"
    values = [b"ab", b"c", b"defg"]
    path.write_bytes(framed(example({"f": values})))
    (row,) = rows_of(TFRecordDataset(str(path), shuffle=False))
    assert bytes(row[0]) == b"ab  c   defg"
    monkeypatch.setattr(source, "VALUE_ALLOWANCE", 0)
    monkeypatch.setattr(source, "MAX_VALUE_EXPANSION", 0)
    with pytest.raises(RuntimeError, match="3 values padded to 4 bytes each") as info:
        rows_of(TFRecordDataset(str(path), shuffle=False))
    assert str(path) in str(info.value) and isinstance(info.value, MalformedFileError)


# ------------------------------------------------------------------ TFRecord: full TMPDIR
def probe_gzip_into_full_tmpdir(path: str) -> int:
    return probe_gzip_rows(path)


@pytest.mark.skipif(not LINUX, reason="needs RLIMIT_FSIZE")
def test_a_tmpdir_without_room_is_an_error_naming_the_folder(tmp_path):
    """The inflated copy cannot grow (here: past the process's file-size limit, EFBIG, in a
    child): an OSError naming TMPDIR and what to do, no longer a bare ``[Errno 28]``."""
    path = tmp_path / "ok.tfrecord.gz"
    records_gzip(path, 3, 1 << 20)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (result,) = run_child(
        [("probe_gzip_into_full_tmpdir", [str(path)])],
        file_size=1 << 20,
        env={"TMPDIR": str(tmpdir)},
    )
    assert result["types"][0] == "OSError", result
    assert f"'{tmpdir}'" in result["message"] and "TMPDIR" in result["message"]
    assert str(path) in result["message"] and f"[Errno {errno.EFBIG}]" in result["message"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_tmpdir_is_an_error_naming_the_folder(tmp_path, monkeypatch):
    """ENOSPC from the kernel itself: the inflated copy is written to /dev/full."""
    import tempfile

    path = tmp_path / "ok.tfrecord.gz"
    records_gzip(path, 3, 1 << 20)

    def full(**kwargs: object) -> object:
        return open("/dev/full", "w+b")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    with pytest.raises(OSError, match="no room left in the temporary folder") as info:
        TFRecordDataset(str(path), compression_type="GZIP")
    assert info.value.errno == errno.ENOSPC
    assert f"'{tempfile.gettempdir()}'" in str(info.value) and str(path) in str(info.value)


# ------------------------------------------------------------------ TFRecord: fuzz
def _address_space() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@contextlib.contextmanager
def bounded_memory(headroom: int = HEADROOM):
    """This process's address space may grow by ``headroom`` bytes in the block (an
    allocation past it is a MemoryError, failing the example); restored after."""
    size = _address_space()
    if size is None or not LINUX:
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + headroom if hard == resource.RLIM_INFINITY else min(size + headroom, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


VALID = b"".join(
    framed(example({"label": [k], "name": [b"row%d" % k], "vec": [0.5, 1.5, 2.5]}))
    for k in range(4)
)
feature_values = st.one_of(
    st.lists(st.binary(max_size=12), max_size=6),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=6),
)
hostile_examples = st.dictionaries(
    st.sampled_from(["label", "name", "vec", "x"]), feature_values, max_size=4
).map(lambda features: framed(example(features)))
_KINDS = {
    "bytes": st.lists(st.binary(max_size=12), min_size=1, max_size=6),
    "int": st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6),
    "float": st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=6),
}


@st.composite
def same_features(draw: st.DrawFn) -> bytes:
    """Records that all hold the same features, each of one kind (they mostly read as rows)."""
    names = draw(
        st.lists(
            st.sampled_from(["label", "name", "vec", "x"]), min_size=1, max_size=4, unique=True
        )
    )
    kinds = {name: _KINDS[draw(st.sampled_from(sorted(_KINDS)))] for name in names}
    records = draw(st.lists(st.fixed_dictionaries(kinds), min_size=1, max_size=4))
    return b"".join(framed(example(record)) for record in records)


def mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` with a byte flipped, cut short, grown, or a record length rewritten with a
    valid CRC (a length that lies, not a damaged one)."""
    n = len(data)

    def relength(args: tuple[int, int]) -> bytes:
        at, length = args
        head = struct.pack("<Q", length)
        return data[:at] + head + struct.pack("<I", masked_crc(head)) + data[at + 12 :]

    return st.one_of(
        st.tuples(st.integers(0, n - 1), st.integers(1, 255)).map(
            lambda p: data[: p[0]] + bytes([data[p[0]] ^ p[1]]) + data[p[0] + 1 :]
        ),
        st.integers(0, n - 1).map(lambda k: data[:k]),
        st.binary(min_size=1, max_size=24).map(lambda extra: data + extra),
        st.tuples(st.just(0), st.integers(0, 2**64 - 1)).map(relength),
    )


SCHEMAS = st.sampled_from(
    [
        None,
        [["label", "int32", [1]], ["name", "string", None], ["vec", "float64", [3]]],
        [["name", "uint8", [-1, 8]], ["vec", "float32", [-1, 1]]],
        [["x", "int64", None]],
    ]
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    payload=st.one_of(
        mutations(VALID),
        same_features(),
        st.binary(max_size=96),
        st.lists(hostile_examples, max_size=3).map(b"".join),
    ),
    schema=SCHEMAS,
    compressed=st.booleans(),
)
def test_fuzzed_tfrecord_files_give_rows_or_one_clear_error(
    tmp_path_factory, payload, schema, compressed
):
    """Any bytes, any mutation of a valid file, plain or GZIP, with or without a schema: rows,
    or a MalformedFileError (a ValueError) naming the file (a data set without columns or
    records says so), within 1 GiB of address space; never another exception."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / ("f.tfrecord.gz" if compressed else "f.tfrecord")
    path.write_bytes(gzip.compress(payload, mtime=0) if compressed else payload)
    kind = "GZIP" if compressed else ""
    try:
        with bounded_memory():
            data = TFRecordDataset(
                str(path), shuffle=False, compression_type=kind, **_schema_kwargs(schema)
            )
            reader = data.reader
            rows = [reader[k] for k in range(len(reader))]
            gathered = reader.gather(np.arange(len(reader), dtype=np.int64))
    except MalformedFileError as exc:
        assert exc.path == str(path) and len(str(exc)) < 2000, str(exc)
        event("MalformedFileError")
    except ValueError as exc:  # nothing to read columns from, or columns_list misses them
        assert type(exc) is ValueError and "TFRecordDataset" in str(exc), str(exc)
        event("ValueError")
    else:
        event(f"{min(len(rows), 2)}+ rows")
        assert all(isinstance(v, np.ndarray) for row in rows for v in row)
        if gathered is not None:  # the batch path gives the rows, stacked
            for k, column in enumerate(gathered):
                np.testing.assert_array_equal(column, np.stack([row[k] for row in rows]))


def _schema_kwargs(schema: list | None) -> dict:
    if schema is None:
        return {}
    s = ds.Schema()
    for name, dtype, shape in schema:
        s.add_column(name, str if dtype == "string" else np.dtype(dtype), shape)
    return {"schema": s}


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), max_size=8),
    cuts=st.lists(st.integers(1, 64), min_size=1, max_size=8),
    tail=st.binary(max_size=20),
)
def test_the_three_indexers_agree(tmp_path_factory, sizes, cuts, tail):
    """The record index built while inflating (bytes fed in any pieces), over bytes in
    memory, and from a file's headers by pread: the same records, or the same error."""
    data = b"".join(framed(bytes([k % 256]) * n) for k, n in enumerate(sizes)) + tail
    path = tmp_path_factory.mktemp("index") / "f.tfrecord"
    path.write_bytes(data)

    def streamed() -> tuple:
        index, pos, k = tfrecord_format.StreamIndex(str(path)), 0, 0
        while pos < len(data):
            step = cuts[k % len(cuts)]
            index.feed(data[pos : pos + step])
            pos, k = pos + step, k + 1
        return index.finish()

    def from_file() -> tuple:
        return tfrecord_format.index_file(pread.PreadFile.open(str(path)))

    outcomes = []
    for build in (streamed, lambda: tfrecord_format.index_records(data, str(path)), from_file):
        try:
            offsets, lengths = build()
            outcomes.append((offsets.tolist(), lengths.tolist()))
        except MalformedFileError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if not tail:
        assert outcomes[0][1] == sizes


def test_zlib_and_gzip_members_still_read(tmp_path):
    """The streaming index reads what the old two-pass reader read: concatenated gzip
    members, ZLIB, trailing zero padding."""
    one, two = framed(example({"label": [1]})), framed(example({"label": [2]}))
    gz = tmp_path / "two.gz"
    gz.write_bytes(gzip.compress(one) + gzip.compress(two) + bytes(8))
    zl = tmp_path / "one.zlib"
    zl.write_bytes(zlib.compress(one + two))
    for path, kind in ((gz, "GZIP"), (zl, "ZLIB")):
        rows = rows_of(TFRecordDataset(str(path), shuffle=False, compression_type=kind))
        assert [int(r[0][0]) for r in rows] == [1, 2]

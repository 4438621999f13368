"""Hypothesis fuzzers for the file sources' readers (issue 26): CSV, MNIST idx, CIFAR, COCO
and VOC. Each example gives rows or the documented error naming the file, never another
exception, and runs under an address-space limit (:func:`bounded_memory`) so that a reader
allocating gigabytes from a small file fails the example instead of eating the machine."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import struct
import sys
import tempfile
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources import coco as coco_module
from jisu.dataset.sources import csv as csv_module
from jisu.dataset.sources.coco import CocoDataset
from jisu.dataset.sources.csv import CSVDataset
from jisu.dataset.sources.voc import VOCDataset
from tests.dataset.sources.test_voc_coco import INSERTIONS, VOC_OBJECTS, voc_text

JPEG = b"\xff\xd8\xff\xe0" + bytes(16)
HEADROOM = 2 << 30  # bytes of address space an example may add (threads' arenas included)
#: Fuzz settings: a few seconds a test, and the same examples every run (derandomized).
FAST = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _address_space() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@contextlib.contextmanager
def bounded_memory(headroom: int = HEADROOM):
    """Lower this process's address-space limit (soft ``RLIMIT_AS``) to its current size plus
    ``headroom`` for the block, then restore it: an allocation past it is a MemoryError in
    the block (failing the example). No limit where there is no ``/proc`` or ``resource``."""
    size = _address_space()
    if size is None or not sys.platform.startswith("linux"):
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + headroom
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def read_all(data) -> list:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return list(it)
    finally:
        it.close()


def assert_names(exc: BaseException, *paths: str) -> None:
    """``exc`` names one of ``paths`` and stays a few lines long."""
    message = str(exc)
    assert any(p in message for p in paths), message
    assert len(message) < 2000, len(message)


def test_bounded_memory_stops_a_large_allocation():
    if _address_space() is None:
        pytest.skip("no /proc/self/status")
    with pytest.raises(MemoryError), bounded_memory(1 << 30):
        np.ones(3 << 30, dtype=np.uint8)
    assert np.ones(1 << 20, dtype=np.uint8).sum() == 1 << 20  # restored


# ---------------------------------------------------------------------------- CSV
CSV_PIECES = st.sampled_from(
    [b",", b'"', b'""', b"\n", b"\r", b"\r\n", b"a", b"1", b"-2.5", b" ", b"\xef\xbb\xbf",
     b'"x,y"', b"\xff", b"\x00", b";"]
)  # fmt: skip


def arrow_ends_inside_quotes(data: bytes) -> bool:
    """pyarrow's own answer to "does ``data`` end inside a quoted field?": parse it with a
    line ``\\x01`` appended; inside quotes the marker joins the last field (after a line
    break), outside it is a row of its own."""
    seen: list[str] = []

    def keep(row):
        seen.append(row.text)
        return "skip"

    marked = data + b"\n\x01"
    parse = pacsv.ParseOptions(
        delimiter=",",
        quote_char='"',
        double_quote=True,
        escape_char=False,
        newlines_in_values=True,
        ignore_empty_lines=True,
        invalid_row_handler=keep,
    )
    read = pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 20)
    convert = pacsv.ConvertOptions(
        column_types={f"f{i}": pa.string() for i in range(64)},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        null_values=[],
        check_utf8=False,
    )
    try:
        table = pacsv.read_csv(pa.py_buffer(marked), read, parse, convert)
    except pa.ArrowInvalid as exc:  # the first record never ends: it is inside quotes
        assert "Empty CSV" in str(exc)
        return bool(data.strip(b"\r\n\xef\xbb\xbf"))
    values = [v for column in table.columns for v in column.to_pylist()] + seen
    return any(v.endswith("\n\x01") for v in values)


QUOTING_PIECES = CSV_PIECES.filter(lambda piece: piece != b"\xff")  # the oracle reads UTF-8


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(QUOTING_PIECES, max_size=30).map(b"".join), st.sampled_from([3, 1 << 20]))
def test_fuzz_unclosed_quote_agrees_with_pyarrow(data, chunk):
    with mock.patch.object(csv_module, "_QUOTE_SCAN_CHUNK", chunk):
        opened = csv_module.unclosed_quote(data, ",")
    assert (opened is not None) == arrow_ends_inside_quotes(data)
    if opened is not None:
        assert data[opened : opened + 1] == b'"'


FIELD = st.sampled_from(["1", "-2.5", "a", "", '"x,y"', '"q""q"', '"two\nlines"', " 3 "])


@st.composite
def csv_files(draw) -> bytes:
    """A well-formed CSV file (1-3 columns, 1-4 lines, either line end, maybe a BOM), and in
    half the examples one to three pieces inserted anywhere (a stray quote, a delimiter...)."""
    width = draw(st.integers(1, 3))
    lines = draw(st.lists(st.lists(FIELD, min_size=width, max_size=width), min_size=1, max_size=4))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = ("\ufeff" if draw(st.booleans()) else "") + end.join(",".join(f) for f in lines) + end
    data = text.encode("utf-8")
    for _ in range(draw(st.sampled_from([0, 0, 1, 3]))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(CSV_PIECES) + data[at:]
    return data


@FAST
@given(
    content=csv_files() | st.lists(CSV_PIECES, max_size=40).map(b"".join),
    defaults=st.just([]) | st.lists(st.sampled_from([0, 1.5, "s"]), max_size=3),
    names=st.booleans(),
    max_columns=st.sampled_from([2, 3, csv_module.MAX_COLUMNS]),
)
def test_fuzz_csv_gives_rows_or_an_error_naming_the_file(content, defaults, names, max_columns):
    with tempfile.TemporaryDirectory() as folder, bounded_memory():
        path = os.path.join(folder, "f.csv")
        with open(path, "wb") as f:
            f.write(content)
        try:
            with mock.patch.object(csv_module, "MAX_COLUMNS", max_columns):
                data = CSVDataset(
                    path,
                    column_defaults=defaults or None,
                    column_names=["a", "b"] if names else None,
                    shuffle=False,
                )
        except MalformedFileError as exc:  # the file's content
            assert str(exc).startswith("CSVDataset: ")
            assert_names(exc, path)
            return
        except ValueError as exc:  # more defaults than the file has columns, or no rows
            assert str(exc).startswith("CSVDataset: ")
            assert_names(exc, "column_defaults has", path)
            return
        assert csv_module.unclosed_quote(content, ",") is None  # never swallowed silently
        columns = data.get_col_names()
        assert len(columns) <= max_columns
        rows = read_all(data)
        assert len(rows) == data.get_dataset_size()
        assert all(len(row) == len(columns) for row in rows)


# ---------------------------------------------------------------------------- idx (MNIST)
DIMENSION = st.sampled_from([0, 1, 2, 3, 28, 255, 2**16, 2**21, 2**22, 2**31, 2**32 - 1])


def _idx(magic: int, shape: tuple, payload: bytes) -> bytes:
    return struct.pack(f">I{len(shape)}I", magic, *shape) + payload


SMALL_IMAGES = st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(1, 4))
HEADERS = st.one_of(
    # a consistent pair of files, then maybe damaged
    SMALL_IMAGES.flatmap(
        lambda shape: st.tuples(
            st.just(shape),
            st.just(shape[0]) | DIMENSION,
            st.just(0x803),
            st.just(0) | st.integers(-4, 4),
            st.just(0) | st.integers(0, 20),
        )
    ),
    # any header: dimensions that overflow, magic numbers of other files
    st.tuples(
        st.tuples(DIMENSION, DIMENSION, DIMENSION),
        DIMENSION,
        st.sampled_from([0x803, 0x801, 0x08030000]),
        st.integers(-4, 4),
        st.integers(0, 20),
    ),
)


@FAST
@given(HEADERS)
def test_fuzz_idx_headers_give_rows_or_an_error_naming_the_file(header):
    images, labels, magic, extra, cut = header
    with tempfile.TemporaryDirectory() as folder, bounded_memory():
        declared = int(np.prod(images, dtype=object))
        size = max(0, min(declared, 4096) + extra)  # the payload a small file can hold
        image_file = os.path.join(folder, "train-images-idx3-ubyte")
        label_file = os.path.join(folder, "train-labels-idx1-ubyte")
        with open(image_file, "wb") as f:
            f.write(_idx(magic, images, bytes(size))[: None if cut == 0 else -cut])
        with open(label_file, "wb") as f:
            f.write(_idx(0x801, (labels,), bytes(min(labels, 4096))))
        try:
            data = ds.MnistDataset(folder, usage="train", shuffle=False)
        except MalformedFileError as exc:
            assert_names(exc, image_file, label_file)
            return
        rows = read_all(data)
        assert len(rows) == data.get_dataset_size() == images[0] == labels
        assert all(row[0].shape == (images[1], images[2], 1) for row in rows)


# ---------------------------------------------------------------------------- CIFAR
class _Alarm:
    """Unpickling this writes a file: the proof a reader ran what it should only read."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@FAST
@given(
    records=st.integers(0, 3),
    extra=st.sampled_from([0, 0, 1, -1, 3071]),
    seed=st.integers(0, 2**16),
    cifar100=st.booleans(),
    pickled=st.booleans(),
)
def test_fuzz_cifar_files_give_their_records_or_an_error(records, extra, seed, cifar100, pickled):
    label_bytes = 2 if cifar100 else 1
    width = label_bytes + 3072
    with tempfile.TemporaryDirectory() as folder, bounded_memory():
        path = os.path.join(folder, "test.bin" if cifar100 else "test_batch.bin")
        alarm = os.path.join(folder, "unpickled")
        if pickled:  # the Python version's pickle, named like the binary file
            content = pickle.dumps({"data": _Alarm(alarm), "labels": [1, 2]})
        else:
            rng = np.random.default_rng(seed)
            content = rng.integers(
                0, 256, max(0, records * width + extra), dtype=np.uint8
            ).tobytes()
        with open(path, "wb") as f:
            f.write(content)
        make = ds.Cifar100Dataset if cifar100 else ds.Cifar10Dataset
        try:
            data = make(folder, usage="test", shuffle=False)
        except (MalformedFileError, ValueError) as exc:
            assert_names(exc, path, folder)
            return
        finally:
            assert not os.path.exists(alarm)  # never unpickled
        rows = read_all(data)
        stored = np.frombuffer(content, np.uint8).reshape(-1, width)
        assert len(rows) == len(stored) == data.get_dataset_size()
        for row, record in zip(rows, stored):
            labels = [int(v) for v in row[1:]]
            assert labels == record[:label_bytes].tolist()
            np.testing.assert_array_equal(
                row[0], record[label_bytes:].reshape(3, 32, 32).transpose(1, 2, 0)
            )


# ---------------------------------------------------------------------------- COCO
RAGGED = st.lists(st.lists(st.integers(0, 9), max_size=40), max_size=6)
FILE_NAME = st.sampled_from(["a.jpg", "a.jpg", "sub/b.jpg", "inside/a.jpg", "out/secret.jpg"])


def _coco_folder(folder: str) -> tuple[str, str]:
    """dataset_dir with a.jpg, sub/b.jpg, a link ``inside`` (to dataset_dir itself) and a
    link ``out`` (to a folder beside it holding secret.jpg)."""
    root = os.path.join(folder, "coco")
    outside = os.path.join(folder, "outside")
    os.makedirs(os.path.join(root, "sub"))
    os.makedirs(outside)
    for path in ("a.jpg", "sub/b.jpg"):
        with open(os.path.join(root, path), "wb") as f:
            f.write(JPEG)
    with open(os.path.join(outside, "secret.jpg"), "wb") as f:
        f.write(b"secret")
    os.symlink(".", os.path.join(root, "inside"))
    os.symlink(outside, os.path.join(root, "out"))
    return root, os.path.join(root, "ann.json")


def _padded(rows: list[list[int]]) -> list[list[float]]:
    longest = max((len(r) for r in rows), default=0)
    return [[float(v) for v in r] + [-1.0] * (longest - len(r)) for r in rows]


@FAST
@given(
    task=st.sampled_from(["Stuff", "Keypoint", "Captioning"]),
    file_name=FILE_NAME,
    annotations=st.lists(RAGGED, min_size=1, max_size=4),
    cap=st.sampled_from([30, 200, coco_module.MAX_PADDED_VALUES]),
)
def test_fuzz_coco_ragged_fields_are_padded_within_the_cap_or_refused(
    task, file_name, annotations, cap
):
    with tempfile.TemporaryDirectory() as folder, bounded_memory():
        root, annotation_file = _coco_folder(folder)
        entries = []
        for ragged in annotations:
            entry = {"image_id": 1, "iscrowd": 0, "num_keypoints": 0}
            entry["segmentation"] = ragged
            entry["keypoints"] = [v for r in ragged for v in r]
            entry["caption"] = "x" * sum(len(r) for r in ragged)
            entries.append(entry)
        content = {"images": [{"id": 1, "file_name": file_name}], "annotations": entries}
        with open(annotation_file, "w") as f:
            json.dump(content, f)
        if task == "Stuff":
            want = [r for ragged in annotations for r in ragged]
        elif task == "Keypoint":
            want = [e["keypoints"] for e in entries]
        else:
            want = [[0] * len(e["caption"]) for e in entries]
        padded_size = len(want) * max((len(r) for r in want), default=0)
        try:
            with mock.patch.object(coco_module, "MAX_PADDED_VALUES", cap):
                data = CocoDataset(root, annotation_file, task=task, shuffle=False)
            rows = read_all(data)
        except MalformedFileError as exc:
            assert_names(exc, annotation_file, os.path.join(root, file_name))
            if "would be padded" in str(exc):
                assert padded_size > cap
            else:
                assert file_name.startswith("out/") and "symbolic link" in str(exc)
            return
        except ValueError as exc:  # nothing to show: a Stuff image without polygons
            assert task == "Stuff" and not want and "CocoDataset: no image" in str(exc)
            return
        assert padded_size <= cap and not file_name.startswith("out/")
        ((image, column, *_),) = rows
        assert image.tobytes() == JPEG
        if task == "Captioning":
            assert column.tolist() == [[e["caption"]] for e in entries]
        else:
            assert column.dtype == np.float32 and column.tolist() == _padded(want)


# ---------------------------------------------------------------------------- VOC
GOOD_BOX = "<bndbox><xmin>1</xmin><ymin>2</ymin><xmax>5</xmax><ymax>6</ymax></bndbox>"
GOOD_XML = st.sampled_from(["cat", "dog"]).map(
    lambda name: f"<annotation><object><name>{name}</name>{GOOD_BOX}</object></annotation>"
)
VOC_XML = st.one_of(GOOD_XML, GOOD_XML, st.tuples(VOC_OBJECTS, INSERTIONS).map(
    lambda drawn: voc_text(*drawn)
))  # fmt: skip
VOC_IDS = st.lists(
    st.sampled_from(["0", "1", "2", "2", " 1 "]) | st.sampled_from(["../0", "a/1", "", "9"]),
    max_size=3,
)


@settings(FAST, max_examples=30)
@given(
    files=st.lists(VOC_XML, min_size=3, max_size=3),
    ids=VOC_IDS,
    link_out=st.sampled_from([None, None, "image", "annotation", "list"]),
)
def test_fuzz_voc_gives_rows_or_an_error_naming_the_file(files, ids, link_out):
    with tempfile.TemporaryDirectory() as folder, bounded_memory():
        root = os.path.join(folder, "voc")
        outside = os.path.join(folder, "outside")
        os.makedirs(outside)
        for sub in ("ImageSets/Main", "JPEGImages", "Annotations", "SegmentationClass"):
            os.makedirs(os.path.join(root, sub))
        for k, xml in enumerate(files):
            with open(os.path.join(root, "Annotations", f"{k}.xml"), "w") as f:
                f.write(xml)
            with open(os.path.join(root, "JPEGImages", f"{k}.jpg"), "wb") as f:
                f.write(JPEG)
        list_file = os.path.join(root, "ImageSets", "Main", "train.txt")
        with open(list_file, "w") as f:
            f.write("\n".join(ids) + "\n")
        escaped = None
        if link_out is not None:
            target = {
                "image": os.path.join(root, "JPEGImages", "0.jpg"),
                "annotation": os.path.join(root, "Annotations", "0.xml"),
                "list": list_file,
            }[link_out]
            moved = os.path.join(outside, os.path.basename(target))
            os.rename(target, moved)
            os.symlink(moved, target)
            escaped = target
        try:
            data = VOCDataset(root, task="Detection", shuffle=False, extra_metadata=True)
            rows = read_all(data)
        except MalformedFileError as exc:
            assert_names(exc, root)
            if "symbolic link" in str(exc):
                assert escaped is not None and escaped in str(exc)
            return
        except (ValueError, FileNotFoundError) as exc:  # no image listed / kept, a missing file
            assert "VOCDataset" in str(exc) or isinstance(exc, FileNotFoundError)
            assert_names(exc, root)
            return
        listed = [i.strip() for i in ids if i.strip()]
        kept = [str(row[-1]) for row in rows]
        assert 0 < len(rows) <= len(listed) and set(kept) <= set(listed)
        if link_out in ("annotation", "list"):  # read when built: refused if listed at all
            assert link_out == "annotation" and "0" not in listed
        elif link_out == "image":  # read when its row is: refused if the row is kept
            assert "0" not in kept
        for image, bbox, label, difficult, truncate, _ in rows:
            assert image.tobytes() == JPEG and bbox.dtype == np.float32 and bbox.shape[1] == 4
            assert len(label) == len(bbox) == len(difficult) == len(truncate)

"""A ``.npy`` is read by ``pread``, never memory-mapped (issue 47, item 6): a file that shrinks
while ``jisu convert`` reads it is an error naming it (exit status 1), not a SIGBUS, and no
temporary shard is left; rows read in C and Fortran order equal NumPy's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import array_files
from jisu.dataset.record.array_files import NpyRows, load_arrays
from jisu.dataset.record.validate import MalformedFileError


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (6, 2, 3), (4, 1, 1, 2)])
def test_rows_equal_numpys(tmp_path, order, shape):
    array = np.asarray(
        np.random.default_rng(0).integers(-100, 100, shape), dtype=np.int16, order=order
    )
    path = tmp_path / "a.npy"
    np.save(path, array)
    rows = load_arrays(str(path))["data"]
    assert isinstance(rows, NpyRows)
    expected = np.load(path)
    assert (len(rows), rows.shape, rows.dtype) == (len(expected), expected.shape, expected.dtype)
    for start in range(len(expected)):
        for stop in range(start, len(expected) + 2):
            got = rows[start:stop]
            assert got.flags.c_contiguous
            np.testing.assert_array_equal(got, expected[start:stop])
        np.testing.assert_array_equal(rows[start], expected[start])
    np.testing.assert_array_equal(rows[-1], expected[-1])
    with pytest.raises(IndexError):
        rows[len(expected)]


def test_a_npy_converts_to_its_rows(tmp_path):
    array = np.arange(3000 * 3, dtype=np.float32).reshape(3000, 3)
    np.save(tmp_path / "a.npy", np.asfortranarray(array))
    ds.record.convert.convert(str(tmp_path / "a.npy"), str(tmp_path / "rec"), progress=False)
    data = ds.RecordDataset(str(tmp_path / "rec"), shuffle=False)
    got = [r[0] for r in data.create_tuple_iterator(output_numpy=True)]
    np.testing.assert_array_equal(np.stack(got), array)


def test_a_file_that_shrank_is_named_at_the_read(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.zeros((100, 4), np.float64))
    rows = load_arrays(str(path))["data"]
    np.testing.assert_array_equal(rows[:10], np.zeros((10, 4)))
    os.truncate(path, 400)
    with pytest.raises(MalformedFileError, match=r"a.npy': was truncated while being read"):
        rows[50:60]


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_a_npz_that_shrinks_after_its_check_is_named(tmp_path, monkeypatch, save):
    path = tmp_path / "a.npz"
    save(path, a=np.arange(5000.0), b=np.arange(5000))
    check = array_files._check_npz

    def check_then_shrink(f, name):
        check(f, name)
        os.truncate(name, os.path.getsize(name) // 2)

    monkeypatch.setattr(array_files, "_check_npz", check_then_shrink)
    with pytest.raises(MalformedFileError, match=r"a.npz': could not be read after its check"):
        load_arrays(str(path))


# a child runs the CLI and shrinks the .npy after 3 chunks of rows are written (the same
# place for a memory-mapped reader, which then dies of SIGBUS, and for a pread one)
SHRINK_AFTER_3_CHUNKS = textwrap.dedent(
    """
    import os, sys
    from jisu.dataset.record import convert
    from jisu.cli import main

    src, dst = sys.argv[1], sys.argv[2]
    chunks = convert.array_chunks

    def shrinking(arrays):
        for i, chunk in enumerate(chunks(arrays)):
            if i == 3:  # after a block of 1024 rows went to the temporary shard
                os.truncate(src, 200)
            yield chunk

    convert.array_chunks = shrinking
    sys.exit(main(["convert", src, dst]))
    """
)


def test_convert_of_a_npy_that_shrinks_fails_cleanly(tmp_path):
    src = tmp_path / "big.npy"
    np.save(src, np.ones((4096, 64), np.float32))  # 1 MiB, 8 chunks of 512 rows
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SHRINK_AFTER_3_CHUNKS, str(src), str(out / "data")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert f"'{src}': was truncated while being read" in done.stderr
    assert os.listdir(out) == [], "the failed conversion left files behind"

"""Reading ``.npz`` and ``.npy`` files for conversion, every file treated as hostile.

A NumPy file handed to ``jisu convert`` may come from anywhere, so it is never unpickled and
is checked before its data is read: a ``.npy`` header against the bytes the file holds, and a
``.npz`` archive's members against caps on what their compressed arrays may inflate to (a few
megabytes of zip can declare gigabytes). A ``.npy`` is read by ``pread`` a chunk of rows at a
time (:class:`NpyRows`), never memory-mapped: a file that shrinks while it is converted is an
error naming it, not a SIGBUS that kills the process and leaves the temporary shards behind.
These checks are a self-contained piece of hostile-input parsing, kept apart from the
conversion that uses their result (:func:`load_arrays`).
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from typing import Any

import numpy as np

from .pread import PreadFile
from .validate import MalformedFileError, open_regular

__all__ = [
    "NPZ_MAX_INFLATED_BYTES",
    "NPZ_MAX_RATIO",
    "NPZ_RATIO_FREE_BYTES",
    "NpyRows",
    "load_arrays",
]

#: the most bytes the compressed arrays of one ``.npz`` may inflate to, together (they are
#: held in memory while converted; stored arrays and ``.npy`` files are not counted: they
#: are as large on disk as in memory, and a ``.npy`` is read a chunk of rows at a time)
NPZ_MAX_INFLATED_BYTES = 4 << 30
#: the most a compressed array may inflate over its compressed size (deflate reaches ~1,030x
#: on zeros; real arrays rarely pass 100x) once it inflates to more than
#: :data:`NPZ_RATIO_FREE_BYTES`
NPZ_MAX_RATIO = 200
#: arrays (and archives) inflating to at most this many bytes are never refused for their
#: compression ratio (a mask of zeros, sorted labels)
NPZ_RATIO_FREE_BYTES = 256 << 20


def _npy_header(
    f: Any, path: str, available: int, member: str | None = None
) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Read the ``.npy`` header at the start of the open file ``f`` (``available`` bytes):
    ``(shape, fortran_order, dtype)``, checked against what the file holds before any data
    is read (``f`` is left at the data). Errors name ``path`` and the ``.npz`` ``member``."""
    from numpy.lib import format as npy

    where = "" if member is None else f"member {member!r}: "

    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):  # 3.0 differs only in the header's text encoding
            shape, fortran, dtype = npy.read_array_header_2_0(f)
        else:
            raise ValueError(f"a .npy format version {version[0]}.{version[1]} this reader lacks")
    except ValueError as exc:
        raise MalformedFileError(path, f"{where}not a readable .npy array ({exc})") from None
    if dtype.hasobject:
        raise MalformedFileError(
            path,
            f"{where}holds Python objects (dtype {dtype}), which only pickle can read: convert "
            "refuses to unpickle; save numbers, strings or bytes",
        )
    nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    held = available - f.tell()
    if nbytes > held:
        raise MalformedFileError(
            path, f"{where}its header declares {shape} {dtype} ({nbytes} bytes); it holds {held}"
        )
    if not shape or shape[0] == 0:
        raise ValueError(f"convert: '{path}': {where}an array of shape {shape} has no rows")
    return shape, fortran, dtype


def _check_npz(f: Any, path: str) -> None:
    """Check every member of the ``.npz`` archive open as ``f`` (named ``path``) before
    anything is inflated: a ``.npy`` array, not encrypted, its ``.npy`` header consistent
    with its zip sizes, and the compressed ones within :data:`NPZ_MAX_INFLATED_BYTES` and
    :data:`NPZ_MAX_RATIO` (2.9 MB can inflate to a 3 GB array). Errors name the file and the
    member."""
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise MalformedFileError(path, f"not a readable .npz (zip) archive ({exc})") from None
    inflated = packed = 0
    largest: tuple[int, str] = (0, "")
    for info in archive.infolist():
        where = f"member {info.filename!r}"
        if not info.filename.endswith(".npy"):
            raise MalformedFileError(path, f"{where} is not a .npy array (np.savez writes those)")
        if info.flag_bits & 0x1:
            raise MalformedFileError(path, f"{where} is encrypted")
        size, compressed = info.file_size, info.compress_size
        if info.compress_type == zipfile.ZIP_STORED:
            if size != compressed:
                raise MalformedFileError(
                    path, f"{where} is stored, yet declares {size} bytes in {compressed}"
                )
        else:
            ratio = size / max(compressed, 1)
            if size > NPZ_MAX_INFLATED_BYTES:
                raise ValueError(
                    f"convert: '{path}': {where} would inflate to {size} bytes, over the "
                    f"{NPZ_MAX_INFLATED_BYTES}-byte cap on compressed arrays "
                    "(NPZ_MAX_INFLATED_BYTES); save it uncompressed (np.savez, np.save)"
                )
            if size > NPZ_RATIO_FREE_BYTES and ratio > NPZ_MAX_RATIO:
                raise ValueError(
                    f"convert: '{path}': {where} would inflate {compressed} bytes to {size} "
                    f"({ratio:.0f}x, over the {NPZ_MAX_RATIO}x allowed above "
                    f"{NPZ_RATIO_FREE_BYTES} bytes: a decompression bomb?); if the array "
                    "is genuine, save it uncompressed (np.savez, np.save)"
                )
            inflated, packed = inflated + size, packed + compressed
            largest = max(largest, (size, info.filename))
        try:
            with archive.open(info) as member:
                _npy_header(member, path, size, info.filename)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
            # a damaged local header, an unknown compression method, a bad stream
            raise MalformedFileError(path, f"{where} cannot be read ({exc})") from None
        except zlib.error as exc:
            raise MalformedFileError(path, f"{where}: damaged compressed data ({exc})") from None
    if inflated > NPZ_MAX_INFLATED_BYTES or (
        inflated > NPZ_RATIO_FREE_BYTES and inflated > NPZ_MAX_RATIO * packed
    ):
        raise ValueError(
            f"convert: '{path}': its compressed arrays would inflate {packed} bytes to "
            f"{inflated} (the largest: member {largest[1]!r}, {largest[0]} bytes); at most "
            f"{NPZ_MAX_INFLATED_BYTES} bytes and {NPZ_MAX_RATIO}x are allowed above "
            f"{NPZ_RATIO_FREE_BYTES} bytes: save them uncompressed (np.savez, np.save)"
        )


class NpyRows:
    """The rows of a ``.npy`` file, read by ``pread`` when they are asked for (never mapped).

    What conversion needs of an array: ``len``, ``shape``, ``dtype``, ``ndim`` and rows by
    index or by a slice of step 1 (each a new C-ordered array). A file that shrank since its
    header was checked gives a :class:`~jisu.dataset.record.validate.MalformedFileError`
    naming it (:meth:`PreadFile.read_into`), at any read. Thread-safe.

    Args:
        file: the open file.
        offset: where the data begins (after the header).
        shape, dtype, fortran: from the header, already checked against the file's size.
    """

    def __init__(
        self, file: PreadFile, offset: int, shape: tuple[int, ...], dtype: np.dtype, fortran: bool
    ) -> None:
        self.file, self.offset = file, offset
        self.shape, self.dtype, self.fortran = shape, dtype, fortran
        self.ndim = len(shape)
        self._inner = math.prod(shape[1:])  # values in one row

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: int | slice) -> np.ndarray:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                raise ValueError(f"NpyRows: only slices of step 1 are read. Received: {key}")
            return self._rows(start, max(start, stop))
        index = range(len(self))[key]  # IndexError past either end, negatives counted back
        return self._rows(index, index + 1)[0]

    def _rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)``: one read in C order; in Fortran order (a row's values lie
        one column apart) one read of the rows' run of each inner value."""
        n, size = stop - start, self.dtype.itemsize
        if n == 0:
            return np.empty((0, *self.shape[1:]), self.dtype)
        if not self.fortran or self.ndim < 2:
            out = np.empty((n, *self.shape[1:]), self.dtype)
            self.file.read_into(out, self.offset + start * self._inner * size)
            return out
        # the file holds a C-ordered (inner values, rows) matrix: read its columns start:stop
        runs = np.empty((self._inner, n), self.dtype)
        for value in range(self._inner):
            self.file.read_into(runs[value], self.offset + (value * len(self) + start) * size)
        return np.ascontiguousarray(runs.T.reshape((n, *self.shape[1:]), order="F"))


def load_arrays(path: str) -> dict[str, np.ndarray | NpyRows]:
    """The arrays of a ``.npz`` or ``.npy`` file, checked before their data is read.

    Never unpickled (``allow_pickle=False``). A ``.npz``'s members are checked first
    (:func:`_check_npz`: the caps on what compressed arrays may inflate to), then read into
    memory; a ``.npy``'s header is checked against the file's size and its rows are read by
    ``pread`` as they are converted (:class:`NpyRows`; a file that shrinks meanwhile is a
    :class:`MalformedFileError` at the read). The file is opened once (a FIFO is refused).

    Raises:
        MalformedFileError: a member that is not a ``.npy`` array, a header that declares
            more than the file holds, an array of Python objects.
        ValueError: an archive over :data:`NPZ_MAX_INFLATED_BYTES` or :data:`NPZ_MAX_RATIO`,
            an array with no rows; both name the file and the member.
    """
    with open(open_regular(path), "rb") as f:
        if path.endswith(".npz"):
            _check_npz(f, path)
            f.seek(0)
            try:
                with np.load(f, allow_pickle=False) as archive:
                    return {name: archive[name] for name in archive.files}
            except (zipfile.BadZipFile, EOFError, zlib.error, ValueError, OSError) as exc:
                # checked above: it changed since (it shrank, or was rewritten in place)
                raise MalformedFileError(
                    path, f"could not be read after its check: did it change? ({exc})"
                ) from None
        shape, fortran, dtype = _npy_header(f, path, os.fstat(f.fileno()).st_size)
        if math.prod(shape) * dtype.itemsize == 0:  # no bytes to read
            return {"data": np.zeros(shape, dtype)}
        rows = NpyRows(PreadFile(path, os.dup(f.fileno())), f.tell(), shape, dtype, fortran)
        return {"data": rows}

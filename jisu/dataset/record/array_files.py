"""Reading ``.npz`` and ``.npy`` files for conversion, every file treated as hostile.

A NumPy file handed to ``jisu convert`` may come from anywhere, so it is never unpickled and
is checked before its data is read: a ``.npy`` header against the bytes the file holds, and a
``.npz`` archive's members against caps on what their compressed arrays may inflate to (a few
megabytes of zip can declare gigabytes). These checks are a self-contained piece of hostile-input
parsing, kept apart from the conversion that uses their result (:func:`load_arrays`).
"""

from __future__ import annotations

import math
import os
import zlib
from typing import Any

import numpy as np

from .validate import MalformedFileError, open_regular

__all__ = [
    "NPZ_MAX_INFLATED_BYTES",
    "NPZ_MAX_RATIO",
    "NPZ_RATIO_FREE_BYTES",
    "load_arrays",
]

#: the most bytes the compressed arrays of one ``.npz`` may inflate to, together (they are
#: held in memory while converted; stored arrays and ``.npy`` files are not counted: they
#: are as large on disk as in memory, and a ``.npy`` is read memory-mapped)
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
    import zipfile

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


def load_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of a ``.npz`` or ``.npy`` file, checked before their data is read.

    Never unpickled (``allow_pickle=False``). A ``.npz``'s members are checked first
    (:func:`_check_npz`: the caps on what compressed arrays may inflate to), then read into
    memory; a ``.npy`` is memory-mapped (its pages are read as they are converted), its
    header checked against the file's size. The file is opened once (a FIFO is refused).

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
            with np.load(f, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        shape, fortran, dtype = _npy_header(f, path, os.fstat(f.fileno()).st_size)
        if math.prod(shape) * dtype.itemsize == 0:  # NumPy cannot map an array of no bytes
            return {"data": np.zeros(shape, dtype)}
        order = "F" if fortran else "C"
        return {"data": np.memmap(f, dtype, "r", offset=f.tell(), shape=shape, order=order)}

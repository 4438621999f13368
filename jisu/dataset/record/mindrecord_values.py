"""Decoding a MindRecord row's values: compressed integer arrays, blobs and msgpack scalars.

The lowest layer of the MindRecord reader (:mod:`~jisu.dataset.record.mindrecord`, whose
docstring describes the format and what is checked): turning one row's bytes into NumPy values
of the schema's type and shape, refusing bytes that do not decode (:class:`_Corrupt`, to which
the reader adds the file, page and row). Kept apart from the header and page parsing so the
per-row decoding, the part run for every value read, can be read and tuned on its own.
"""

from __future__ import annotations

import math
import reprlib

import numpy as np

from .schema import Field

__all__ = ["decode_ints"]

_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)  # of the 4 width codes in a byte, MSB first
_FEW = 64  # compressed arrays up to this length decode faster one value at a time


def _shown() -> reprlib.Repr:
    """A short repr for values from a hostile file, which may be huge."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 40
    shown.maxlist = shown.maxdict = 4
    return shown


_show = _shown().repr


class _Corrupt(ValueError):
    """A row's bytes that do not decode; the reader adds the file, page and row."""


def decode_ints(payload: memoryview, dtype: np.dtype) -> np.ndarray:
    """MindRecord's compressed int32/int64 array (see the docstring of ``mindrecord``).

    Raises:
        ValueError: the bytes do not hold such an array: a count the bytes cannot hold (checked
            before allocating), widths that do not add up to the bytes, or a value outside
            ``dtype``.
    """
    size = len(payload)
    if size < 4:
        raise _Corrupt(f"a compressed integer array of {size} bytes has no 4-byte count")
    count = int.from_bytes(payload[:4], "big")
    base = 4 + (count + 3) // 4
    if base + count > size:  # each value takes a 2-bit code and one byte at least
        raise _Corrupt(f"a compressed integer array of {size} bytes declares {count} values")
    decode = _ints_one_by_one if count <= _FEW else _ints_vectorised
    values, need = decode(payload, count, base)
    if need != size:
        raise _Corrupt(f"a compressed integer array needs {need} bytes but has {size}")
    info = np.iinfo(dtype)
    if count and (values.min() < info.min or values.max() > info.max):
        raise _Corrupt(f"a compressed integer array holds a value outside {np.dtype(dtype)}")
    return values.astype(dtype, copy=False)


def _ints_one_by_one(payload: memoryview, count: int, base: int) -> tuple[np.ndarray, int]:
    """``count`` compressed values whose codes end at ``base``, and where they end: a plain
    loop, faster than NumPy's call overhead for a few values."""
    values, pos = [], base
    for k in range(count):
        width = 1 << ((payload[4 + k // 4] >> (6 - 2 * (k % 4))) & 3)
        values.append(int.from_bytes(payload[pos : pos + width], "little", signed=True))
        pos += width
    return np.array(values, dtype=np.int64), pos


def _ints_vectorised(payload: memoryview, count: int, base: int) -> tuple[np.ndarray, int]:
    """The same as :func:`_ints_one_by_one`, vectorised: widths from the codes, their ends by a
    cumulative sum, then one gather per width (nothing read before the sizes add up)."""
    data = np.frombuffer(payload, dtype=np.uint8)
    codes = ((data[4:base, None] >> _SHIFTS) & 3).ravel()[:count]
    widths = np.left_shift(1, codes, dtype=np.int64)
    ends = base + np.cumsum(widths)
    need = int(ends[-1])
    values = np.empty(count, dtype=np.int64)
    if need == len(payload):
        for code in range(4):
            picked = np.flatnonzero(codes == code)
            if picked.size:
                width = 1 << code
                at = ends[picked, None] - width + np.arange(width)
                values[picked] = data[at].view(f"<i{width}").ravel()
    return values, need


def _raw_value(field: Field, raw: dict) -> np.ndarray:
    """A scalar field's value from the row's msgpack map, of the schema's type and range."""
    value = raw[field.name]
    if field.type == "string":
        if type(value) is not str:
            raise _Corrupt(f"a string field holds {_show(value)}")
        return np.array(value)
    if field.type in _INT_RANGE:
        low, high = _INT_RANGE[field.type]
        if type(value) is not int or not low <= value <= high:
            raise _Corrupt(f"an {field.type} field holds {_show(value)}")
        return np.array(value, dtype=field.dtype)
    if type(value) not in (int, float):
        raise _Corrupt(f"a {field.type} field holds {_show(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise _Corrupt(f"a {field.type} field holds {_show(value)}") from None
    with np.errstate(over="ignore"):  # a float64 beyond float32 reads as inf, as in MindSpore
        return np.array(number, dtype=field.dtype)


def _blob_value(field: Field, payload: memoryview, compressed: bool = True) -> np.ndarray:
    """A blob field's value: bytes, or an array of the field's type and shape (integer arrays
    compressed in version 3.0 files, plain little-endian values in version 2.0 ones)."""
    if field.type == "bytes":
        return np.frombuffer(payload, dtype=np.uint8)
    if field.type in _INT_RANGE and compressed:
        values = decode_ints(payload, field.dtype)
    else:
        if len(payload) % field.dtype.itemsize:
            raise _Corrupt(f"{len(payload)} bytes are not a whole number of {field.type} values")
        values = np.frombuffer(payload, dtype=field.dtype.newbyteorder("<"))
    shape = field.shape
    assert shape is not None  # blob fields are bytes or arrays (checked when opened)
    known = math.prod(s for s in shape if s != -1)
    if values.size % known == 0 if -1 in shape else values.size == known:
        try:
            return values.reshape(shape)
        except ValueError:  # no values and a -1 among dimensions beyond NumPy's limits
            pass
    raise _Corrupt(f"{values.size} values do not fit the shape {shape}")

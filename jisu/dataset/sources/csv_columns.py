"""CSV columns: the types ``column_defaults`` give, and the parsed fields converted to them.

:class:`~jisu.dataset.sources.csv.CSVDataset` parses every field as a string; here the string
arrays of each column become one NumPy ``int32``/``float32`` array, or, for a string column,
the UTF-8 bytes and offsets of Arrow's layout (memory linear in the file size however long one
field is), and :class:`_CSVRows` gives random access to the rows. A field that does not convert
is an error naming its file and line. Separate from the parser: this is the part that knows
the column types, the parser only splits records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .csv_errors import OP, _clip, _located, _row_line

_INT32 = np.iinfo(np.int32)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _column_kinds(column_defaults: Any) -> list[tuple[str, Any]]:
    """``(kind, default)`` per given default: kind is "int", "float" or "str"."""
    if column_defaults is None:
        return []
    if not isinstance(column_defaults, (list, tuple)):
        raise TypeError(
            f"{OP}: column_defaults must be a list of int, float or str values. "
            f"Received: column_defaults={column_defaults!r}"
        )
    kinds = []
    for i, value in enumerate(column_defaults):
        # exact Python types, as MindSpore (a bool is an int there too; NumPy scalars are not)
        if isinstance(value, int) and type(value) in (int, bool):
            if not _INT32.min <= value <= _INT32.max:
                raise ValueError(
                    f"{OP}: column_defaults[{i}] is an int column's default, which must fit "
                    f"int32. Received: column_defaults[{i}]={value!r}"
                )
            kinds.append(("int", int(value)))
        elif type(value) is float:
            kinds.append(("float", value))
        elif type(value) is str:
            kinds.append(("str", value))
        else:
            raise TypeError(
                f"{OP}: column_defaults items must be int, float or str (the column's type). "
                f"Received: column_defaults[{i}]={value!r} ({type(value).__name__})"
            )
    return kinds


def _first_failure(arr: Any, target: Any) -> int:
    """Index of the first element of ``arr`` that does not cast to ``target`` (bisection)."""
    import pyarrow.compute as pc

    lo, hi = 0, len(arr)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(arr.slice(lo, mid - lo), target)
        except Exception:
            hi = mid
        else:
            lo = mid
    return lo


class _Column:
    """One parsed column of all files: a NumPy array, or UTF-8 bytes + offsets for strings."""

    def __init__(self, kind: str, values: np.ndarray, offsets: np.ndarray | None = None):
        self.kind, self.values, self.offsets = kind, values, offsets

    def __getitem__(self, index: int) -> np.ndarray:
        if self.offsets is None:
            return np.array(self.values[index])
        begin, end = self.offsets[index], self.offsets[index + 1]
        return np.array(self.values[begin:end].tobytes().decode("utf-8"))


def _string_column(arrays: list) -> _Column:
    import pyarrow as pa

    arr = pa.concat_arrays([a.cast(pa.large_string()) for a in arrays]) if arrays else None
    if arr is None or len(arr) == 0:
        return _Column("str", np.zeros(0, np.uint8), np.zeros(1, np.int64))
    _, offsets, data = arr.buffers()
    offsets = np.frombuffer(offsets, np.int64)[arr.offset : arr.offset + len(arr) + 1]
    values = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return _Column("str", values, offsets)


def _numeric_column(
    kind: str, default: Any, arrays: list, where: list[tuple[str, bytes, int, str]], name: str
) -> _Column:
    """Convert the string fields of an int or float column; an empty field (spaces aside)
    takes the column's default. ``where``: (path, data, first record, delimiter) per array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = []
    for arr, (path, data, first, delim) in zip(arrays, where):
        text = pc.utf8_trim_whitespace(arr)
        empty = pc.equal(text, "").to_numpy(zero_copy_only=False)
        text = pc.if_else(pc.equal(text, ""), "0", text)
        if kind == "int":
            text = pc.replace_substring_regex(text, r"^\+([0-9])", r"\1")
            ok = pc.match_substring_regex(text, r"^-?[0-9]+$")
            bad = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
            if len(bad):
                problem, row = "is not an int", int(bad[0])
            else:
                try:
                    values = pc.cast(text, pa.int32()).to_numpy()
                except pa.ArrowInvalid:
                    problem, row = "is out of the int32 range", _first_failure(text, pa.int32())
                else:
                    problem = None
        else:
            try:
                values = pc.cast(text, pa.float32()).to_numpy()
            except pa.ArrowInvalid:
                problem, row = "is not a float", _first_failure(text, pa.float32())
            else:
                problem = None
                wide = pc.cast(text, pa.float64()).to_numpy()
                over = np.flatnonzero(np.isinf(values) & np.isfinite(wide))
                if len(over):
                    problem, row = "is out of the float32 range", int(over[0])
        if problem is not None:
            value = arr[row].as_py()
            line = _row_line(data, delim, first + row)
            raise _located(path, line, f"column {_clip(name)}: {_clip(value)} {problem}")
        dtype = np.int32 if kind == "int" else np.float32
        parts.append(np.where(empty, dtype(default), values).astype(dtype, copy=False))
    dtype = np.int32 if kind == "int" else np.float32
    values = np.concatenate(parts) if parts else np.zeros(0, dtype)
    return _Column(kind, values)


class _CSVRows:
    """Random access to the parsed rows: item ``i`` is a tuple of 0-d arrays."""

    def __init__(self, columns: list[_Column], files: list[str], file_rows: list[int]) -> None:
        self.columns = columns
        self.files = files
        self.file_starts = np.cumsum([0, *file_rows]).astype(np.int64)

    def __len__(self) -> int:
        return int(self.file_starts[-1])

    def __getitem__(self, index: int) -> tuple:
        return tuple(c[index] for c in self.columns)

    def where(self, index: int) -> tuple[str, int]:
        k = int(np.searchsorted(self.file_starts, index, side="right")) - 1
        return self.files[k], index - int(self.file_starts[k])

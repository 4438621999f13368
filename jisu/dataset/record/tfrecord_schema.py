"""The schema of a TFRecord data set: MindSpore's schema JSON file, or a
:class:`~jisu.dataset.Schema`, as the :class:`~.tfrecord_reader.Column` list that
:class:`~.tfrecord_reader.TFRecordReader` reads (names, the NumPy types features are cast to,
shapes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .tfrecord_reader import OP, Column
from .validate import MalformedFileError

_SCHEMA_TYPES = {
    name: np.dtype(name)
    for name in [
        *("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"),
        *("uint64", "float16", "float32", "float64"),
    ]
}


def schema_columns(schema_columns: list[dict]) -> list[Column]:
    """The columns of a :class:`~jisu.dataset.Schema` (its ``columns``: ``name``, ``type``,
    ``shape`` of each), checked as TFRecord features can read."""
    columns = []
    for c in schema_columns:
        dtype = c["type"]
        if dtype is not None and dtype.kind not in "US" and dtype not in _SCHEMA_TYPES.values():
            raise TypeError(
                f"{OP}: schema column {c['name']!r} has type {dtype}; TFRecord features read as "
                f"{', '.join(_SCHEMA_TYPES)} or string"
            )
        shape = None if c["shape"] is None else _check_shape(c["name"], c["shape"], "schema")
        columns.append(Column(c["name"], dtype, shape))
    return columns


def _check_shape(name: str, shape: Any, where: str) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1) for d in shape
    ):
        raise ValueError(
            f"{OP}: {where} column {name!r}: shape must be a list of ints > 0 (one may be -1). "
            f"Received: shape={shape!r}"
        )
    if list(shape).count(-1) > 1:
        raise ValueError(f"{OP}: {where} column {name!r}: shape has more than one -1: {shape}")
    return tuple(shape)


def load_schema_file(path: str) -> tuple[list[Column], int | None]:
    """Columns and ``numRows`` of a MindSpore schema JSON file, parsed strictly::

        {"datasetType": "TF", "numRows": 3,
         "columns": {"label": {"type": "int64", "rank": 1, "shape": [1]}, ...}}

    ``columns`` may also be a list of ``{"name": ..., "type": ..., "rank": ...}``. The columns
    come in MindSpore's order: an object's sorted by name (MindSpore parses the file into a
    sorted JSON object), a list's in its order.
    """

    def bad(reason: str) -> MalformedFileError:
        return MalformedFileError(path, f"is not a valid schema file: {reason}")

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{OP}: the schema file '{path}' does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad(f"not JSON ({exc})") from None
    return parse_schema(doc, bad)


def parse_schema(doc: Any, bad: Callable[[str], Exception]) -> tuple[list[Column], int | None]:
    """Columns and ``numRows`` of a parsed schema document (see :func:`load_schema_file`);
    ``bad(reason)`` makes the error raised for a malformed one."""
    if not isinstance(doc, dict):
        raise bad("the top level must be an object")
    unknown = set(doc) - {"datasetType", "numRows", "columns"}
    if unknown:
        raise bad(f"unknown field(s) {sorted(unknown)} (known: datasetType, numRows, columns)")
    if "datasetType" in doc and not isinstance(doc["datasetType"], str):
        raise bad("datasetType must be a string")
    num_rows = doc.get("numRows")
    if "numRows" in doc and (
        isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 0
    ):
        raise bad(f"numRows must be an int >= 0, not {num_rows!r}")
    if "columns" not in doc:
        raise bad('"columns" is required')
    raw = doc["columns"]
    if isinstance(raw, dict):
        items = []
        for name, attrs in sorted(raw.items()):
            if not isinstance(attrs, dict):
                raise bad(f"column {name!r} must be an object")
            if "name" in attrs and attrs["name"] != name:
                raise bad(f"column {name!r} has another name {attrs['name']!r}")
            items.append((name, attrs))
    elif isinstance(raw, list):
        items = []
        for attrs in raw:
            if not isinstance(attrs, dict) or not isinstance(attrs.get("name"), str):
                raise bad(f"each column must be an object with a string name, not {attrs!r}")
            items.append((attrs["name"], attrs))
    else:
        raise bad('"columns" must be an object or a list')
    if not items:
        raise bad('"columns" is empty')
    columns = []
    for name, attrs in items:
        if not name:
            raise bad("a column has an empty name")
        unknown = set(attrs) - {"name", "type", "rank", "shape", "t_impl"}
        if unknown:
            raise bad(
                f"column {name!r} has unknown attribute(s) {sorted(unknown)} (known: name, "
                "type, rank, shape, t_impl)"
            )
        kind = attrs.get("type")
        if kind != "string" and kind not in _SCHEMA_TYPES:
            raise bad(
                f"column {name!r} has type {kind!r}; expected one of {', '.join(_SCHEMA_TYPES)}"
                ", string"
            )
        # MindSpore 2.10: ``rank`` may be left out, and a shape wins over a rank that
        # disagrees; without a shape the column's shape is unknown (rank 0: a scalar)
        rank = attrs.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise bad(f"column {name!r} has rank {rank!r}; a rank is an int >= 0")
        shape = None
        if "shape" in attrs:
            try:
                shape = _check_shape(name, attrs["shape"], "schema file")
            except ValueError as exc:
                raise bad(str(exc).split(": ", 1)[1]) from None
        elif rank == 0:
            shape = ()
        dtype = np.dtype(np.str_) if kind == "string" else _SCHEMA_TYPES[kind]
        columns.append(Column(name, dtype, shape))
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise bad(f"column names repeat: {names}")
    return columns, num_rows

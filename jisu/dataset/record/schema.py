"""Record schemas: MindRecord's field description, checked, and its Arrow form."""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any

import numpy as np
import pyarrow as pa

NUMERIC = {
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
    # beyond MindRecord's types: images and half-precision features keep their dtype
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "float16": np.float16,
}
TYPES = (*NUMERIC, "string", "bytes")
MAX_ELEMENTS = 2**31 - 1  # elements of one fixed-shape row: Arrow's list sizes are int32


class Field:
    """One field: a MindRecord type name and, for arrays, a shape (-1: any length)."""

    def __init__(self, name: str, type_name: str, shape: list[int] | None = None) -> None:
        self.name = name
        self.type = type_name
        self.shape = None if shape is None else [int(s) for s in shape]

    @property
    def is_array(self) -> bool:
        return self.shape is not None

    @property
    def fixed_size(self) -> int | None:
        """Elements per row of a fixed-shape array field."""
        if self.shape is None or any(s < 0 for s in self.shape):
            return None
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype | None:
        return np.dtype(NUMERIC[self.type]) if self.type in NUMERIC else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.shape is not None:
            out["shape"] = self.shape
        return out

    def arrow_type(self) -> pa.DataType:
        if self.type == "string":
            return pa.large_string()
        if self.type == "bytes":
            return pa.large_binary()
        value = pa.from_numpy_dtype(self.dtype)
        if self.shape is None:
            return value
        size = self.fixed_size
        return pa.list_(value, size) if size is not None else pa.large_list(value)


def parse_schema(schema: Any, op: str = "FileWriter.add_schema") -> list[Field]:
    """Check a MindRecord-style schema ``{name: {"type": t, "shape": [...]}}``."""
    if not isinstance(schema, dict) or not schema:
        raise ValueError(f"{op}: schema must be a non-empty dict of fields. Received: {schema!r}")
    fields = []
    for name, spec in schema.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{op}: field names must be non-empty str. Received: {name!r}")
        if not isinstance(spec, dict) or spec.get("type") not in TYPES:
            raise ValueError(
                f"{op}: field '{name}' needs a type among {list(TYPES)}. Received: {spec!r}"
            )
        shape = spec.get("shape")
        if shape is not None:
            if spec["type"] not in NUMERIC:
                raise ValueError(
                    f"{op}: field '{name}': only numeric types take a shape. Received: {spec!r}"
                )
            if (
                not isinstance(shape, (list, tuple))
                or not shape
                or not all(
                    isinstance(s, int) and not isinstance(s, bool) and (s > 0 or s == -1)
                    for s in shape
                )
            ):
                raise ValueError(
                    f"{op}: field '{name}': shape must be a non-empty list of "
                    f"positive ints or -1. Received: shape={shape!r}"
                )
            if sum(s == -1 for s in shape) > 1:
                raise ValueError(
                    f"{op}: field '{name}': at most one -1 in shape. Received: shape={shape!r}"
                )
            if math.prod(s for s in shape if s > 0) > MAX_ELEMENTS:
                raise ValueError(
                    f"{op}: field '{name}': a row may hold at most {MAX_ELEMENTS} elements "
                    f"(Arrow's list size). Received: shape={shape!r}"
                )
        fields.append(Field(name, spec["type"], shape))
    return fields


def arrow_schema(fields: list[Field], desc: str | None) -> pa.Schema:
    """The Arrow schema of a shard; the jisu field description rides in the metadata."""
    metadata = {
        "jisu.schema": json.dumps({f.name: f.to_dict() for f in fields}),
        "jisu.desc": desc or "",
    }
    return pa.schema([pa.field(f.name, f.arrow_type()) for f in fields], metadata=metadata)


def check_value(field: Field, value: Any, row: int) -> Any:
    """A row's value for ``field``, converted for writing; a clear error if it does not fit."""
    where = f"FileWriter.write_raw_data: row {row}, field '{field.name}'"
    if field.type == "string":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected str. Received: {type(value).__name__}")
        return value
    if field.type == "bytes":
        if isinstance(value, np.ndarray):
            value = value.tobytes()
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"{where}: expected bytes. Received: {type(value).__name__}")
        return bytes(value)
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{where}: expected a number (or array) of {field.type}. Received dtype {array.dtype}"
        )
    if field.shape is None:
        if array.ndim != 0:
            raise ValueError(f"{where}: expected a scalar. Received shape {array.shape}")
        return array.astype(field.dtype)
    if field.fixed_size is not None:
        if array.size != field.fixed_size:
            raise ValueError(f"{where}: expected shape {field.shape}. Received shape {array.shape}")
    elif array.size and any(s > 0 for s in field.shape):
        known = math.prod(s for s in field.shape if s > 0)
        if array.size % known:
            raise ValueError(f"{where}: {array.size} elements do not fit shape {field.shape}")
    return array.astype(field.dtype).ravel()


def column_of(field: Field, values: list) -> Any:
    """Checked per-row values (from :func:`check_value`) as one column of a chunk."""
    if field.type in ("string", "bytes") or (field.fixed_size is None and field.is_array):
        return values
    if field.shape is None:
        return np.array(values, dtype=field.dtype)
    return np.stack(values).reshape(len(values), *field.shape)


def checked_column(field: Field, values: Any) -> Any:
    """A whole column given to ``write_columns``, checked and converted at once."""
    where = f"FileWriter.write_columns: field '{field.name}'"
    if isinstance(values, pa.Array):  # already Arrow (zero-copy from a reader): type must fit
        if not values.type.equals(field.arrow_type()):
            raise TypeError(
                f"{where}: an Arrow column of type {values.type} for a field of "
                f"type {field.arrow_type()}"
            )
        return values
    if field.type == "string":
        values = list(values)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{where}: expected str values")
        return values
    if field.type == "bytes":
        values = [v.tobytes() if isinstance(v, np.ndarray) else v for v in values]
        if not all(isinstance(v, (bytes, bytearray, memoryview)) for v in values):
            raise TypeError(f"{where}: expected bytes values")
        return values
    if field.is_array and field.fixed_size is None:
        return [check_value(field, v, k) for k, v in enumerate(values)]
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{where}: expected numbers of {field.type}. Received dtype {array.dtype}")
    shape = () if field.shape is None else tuple(field.shape)
    if array.shape[1:] != shape and array.reshape(len(array), -1).shape[1] != math.prod(shape):
        raise ValueError(
            f"{where}: expected rows of shape {list(shape)}. Received {list(array.shape[1:])}"
        )
    return array.astype(field.dtype, copy=False).reshape(len(array), *shape)


class ColumnOrder(Enum):
    """Every field, in another order than the schema's (a readers' ``columns`` argument)."""

    #: sorted by name: MindSpore's ``MindDataset`` order (its header stores the schema as a
    #: JSON object, which MindSpore reads back sorted), whatever order ``add_schema`` had
    SORTED = "sorted"


def select_fields(fields: list[Field], columns: Any) -> list[Field]:
    """The fields named by ``columns_list`` (in its order); all of them in the schema's order
    (``None``) or sorted by name (:attr:`ColumnOrder.SORTED`, ``MindDataset``'s order)."""
    names = [f.name for f in fields]
    if columns is None:
        return list(fields)
    if columns is ColumnOrder.SORTED:
        return sorted(fields, key=lambda f: f.name)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValueError(
            f"RecordDataset: unknown column(s) {unknown} in columns_list; the data set has {names}"
        )
    return [fields[names.index(c)] for c in columns]

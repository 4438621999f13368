"""``Schema``: the names, types and shapes of a source's columns (``mindspore.dataset.Schema``).

Columns come from a MindSpore schema JSON file, a parsed JSON document (:meth:`Schema.from_json`),
a list or dict of column descriptions (:meth:`Schema.parse_columns`) or one at a time
(:meth:`Schema.add_column`); :meth:`Schema.to_json` writes MindSpore's layout back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError
from ..core.rows import to_numpy_dtype


def _type_name(dtype: np.dtype | None) -> str | None:
    """MindSpore's name of a column type (``int32``, ``string``, ``bytes`` ...)."""
    if dtype is None:
        return None
    return {"U": "string", "S": "bytes"}.get(dtype.kind, dtype.name)


def _column_dtype(where: str, name: str, kind: Any) -> np.dtype:
    """A column's type: a name (``"int32"``, ``"string"``), a NumPy/torch dtype or
    ``mstype.string``."""
    if kind == "string":
        return np.dtype(np.str_)
    try:
        return to_numpy_dtype(kind)
    except TypeError:
        raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
            f"{where}: column {name!r} has an unknown type {kind!r}"
        ) from None


class Schema:
    """Column names, types and shapes of a source (``mindspore.dataset.Schema``'s role).

    ``columns`` holds one ``{"name", "type", "shape"}`` dict per column (``type`` a NumPy
    dtype, ``shape`` a list or None when unknown).

    Example:
        >>> schema = Schema()
        >>> schema.add_column("image", de_type=jisu.uint8, shape=[-1])
        >>> schema.from_json({"columns": {"label": {"type": "int32", "rank": 1, "shape": [1]}}})
    """

    def __init__(self, schema_file: str | os.PathLike | None = None) -> None:
        """``schema_file``: a MindSpore schema JSON file to take the columns from (names,
        types, shapes), checked strictly; None: no columns yet (add them with
        :meth:`add_column`)."""
        self.columns: list[dict[str, Any]] = []
        if schema_file is None:
            return
        if not isinstance(schema_file, (str, os.PathLike)):
            raise TypeError(
                f"Schema: schema_file must be a path or None. Received: schema_file={schema_file!r}"
            )
        from ..record.tfrecord_schema import load_schema_file

        path = os.fspath(schema_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Schema: the schema file '{path}' does not exist")
        self._set(load_schema_file(path)[0])

    def _set(self, columns: list) -> None:
        self.columns = [
            {"name": c.name, "type": c.dtype, "shape": None if c.shape is None else list(c.shape)}
            for c in columns
        ]

    def add_column(
        self, name: str, de_type: Any = None, shape: Sequence[int] | None = None
    ) -> None:
        """Add column ``name`` of type ``de_type`` (a dtype, a type name, ``mstype.string``)
        and ``shape`` (None: unknown)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"Schema.add_column: name must be a non-empty str. Received: {name!r}")
        if de_type is None:
            dtype = None
        else:  # a name MindSpore knows, or any dtype (TypeError for what is no type)
            dtype = np.dtype(np.str_) if de_type == "string" else to_numpy_dtype(de_type)
        self.columns.append(
            {"name": name, "type": dtype, "shape": None if shape is None else list(shape)}
        )

    def parse_columns(self, columns: list[dict] | tuple[dict, ...] | dict[str, dict]) -> None:
        """Replace the columns with ``columns``: a list of ``{"name", "type", "shape"}`` dicts
        (``shape`` optional), or a dict ``{name: {"type", "shape"}}``.

        Raises:
            PipelineValueError: a column without a name or a type, or of an unknown type
                (MindSpore 2.10: a RuntimeError).
        """
        where = "Schema.parse_columns"
        if isinstance(columns, dict):
            items = [(name, attrs) for name, attrs in columns.items()]
        elif isinstance(columns, (list, tuple)):
            items = [(c.get("name") if isinstance(c, dict) else None, c) for c in columns]
        else:
            raise TypeError(f"{where}: columns must be a list or a dict. Received: {columns!r}")
        parsed = []
        for name, attrs in items:
            if not isinstance(name, str) or not name or not isinstance(attrs, dict):
                raise PipelineValueError(
                    f"{where}: a column's name is missing. Received: {attrs!r}"
                )
            if "type" not in attrs:
                raise PipelineValueError(f"{where}: column {name!r}'s type is missing")
            shape = attrs.get("shape")
            if shape is not None and not (
                isinstance(shape, (list, tuple)) and all(isinstance(d, int) for d in shape)
            ):
                raise PipelineValueError(f"{where}: column {name!r}'s shape must be a list of ints")
            dtype = _column_dtype(where, name, attrs["type"])
            parsed.append(
                {"name": name, "type": dtype, "shape": None if shape is None else list(shape)}
            )
        self.columns = parsed

    def from_json(self, json_obj: dict) -> None:
        """Replace the columns with those of ``json_obj``, a parsed schema file
        (``{"columns": ..., "datasetType": ..., "numRows": ...}``), checked as a schema file is.

        Raises:
            PipelineValueError: an unknown field, no ``columns``, a malformed column
                (MindSpore 2.10: a RuntimeError).
        """
        from ..record.tfrecord_schema import parse_schema

        def bad(reason: str) -> Exception:
            return PipelineValueError(f"Schema.from_json: not a valid schema: {reason}")

        self._set(parse_schema(json_obj, bad)[0])

    def to_json(self) -> str:
        """The columns as MindSpore's schema JSON (``name``, ``type``, ``rank`` and ``shape``
        where known)."""
        columns = []
        for c in self.columns:
            entry: dict[str, Any] = {"name": c["name"], "type": _type_name(c["type"])}
            if c["shape"] is not None:
                entry.update(rank=len(c["shape"]), shape=list(c["shape"]))
            columns.append(entry)
        return json.dumps({"columns": columns}, indent=2)

    def __str__(self) -> str:
        return self.to_json()

    @property
    def column_names(self) -> list[str]:
        return [c["name"] for c in self.columns]

    @property
    def column_types(self) -> list:
        return [c["type"] for c in self.columns]

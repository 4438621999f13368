"""A batch's rows read straight into the batch's arrays (a record source right below a batch).

Read row by row, a batch costs a fresh array per row and column, the Python of one read per
row, then ``np.stack``'s second copy of every byte: for rows of a few KiB that is most of the
time. :func:`gather` locates all the rows at once (NumPy over the indices), checks that each
column's rows share one shape, allocates each column's batch array once and fills it: one
``pread`` per row straight into its place, a copy from the batch's bytes kept in memory, or one
fancy index for a column kept whole (scalars, small arrays). The bytes and the checks are those
of a row read (a short read is the same :class:`~.validate.MalformedFileError`); rows of
different shapes, text columns, arrays of variable shape and batches not in a local file
(object storage read by ranges) give None, and the batch is then assembled row by row (which
pads, makes a ragged column or names the rows that differ).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .arrow_file import FileColumns


def gather(reader: Any, indices: np.ndarray) -> list[np.ndarray] | None:
    """Rows ``indices`` of ``reader`` (a :class:`~.reader.RecordReader`) as one array per
    column, rows in the order given; None when they cannot be gathered (see the module
    docstring)."""
    shards, batches, rows = reader.locate_many(indices)
    keys = (shards * (1 << 32) + batches).tolist()
    found: dict[int, FileColumns] = {}
    for key in set(keys):
        views = reader.batch_columns(key >> 32, key & 0xFFFFFFFF)
        if not isinstance(views, FileColumns):
            return None  # read by ranges from object storage
        found[key] = views
    row_views = [found[key] for key in keys]
    js = rows.tolist()
    columns = []
    for k in range(len(reader.fields)):
        spec = _column_spec(k, found.values(), row_views, js)
        if spec is None:
            return None
        columns.append(np.empty((len(js), *spec[0]), spec[1]))
    _fill(row_views, js, columns)
    return columns


def _column_spec(
    k: int, batches: Any, row_views: list[FileColumns], js: list[int]
) -> tuple[tuple, np.dtype] | None:
    """The shape of one row and the dtype shared by column ``k``'s rows (None: they differ,
    or the column is not gathered)."""
    found = None
    for views in batches:
        layout = views.layouts[k]
        if layout is None:
            return None
        kind = layout[0]
        if kind == "rows":
            spec = (layout[1].shape[1:], layout[1].dtype)
        elif kind == "fixed":
            spec = (tuple(layout[2]), layout[3])
        else:  # bytes: checked per row below
            spec = (None, np.dtype(np.uint8))
        if found is not None and found != spec:
            return None
        found = spec
    if found is None or found[0] is not None:
        return found
    lengths = set()
    for views, j in zip(row_views, js):
        starts = views.layouts[k][1]
        lengths.add(starts[j + 1] - starts[j])
    return ((lengths.pop(),), found[1]) if len(lengths) == 1 else None


def _fill(row_views: list[FileColumns], js: list[int], columns: list) -> None:
    """Rows ``js`` of their record batches into ``columns``: copied from the bytes kept in
    memory, or read from their files by ``pread`` straight into place (a file's descriptor
    taken at its first such read)."""
    held: dict[int, tuple[Any, int]] = {}  # id(file) -> (file, descriptor)
    try:
        for k, out in enumerate(columns):
            row_bytes = out[0].nbytes if len(out) else 0
            for i, (views, j) in enumerate(zip(row_views, js)):
                layout = views.layouts[k]
                kind = layout[0]
                if kind == "rows":
                    out[i] = layout[1][j]
                    continue
                if kind == "fixed":
                    where = layout[1] + j * row_bytes
                else:
                    starts, first, data = layout[1], layout[2], layout[3]
                    if data is not None:  # the batch's bytes are kept in memory
                        out[i] = data[starts[j] - first : starts[j + 1] - first]
                        continue
                    where = layout[4] + starts[j]
                file = views.file
                entry = held.get(id(file))
                if entry is None:
                    entry = held[id(file)] = (file, file._fd[0] if file.pinned else file.acquire())
                if row_bytes and os.preadv(entry[1], [out[i]], where) != row_bytes:
                    file.read_into(out[i], where, entry[1])  # the end of the file: the error
    finally:
        for file, _fd in held.values():
            if not file.pinned:
                file.release()

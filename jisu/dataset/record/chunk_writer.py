"""Writing a record data set from column chunks, its rows dealt evenly to its shards.

Every conversion (:func:`~jisu.dataset.record.convert.convert`) and ``Dataset.save`` ends
here: a source becomes an iterator of column chunks ``(rows, {field: values})`` and
:func:`write_chunks` writes them all or nothing (``FileWriter.commit``, or ``abort`` on any
error). It lives apart from the sources it is fed by (image folders, ``.npz`` files, pipelines)
so that the one write path, and its rule for dealing rows evenly to shards
(:func:`balanced_block_rows`), is written and tested once.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from ..core.error_types import PipelineValueError
from .format import class_indexing_problem
from .schema import NUMERIC
from .writer import FileWriter

if TYPE_CHECKING:
    from ..core.node import Dataset

__all__ = [
    "array_chunks",
    "balanced_block_rows",
    "dealt_rows",
    "field_of",
    "write_chunks",
    "write_dataset",
]

_CHUNK_ROWS = 512  # rows per column chunk (the image folder reader reads ahead by as many)


def dealt_rows(rows: int, block_rows: int, shards: int) -> list[int]:
    """The rows each shard gets when ``rows`` rows are dealt in blocks of ``block_rows`` (the
    last one shorter), block ``k`` to shard ``k % shards``: ``FileWriter``'s layout (the reader's
    ``block_layout``), summed per shard in O(shards)."""
    full, rest = divmod(rows, block_rows)
    return [
        (full // shards + (s < full % shards)) * block_rows + (rest if s == full % shards else 0)
        for s in range(shards)
    ]


def balanced_block_rows(rows: int, shards: int, largest: int) -> int:
    """The block size (rows per record batch, at most ``largest``) that deals ``rows`` rows
    evenly to ``shards`` shards.

    ``FileWriter`` deals whole blocks round-robin and picks blocks of up to 1,024 rows (4 MiB),
    so a small data set (480 thumbnails) was one block: every row in shard 0, the other shards
    empty, and a file-level shuffle had nothing to shuffle. Here the block starts at the
    shards' fair share (rows / shards, or a fraction of it so that blocks stay within
    ``largest``) and shrinks until the shards' row counts differ by at most 1 % of a shard, or
    by one row (480 rows in 4 shards: blocks of 120, one run of consecutive rows per shard).
    The tolerance keeps blocks large: an exact split to one row can take one-row blocks.
    """
    if shards <= 1 or rows <= 0:
        return largest
    blocks_per_shard = -(-rows // (shards * largest))
    start = min(largest, max(1, -(-rows // (shards * blocks_per_shard))))
    tolerance = max(1, rows // shards // 100)
    for block_rows in range(start, 0, -1):
        counts = dealt_rows(rows, block_rows, shards)
        if max(counts) - min(counts) <= tolerance:
            return block_rows
    return 1  # not reached: blocks of one row deal to within one row


class _EvenWriter(FileWriter):
    """A ``FileWriter`` whose blocks deal ``rows`` expected rows evenly to its shards (see
    :func:`balanced_block_rows`); ``rows=None`` (an unknown count) keeps the writer's blocks.
    The layout stays the writer's (uniform blocks dealt round-robin, ``block_rows`` in the
    manifest), so any reader rebuilds the written order."""

    def __init__(
        self,
        file_name: str,
        shard_num: int,
        overwrite: bool,
        rows: int | None,
        storage_options: dict | None = None,
    ) -> None:
        super().__init__(file_name, shard_num, overwrite, storage_options)
        self._expected_rows = rows

    def _choose_block_rows(self, chunk: dict[str, Any], n: int) -> int:
        largest = super()._choose_block_rows(chunk, n)
        if self._expected_rows is None:
            return largest
        return balanced_block_rows(self._expected_rows, self.shard_num, largest)


#: dtypes the record format does not hold, saved as the type MindSpore 2.10's ``save`` gives
#: them (MindRecord has no unsigned types): each holds every value of the original
_WIDENED = {"bool": "int32", "uint16": "int32", "uint32": "int64"}


def field_of(name: str, value: np.ndarray) -> dict:
    """The record field that holds ``value`` (the first row's value of column ``name``)."""
    if value.dtype.kind == "U":
        return {"type": "string"}
    if value.dtype.kind == "S":
        return {"type": "bytes"}
    dtype = _WIDENED.get(value.dtype.name, value.dtype.name)
    if dtype not in NUMERIC:
        raise TypeError(
            f"save: column '{name}' has dtype {value.dtype}, which the record format "
            f"does not hold; cast it (TypeCast) to one of {list(NUMERIC)}"
        )
    if value.ndim == 0:
        return {"type": dtype}
    # the first axis may vary from row to row (a byte string, a list of boxes)
    return {"type": dtype, "shape": [-1, *value.shape[1:]]}


def _value(name: str, field: dict, value: np.ndarray) -> Any:
    if field["type"] == "string":
        return str(value)
    if field["type"] == "bytes":
        return value.tobytes() if value.dtype.kind != "S" else bytes(value.item())
    shape = field.get("shape")
    if shape is not None and list(value.shape[1:]) != shape[1:]:
        # the record keeps rows flat: another inner shape would come back reshaped
        raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
            f"save: column '{name}' changes shape beyond its first axis: a row of shape "
            f"{list(value.shape)} after rows of shape [-1, {', '.join(map(str, shape[1:]))}]; "
            "only the first axis may vary from row to row"
        )
    return value


def write_dataset(
    dataset: Dataset,
    file_name: str,
    num_files: int = 1,
    overwrite: bool = False,
    schema: dict | None = None,
    progress: bool | None = None,
    description: str = "",
    storage_options: dict | None = None,
    class_indexing: dict[str, int] | None = None,
) -> dict:
    """Write one epoch of ``dataset`` as a record data set; returns rows, bytes and seconds.

    Args:
        schema: the fields (default: from the first row: numbers and arrays keep their dtype
            and shape, strings become ``string``).
        progress: show a progress bar (default: when stderr is a terminal).
        storage_options: for a URL ``file_name``: the filesystem's options (see
            :class:`FileWriter`).
        class_indexing: the ``{class name: label}`` to record in the manifest (see
            :meth:`FileWriter.set_class_indexing`); default: ``dataset.get_class_indexing()``
            when that is such a map (an image folder's, a record data set's), else none.
    """
    if class_indexing is None:
        class_indexing = _class_indexing_of(dataset)
    if schema is None:
        shapes, dtypes = dataset._spec()
        schema = {
            name: field_of(name, np.zeros(shape, dtype))
            for name, shape, dtype in zip(dataset.get_col_names(), shapes, dtypes)
        }
    try:
        total = dataset._row_count()
    except Exception:  # an unknown size only costs the progress bar its total
        total = None
    return write_chunks(
        file_name,
        num_files,
        overwrite,
        schema,
        _rows_as_chunks(dataset, schema),
        total,
        progress,
        description,
        storage_options,
        class_indexing,
    )


def _class_indexing_of(dataset: Dataset) -> dict[str, int]:
    """The source's ``{class name: label}``, or ``{}`` where it has none the manifest can
    hold: COCO's ``{name: [ids]}``, a task without one (``NotImplementedError``)."""
    try:
        indexing = dataset.get_class_indexing()
    except NotImplementedError:
        return {}
    return {} if class_indexing_problem(indexing) else indexing


def _rows_as_chunks(dataset: Dataset, schema: dict) -> Iterator[tuple[int, dict]]:
    """One epoch of ``dataset`` as column chunks for ``schema``."""
    columns = dataset.get_col_names()
    iterator = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    rows = (row for row in iterator)  # stays ended after the epoch (no next() past it)
    try:
        while batch := list(itertools.islice(rows, _CHUNK_ROWS)):
            yield (
                len(batch),
                {
                    name: [_value(name, schema[name], row[k]) for row in batch]
                    for k, name in enumerate(columns)
                },
            )
    finally:
        iterator.close()


def write_chunks(
    file_name: str,
    num_files: int,
    overwrite: bool,
    schema: dict,
    chunks: Iterator[tuple[int, dict]],
    total: int | None,
    progress: bool | None,
    description: str = "",
    storage_options: dict | None = None,
    class_indexing: dict[str, int] | None = None,
) -> dict:
    """Write column chunks ``(rows, {field: values})`` as a record data set (all or nothing).

    With several files, rows are dealt so every shard gets its share (``total`` rows expected;
    see :func:`balanced_block_rows`). ``class_indexing`` goes to the manifest
    (:meth:`FileWriter.set_class_indexing`; None: ``{}``).

    Returns:
        ``rows``, ``bytes``, ``seconds``, ``files`` (the shards) and ``removed``: the
        ``(path, bytes freed)`` of files left by killed writers of ``file_name`` that the
        writer removed first.
    """
    begin = time.perf_counter()
    writer = _EvenWriter(file_name, num_files, overwrite, total, storage_options)
    writer.add_schema(schema, description)
    if class_indexing:
        writer.set_class_indexing(class_indexing)
    rows = 0
    bar = tqdm(
        total=total,
        unit="rows",
        desc=os.path.basename(file_name),
        disable=None if progress is None else not progress,
    )
    try:
        for n, columns in chunks:
            writer.write_columns(columns, parallel_writer=num_files > 1)
            rows += n
            bar.update(n)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        bar.close()
    size = writer.bytes_written  # the shards' bytes (their files may be remote)
    return {
        "rows": rows,
        "bytes": size,
        "seconds": time.perf_counter() - begin,
        "files": writer.paths,
        "removed": writer.removed_leftovers,
    }


def array_chunks(arrays: dict[str, np.ndarray]) -> Iterator[tuple[int, dict]]:
    """Chunks of rows of in-memory arrays."""
    n = len(next(iter(arrays.values())))
    for start in range(0, n, _CHUNK_ROWS):
        end = min(start + _CHUNK_ROWS, n)
        yield end - start, {k: v[start:end] for k, v in arrays.items()}

"""MindSpore's ``mindspore.mindrecord`` path: ``FileWriter`` (jisu's record writer, which also
reads MindSpore's own MindRecord files through ``MindDataset``, with MindSpore's
``FileWriter.open_for_append``) and ``FileReader``, which reads a record file (MindSpore's
MindRecord or jisu's) row by row as MindSpore's does."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .dataset import FileWriter as _RecordWriter

__all__ = ["FileReader", "FileWriter"]


class FileWriter(_RecordWriter):
    """jisu's record writer (:class:`jisu.dataset.FileWriter`) with MindSpore's
    ``open_for_append``."""

    @classmethod
    def open_for_append(cls, file_name: str) -> FileWriter:
        """A writer of the jisu data set ``file_name`` (its name or one of its shard files)
        that already holds its rows, schema, description, index fields and class indexing:
        ``write_raw_data`` adds rows after them, and ``commit()`` replaces the data set
        atomically (readers see the old rows until then), as MindSpore's append does.

        Raises:
            NotImplementedError: ``file_name`` is a MindRecord file written by MindSpore (jisu
                writes its own format; write a new data set instead).
        """
        from .dataset.record.format import MANIFEST_SUFFIX
        from .dataset.record.mindrecord import is_mindrecord
        from .dataset.sources.record import open_records

        if is_mindrecord(str(file_name)):
            raise NotImplementedError(
                "mindspore.mindrecord.FileWriter.open_for_append is not provided by jisu for a "
                "MindRecord file written by MindSpore: jisu writes its own record format; read "
                "it with MindDataset and write a new data set with FileWriter"
            )
        reader = open_records(file_name, None, verify=True)
        meta = reader.meta
        name = meta.path[: -len(MANIFEST_SUFFIX)]
        writer = cls(name, shard_num=len(reader.shard_paths), overwrite=True)
        schema = {}
        for field in reader.fields:
            schema[field.name] = {"type": field.type}
            if field.shape is not None:
                schema[field.name]["shape"] = list(field.shape)
        writer.add_schema(schema, meta.desc or None)
        if meta.index_fields:
            writer.add_index(list(meta.index_fields))
        if meta.class_indexing:
            writer.set_class_indexing(dict(meta.class_indexing))
        names = [field.name for field in reader.fields]
        rows = [dict(zip(names, reader[i], strict=True)) for i in range(len(reader))]
        for row in rows:
            for key in names:
                if schema[key]["type"] == "bytes":
                    row[key] = bytes(row[key])
                elif "shape" not in schema[key]:
                    row[key] = row[key].item() if hasattr(row[key], "item") else row[key]
        if rows:
            writer.write_raw_data(rows)
        return writer


class FileReader:
    """MindSpore's row reader: ``get_next()`` yields one dict per row, in file order, with
    MindSpore's value kinds: ``int``/``float``/``str`` for scalar fields, ``bytes`` for bytes
    fields, NumPy arrays for array fields. ``num_consumer`` and ``operator`` are MindSpore's
    reader threads and a reserved argument: accepted, no effect.

    Args:
        file_name: a record file (all shards of its data set are read) or a list of files.
        num_consumer: MindSpore's reader threads (1-..., unused).
        columns: the fields to read (default: all).

    Raises:
        TypeError: ``columns`` is given and not a list.
    """

    def __init__(self, file_name: str | Sequence[str], num_consumer: int = 4,
                 columns: list[str] | None = None, operator: Any = None) -> None:  # fmt: skip
        from .dataset import MindDataset

        if columns and not isinstance(columns, list):
            raise TypeError(f"FileReader: columns must be a list. Received: {columns!r}")
        self._columns = columns or None
        self._data = MindDataset(file_name, columns_list=self._columns, shuffle=False)
        self._bytes = _bytes_fields(file_name)

    def get_next(self) -> Iterator[dict[str, Any]]:
        """The rows, one dict each."""
        for row in self._data.create_dict_iterator(output_numpy=True, num_epochs=1):
            yield {
                name: value.tobytes() if name in self._bytes else _value(value)
                for name, value in row.items()
            }

    def len(self) -> int:
        """The number of rows."""
        return self._data.get_dataset_size()

    def close(self) -> None:
        """Nothing to release (the rows are read lazily by ``get_next``)."""


def _bytes_fields(file_name: str | Sequence[str]) -> set[str]:
    """The names of the ``bytes`` fields, read from the file's schema."""
    from .dataset.sources.record import open_records

    reader = open_records(file_name, None, verify=False)
    return {f.name for f in reader.fields if f.type == "bytes"}


def _value(value: np.ndarray) -> Any:
    return value.item() if value.ndim == 0 else value

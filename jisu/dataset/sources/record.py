"""RecordDataset (alias MindDataset): rows of a jisu record data set or of MindRecord files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine.context import ExecContext
from ..engine.rows import to_array
from ..record.mindrecord import MindRecordReader, is_mindrecord
from ..record.reader import RecordReader, find_manifest
from ..validation import check_int
from .generator import Source
from .options import ReadOptions, Shuffle


def open_records(dataset_files: Any, columns: Sequence[str] | None, verify: bool) -> Any:
    """A reader for a jisu record data set or MindRecord shard(s)."""
    if isinstance(dataset_files, (list, tuple)):
        if not dataset_files:
            raise ValueError("RecordDataset: dataset_files is empty")
        if all(is_mindrecord(os.fspath(p)) for p in dataset_files):
            return MindRecordReader(list(dataset_files), columns)
        if len(dataset_files) == 1:
            dataset_files = dataset_files[0]
        else:
            raise ValueError(
                "RecordDataset: a list of files is for MindRecord shards; name a "
                f"jisu data set by one path. Received: {dataset_files!r}"
            )
    if not isinstance(dataset_files, (str, os.PathLike)):
        raise TypeError(
            f"RecordDataset: dataset_files must be a path or a list of paths. "
            f"Received: {dataset_files!r}"
        )
    path = os.fspath(dataset_files)
    if is_mindrecord(path):
        return MindRecordReader(path, columns)
    manifest = find_manifest(path)
    if manifest is None:
        raise FileNotFoundError(
            f"RecordDataset: no jisu record manifest or MindRecord file at '{path}'"
        )
    return RecordReader(manifest, columns, verify)


class _Padded:
    """The reader's rows followed by ``count`` copies of ``padded_sample``."""

    def __init__(self, reader: Any, sample: tuple, count: int) -> None:
        self.reader, self.sample, self.count = reader, sample, count

    def __len__(self) -> int:
        return len(self.reader) + self.count

    def __getitem__(self, index: int) -> tuple:
        if index >= len(self.reader):
            return self.sample
        return self.reader[index]


class RecordDataset(Source):
    """Rows of a jisu record data set (``FileWriter``) or of MindRecord files.

    Args:
        dataset_files: the data set's name, manifest or one of its shards; or MindRecord
            shard(s) (one file opens all shards named in its header; a list opens those).
        columns_list: columns to read, in order (default: all).
        num_parallel_workers: threads reading rows (default: ``config``'s).
        shuffle: True / ``Shuffle.GLOBAL`` (default), ``Shuffle.FILES``, ``Shuffle.INFILE``
            or False (rows in written order, shard after shard).
        num_shards / shard_id: one of ``num_shards`` equal parts (short parts wrap around).
        sampler, num_samples: as in :class:`GeneratorDataset`.
        padded_sample / num_padded: append ``num_padded`` copies of ``padded_sample`` (a dict
            of every column) so that the rows divide evenly among shards.
        verify: check every shard's CRC-32 against the manifest when opening (jisu format).

    Raises:
        FileNotFoundError: a missing manifest or shard, named, before any row is read.
        MalformedFileError: (a ``ValueError``) a malformed manifest, or a shard that is
            not a plain name beside it, not a regular file, truncated or altered, named,
            before any row is read.
    """

    default_workers = None  # config's default
    serial_reads = False  # reading mapped files is thread-safe
    file_shuffle = True
    builds_indexed_source = True

    def __init__(
        self,
        dataset_files: Any,
        columns_list: Sequence[str] | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        sampler: Any = None,
        num_samples: int | None = None,
        padded_sample: dict | None = None,
        num_padded: int | None = None,
        verify: bool = True,
    ) -> None:
        reader = open_records(dataset_files, columns_list, verify)
        self.reader = reader
        source: Any = reader
        if padded_sample is not None or num_padded:
            if padded_sample is None or not isinstance(padded_sample, dict):
                raise ValueError(
                    "RecordDataset: num_padded needs padded_sample, a dict of "
                    f"every column. Received: padded_sample={padded_sample!r}"
                )
            count = check_int("RecordDataset", "num_padded", num_padded or 0, minimum=0)
            missing = [c for c in reader.columns if c not in padded_sample]
            if missing:
                raise ValueError(f"RecordDataset: padded_sample lacks column(s) {missing}")
            sample = tuple(to_array(padded_sample[c]) for c in reader.columns)
            source = _Padded(reader, sample, count)
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(source, reader.columns, options)

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        reader = self.reader  # Shuffle.FILES / INFILE work on the shards' rows
        files = [reader.shard_indices(s) for s in range(len(reader.shard_rows))]
        return self.order.indices(n, rng, files)

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        return self.source[index]  # the reader returns checked rows of arrays already


MindDataset = RecordDataset

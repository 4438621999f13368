"""``Dataset.bucket_batch_by_length``: batches of rows of similar length, padded (MindSpore's).

Each row's length (the first dimension of its one named column, or what
``element_length_function`` returns for the named columns) picks a bucket:
``[0, b0), [b0, b1), …, [b_last, ∞)`` for ``bucket_boundaries`` ``b0 < b1 < …``. A bucket
that reaches its ``bucket_batch_sizes`` entry becomes a batch at once, padded; at the end of
the epoch the partial buckets follow in bucket order (or are dropped with
``drop_remainder``). Without ``pad_info`` (None or ``{}``) every column is padded to its
longest row with 0 (``""`` in a string column); with it, only the columns it names, as in
``batch``; ``pad_to_bucket_boundary`` pads the None dimensions of their shapes to the bucket's
boundary minus 1 (a None shape still pads to the longest row, as in MindSpore 2.10).

Which rows form a batch depends on every row before them, so the op runs inline, as a stream;
a resumed position replays the epoch up to it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from itertools import islice, pairwise
from typing import Any

import numpy as np

from ..core.node import Dataset
from ..core.operation import op_name
from ..core.validation import check_columns
from ..engine.collate import ZERO, stack_column
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from .batch import _check_pad_info

OP = "bucket_batch_by_length"


def _check_buckets(boundaries: Any, sizes: Any) -> tuple[list[int], list[int]]:
    if not isinstance(boundaries, (list, tuple)) or not boundaries:
        raise ValueError(f"{OP}: bucket_boundaries must be a non-empty list of ints")
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in boundaries):
        raise TypeError(f"{OP}: bucket_boundaries must hold ints. Received: {boundaries!r}")
    if any(b <= 0 for b in boundaries):
        raise ValueError(
            f"{OP}: bucket_boundaries must only contain positive numbers. Received: "
            f"{list(boundaries)}"
        )
    if any(b >= c for b, c in pairwise(boundaries)):
        raise ValueError(
            f"{OP}: bucket_boundaries must be strictly increasing. Received: {list(boundaries)}"
        )
    if not isinstance(sizes, (list, tuple)) or len(sizes) != len(boundaries) + 1:
        raise ValueError(
            f"{OP}: bucket_batch_sizes must hold one element more than bucket_boundaries "
            f"({len(boundaries) + 1}). Received: bucket_batch_sizes={sizes!r}"
        )
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
        raise ValueError(
            f"{OP}: bucket_batch_sizes must hold positive ints. Received: {list(sizes)}"
        )
    return list(boundaries), list(sizes)


class BucketBatchByLengthDataset(Dataset):
    """See :meth:`Dataset.bucket_batch_by_length` and the module docstring."""

    op_name = OP

    def __init__(
        self,
        child: Dataset,
        column_names: str | Sequence[str],
        bucket_boundaries: Sequence[int],
        bucket_batch_sizes: Sequence[int],
        element_length_function: Callable | None = None,
        pad_info: dict | None = None,
        pad_to_bucket_boundary: bool = False,
        drop_remainder: bool = False,
    ) -> None:
        super().__init__([child])
        names = check_columns(OP, "column_names", column_names, child._columns)
        if not names:
            raise ValueError(f"{OP}: column_names must name at least one column")
        if element_length_function is None and len(names) != 1:
            raise ValueError(
                f"{OP}: without element_length_function, column_names must name exactly one "
                f"column (its first dimension is the length). Received: {names}"
            )
        if element_length_function is not None and not callable(element_length_function):
            raise TypeError(f"{OP}: element_length_function must be callable")
        self.boundaries, self.batch_sizes = _check_buckets(bucket_boundaries, bucket_batch_sizes)
        for flag, value in [
            ("pad_to_bucket_boundary", pad_to_bucket_boundary),
            ("drop_remainder", drop_remainder),
        ]:
            if not isinstance(value, bool):
                raise TypeError(f"{OP}: {flag} must be a bool. Received: {value!r}")
        self._columns = child._columns
        self._length_idx = [child._columns.index(c) for c in names]
        self.length_fn = element_length_function
        # None or {}: every column padded to its longest row with 0 ('' for strings), as in
        # MindSpore; a dict that names columns pads those only
        self.pad_info = _check_pad_info(pad_info, self._columns) or None
        self.pad_to_bucket_boundary = pad_to_bucket_boundary
        self.drop_remainder = drop_remainder

    def _row_count(self) -> int | None:
        return None  # known only by running the epoch

    def _length(self, row: tuple, index: int, epoch: int) -> int:
        if self.length_fn is None:
            value = row[self._length_idx[0]]
            return int(value.shape[0]) if value.ndim else 1
        try:
            length = self.length_fn(*(row[j] for j in self._length_idx))
        except Exception as exc:
            raise_in_context(
                exc,
                f"{OP}: element_length_function {op_name(self.length_fn)} failed at row "
                f"{index} of epoch {epoch}",
            )
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
            raise ValueError(
                f"{OP}: element_length_function {op_name(self.length_fn)} returned "
                f"{length!r} at row {index} of epoch {epoch}; it must return an int >= 0"
            )
        return int(length)

    def _batch(self, rows: list[tuple], bucket: int) -> tuple:
        columns = []
        for k, name in enumerate(self._columns):
            values = [np.asarray(row[k]) for row in rows]
            pad = (None, ZERO) if self.pad_info is None else self.pad_info.get(name)
            shape = None if pad is None else pad[0]
            # only the None dimensions of a shape go to the boundary: a None shape pads to
            # the longest row, with or without pad_to_bucket_boundary (MindSpore 2.10)
            if self.pad_to_bucket_boundary and shape is not None and None in shape:
                if bucket == len(self.boundaries):
                    raise ValueError(
                        f"{OP}: pad_to_bucket_boundary: a row of length >= "
                        f"{self.boundaries[-1]} falls in the last bucket, which has no "
                        "boundary to pad to"
                    )
                boundary = self.boundaries[bucket] - 1
                pad = ([boundary if s is None else s for s in shape], pad[1])
            columns.append(stack_column(values, name, pad, OP))
        return tuple(columns)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        buckets: list[list[tuple]] = [[] for _ in self.batch_sizes]

        def batches() -> Iterator[tuple]:
            for index, row in enumerate(self.children[0]._stream(ctx, epoch, 0)):
                bucket = bisect.bisect_right(self.boundaries, self._length(row, index, epoch))
                buckets[bucket].append(row)
                if len(buckets[bucket]) == self.batch_sizes[bucket]:
                    yield self._batch(buckets[bucket], bucket)
                    buckets[bucket] = []
            if not self.drop_remainder:
                for bucket, rows in enumerate(buckets):
                    if rows:
                        yield self._batch(rows, bucket)

        yield from islice(batches(), start, None)  # a stream restores its position by replaying

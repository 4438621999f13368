"""``concat`` / ``+``: the rows of several datasets one after another."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from itertools import accumulate, islice
from typing import Any

import numpy as np

from ..core.access import RandomAccess, is_random_access
from ..core.error_types import PipelineTypeError, PipelineValueError
from ..core.node import Dataset
from ..core.rng import epoch_rng
from ..engine.context import ExecContext
from .index_map import join_parts, stream_row_count
from .zip import _check_datasets


def _type_name(dtype: np.dtype) -> str:
    """A column's type as concat compares it (strings of any length are one type)."""
    return {"U": "string", "S": "bytes", "O": "object"}.get(dtype.kind, str(dtype))


def _check_types(seen: dict, k: int, values: Any, batched: int, columns: tuple) -> None:
    """The first row (or gathered rows) of input ``k`` must have the dtypes and ranks of the
    inputs seen before it (MindSpore's check: an error naming the column and both types)."""
    if k in seen:
        return
    sig = tuple((_type_name(v.dtype), v.ndim - batched) for v in values)
    for j, other in list(seen.items()):
        for name, (t, r), (t0, r0) in zip(columns, sig, other):
            if t != t0:
                raise PipelineTypeError(
                    f"concat: column '{name}' is {t0} in datasets[{j}] but {t} in "
                    f"datasets[{k}]; concatenated datasets need the same column types (cast "
                    "one with map(TypeCast(...)))"
                )
            if r != r0:
                raise PipelineValueError(
                    f"concat: column '{name}' has rank {r0} in datasets[{j}] but {r} in "
                    f"datasets[{k}]; concatenated datasets need the same column ranks"
                )
        break
    seen[k] = sig


class _ConcatKernels(RandomAccess):
    """Random access: row ``i`` is found in the input whose rows span it."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        if self._sampler is not None:
            index = int(self._positions(ctx, epoch)[index])
        offsets = self._offsets()
        k = bisect.bisect_right(offsets, index) - 1
        row = self.children[k]._fetch(ctx, epoch, index - offsets[k])
        _check_types(self._seen_types(ctx), k, row, 0, self._columns)
        return row

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        if self._sampler is not None:
            indices = self._positions(ctx, epoch)[indices]
        offsets = np.asarray(self._offsets())
        owner = np.searchsorted(offsets, indices, side="right") - 1
        if np.any(np.diff(owner) < 0):
            return None  # rows of several inputs interleaved: gather row by row instead
        seen = self._seen_types(ctx)

        def parts():
            for k in np.unique(owner):
                part = self.children[k]._fetch_columns(ctx, epoch, indices[owner == k] - offsets[k])
                if part is not None:
                    _check_types(seen, int(k), part, 1, self._columns)
                yield part

        return join_parts(parts())

    def _seen_types(self, ctx: ExecContext) -> dict:
        return ctx.cached((ctx.node_id(self), "concat types"), dict)

    def _positions(self, ctx: ExecContext, epoch: int) -> np.ndarray:
        """Positions in the joined rows that the sampler set by ``use_sampler`` reads."""
        key = ctx.node_id(self)
        total = sum(self._counts())
        return ctx.cached(
            (key, "order", epoch),
            lambda: self._sampler_positions(total, epoch_rng(ctx.seed, epoch, key)),
        )


class ConcatDataset(Dataset):
    """All rows of the first dataset, then of the second, ...; all with the same columns."""

    op_name = "concat"
    random_access_kernels = _ConcatKernels

    _sampler: Any = None  # set by use_sampler

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        datasets = _check_datasets("concat", datasets)
        super().__init__(datasets)
        for k, d in enumerate(datasets[1:], 1):
            if d._columns != datasets[0]._columns:  # MindSpore: a RuntimeError when it runs
                raise PipelineValueError(
                    f"concat: datasets[{k}] has columns {list(d._columns)} but datasets[0] "
                    f"has {list(datasets[0]._columns)}; use rename/project to align them"
                )
        self._columns = datasets[0]._columns
        self._settle_kind(all(is_random_access(d) for d in datasets))

    def _counts(self) -> list[int] | None:
        counts = [d._row_count() for d in self.children]
        return None if any(c is None for c in counts) else counts

    def _row_count(self) -> int | None:
        counts = self._counts()
        if counts is None:
            return None
        if self._sampler is None:
            return sum(counts)
        return self._sampler_count(sum(counts))

    # ----------------------------------------------------------------- use_sampler
    def use_sampler(self, sampler: Any) -> None:
        """Read the joined rows through ``sampler`` (MindSpore's ``ConcatDataset.use_sampler``):
        a ``DistributedSampler(num_shards, shard_id, shuffle=False)`` deals them round-robin
        (joined row ``i`` to shard ``i % num_shards``, nothing wraps), the way a
        :class:`PaddedDataset` pads a data set to divide evenly; a ``RandomSampler()`` reads
        them in a new random order each epoch. The inputs' sources are then read in order,
        unshuffled and unsharded (their own sampling is replaced, as in MindSpore)."""
        from ..sources.generator import Source
        from ..sources.options import EpochOrder
        from ..sources.samplers import DistributedSampler, RandomSampler

        if isinstance(sampler, RandomSampler):
            if sampler.replacement or sampler.num_samples is not None:
                raise ValueError(
                    "concat.use_sampler: a RandomSampler needs replacement=False and no num_samples"
                )
            if not is_random_access(self):
                raise ValueError(
                    "concat.use_sampler: a RandomSampler needs random-access inputs; this "
                    "concat has an iterable input"
                )
        elif isinstance(sampler, DistributedSampler):
            if sampler.shuffle:
                raise ValueError("concat.use_sampler: the DistributedSampler needs shuffle=False")
            if sampler.num_samples is not None:
                raise ValueError(
                    "concat.use_sampler: the DistributedSampler's num_samples is not supported"
                )
        else:
            raise TypeError(
                "concat.use_sampler: sampler must be a DistributedSampler or a RandomSampler. "
                f"Received: {sampler!r}"
            )
        sources = []
        stack = list(self.children)
        visited: list[Dataset] = [self]
        while stack:
            node = stack.pop()
            visited.append(node)
            if node.rows_per_item != 1:
                raise TypeError(
                    f"concat.use_sampler: the inputs must not be batched; found {node.op_name}"
                )
            if isinstance(node, Source):
                if node.order.num_samples is not None:
                    raise ValueError(
                        f"concat.use_sampler: {node.op_name} has num_samples set; that is not "
                        "supported with use_sampler"
                    )
                sources.append(node)
            stack.extend(node.children)
        for source in sources:
            source.order = EpochOrder()
        self._sampler = sampler
        # a size counted by running the pipeline (iterable inputs) is the old sampler's
        for node in visited:
            node._size_cache = None

    def _sampler_positions(self, total: int, rng: np.random.Generator) -> np.ndarray:
        sampler = self._sampler
        if hasattr(sampler, "num_shards"):
            return np.arange(sampler.shard_id, total, sampler.num_shards, dtype=np.int64)
        return rng.permutation(total)

    def _sampler_count(self, total: int) -> int:
        sampler = self._sampler
        if hasattr(sampler, "num_shards"):
            return len(range(sampler.shard_id, total, sampler.num_shards))
        return total

    def _offsets(self) -> list[int]:
        return [0, *accumulate(self._counts())]

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        if self._sampler is not None:  # round-robin (a RandomSampler needs random access)
            step, first = self._sampler.num_shards, self._sampler.shard_id
            dealt = (row for i, row in enumerate(self._chain(ctx, epoch)) if i % step == first)
            yield from islice(dealt, start, None)
            return
        counts = [stream_row_count(d) for d in self.children]
        if None in counts:  # row ``start`` cannot be placed without running: replay
            yield from islice(self._chain(ctx, epoch), start, None)
            return
        seen: dict = {}
        for k, (child, n) in enumerate(zip(self.children, counts)):
            if start >= n:
                start -= n
                continue
            for row in child._stream(ctx, epoch, start):
                _check_types(seen, k, row, 0, self._columns)
                yield row
            start = 0

    def _chain(self, ctx: ExecContext, epoch: int) -> Iterator[tuple]:
        seen: dict = {}
        for k, child in enumerate(self.children):
            for row in child._stream(ctx, epoch, 0):
                _check_types(seen, k, row, 0, self._columns)
                yield row

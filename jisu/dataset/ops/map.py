"""``Dataset.map``: apply ops to columns of every row."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import config
from ..core.access import RandomAccess, is_random_access
from ..core.error_types import ArgumentError, PipelineValueError
from ..core.node import Dataset
from ..core.operation import TensorOperation, apply_op, check_inputs, op_name
from ..core.position import position
from ..core.rng import sample_rng
from ..core.rows import as_columns
from ..core.validation import check_columns
from ..device.decode_plan import DevicePlan
from ..engine.collate import Deferred
from ..engine.context import ExecContext
from ..engine.errors import raise_in_context
from ..engine.plan import MAP, stream_map_chain


def _identity(x: Any) -> Any:
    return x


def column_layout(
    columns: Sequence[str], inputs: Sequence[str], outputs: Sequence[str]
) -> tuple[tuple[str, ...], list[tuple[bool, int]]]:
    """Output column names of a map/per_batch_map, and where each output value comes from.

    As many outputs as inputs: outputs replace the inputs in place. Otherwise the outputs come
    first, then the columns that were not inputs, in order (MindSpore's rule).

    Returns:
        ``(names, sources)`` where ``sources[k]`` is ``(True, j)`` for the op's j-th result or
        ``(False, j)`` for the input row's j-th column.
    """
    if len(outputs) == len(inputs):
        names = list(columns)
        sources = [(False, j) for j in range(len(columns))]
        for k, name in enumerate(inputs):
            j = columns.index(name)
            names[j] = outputs[k]
            sources[j] = (True, k)
    else:
        rest = [j for j, c in enumerate(columns) if c not in inputs]
        names = list(outputs) + [columns[j] for j in rest]
        sources = [(True, k) for k in range(len(outputs))] + [(False, j) for j in rest]
    return tuple(names), sources


def check_unique(op: str, names: Sequence[str]) -> None:
    duplicates = sorted({n for n in names if list(names).count(n) > 1})
    if duplicates:  # MindSpore: a RuntimeError when the pipeline runs
        raise PipelineValueError(
            f"{op}: the output would have duplicate column names {duplicates}; "
            f"choose other output_columns. Resulting columns: {list(names)}"
        )


def encoded_bytes_hint(op: Any, args: tuple) -> str:
    """A hint for an image op given encoded image bytes (a 1-D uint8 column: the images were
    never decoded), the most common first mistake with image folders and records."""
    if not isinstance(op, TensorOperation) or type(op).__name__ == "Decode":
        return ""
    if not any(isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype == np.uint8 for a in args):
        return ""
    return (
        " (its input is a 1-D uint8 array: the column still holds encoded image bytes; put "
        "vision.Decode() first in the operations)"
    )


class _MapKernels(RandomAccess):
    """Random access: the ops applied to the child's row at the same index."""

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        child = self.children[0]
        weight = ctx.op_times.weight(index) if ctx.op_times is not None else 0
        if isinstance(child, MapDataset):  # a map below names and times its own child's read
            return self.apply_row(ctx, epoch, index, child._fetch(ctx, epoch, index), False, weight)
        position().at(child, epoch, index)  # reading
        if not weight:
            return self.apply_row(ctx, epoch, index, child._fetch(ctx, epoch, index), False, weight)
        begin = time.perf_counter()
        row = child._fetch(ctx, epoch, index)
        ctx.op_times.add(child, "read", time.perf_counter() - begin, weight)
        return self.apply_row(ctx, epoch, index, row, False, weight)


class MapDataset(Dataset):
    """Rows with ``operations`` applied to ``input_columns``; see :meth:`Dataset.map`."""

    op_name = "map"
    random_access_kernels = _MapKernels
    has_workers = True
    stream_stage = MAP

    @classmethod
    def _random_access(cls, child: Dataset, *args: Any, **kwargs: Any) -> bool:
        return is_random_access(child) and config.get_error_samples_mode() != "skip"

    def __init__(
        self,
        child: Dataset,
        operations: Callable | Sequence[Callable],
        input_columns: str | Sequence[str] | None,
        output_columns: str | Sequence[str] | None,
        num_parallel_workers: int | None,
        python_multiprocessing: bool = False,
        offload: bool = False,
    ) -> None:
        super().__init__([child], num_parallel_workers)
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops:
            raise ValueError("map: operations must not be empty. Received: operations=[]")
        for k, op in enumerate(ops):
            if isinstance(op, type):  # MindSpore 2.10: a ValueError (parentheses missing)
                raise ValueError(
                    f"map: operation {k} is a class, not an op; call it to make one "
                    f"(missing parentheses?). Received: operations[{k}]={op!r}"
                )
            if not callable(op):  # a ValueError in MindSpore 2.10: both here
                raise ArgumentError(
                    f"map: operation {k} is not callable; pass jisu ops or functions. "
                    f"Received: operations[{k}]={op!r}"
                )
        self.offloaded: list = []
        if not offload and config.get_auto_offload():  # offload the tail when there is one
            from ..device.offload import split_offload

            offload = bool(split_offload(ops)[1])
        on_device = [op for op in ops if getattr(op, "device_target", "CPU") == "GPU"]
        if on_device and not offload:
            raise ValueError(
                f"map: {op_name(on_device[0])} is set to device('GPU'), which takes "
                "offload=True: the pipeline then ships its bytes and the offload module "
                "(dataset.offload_module(), applied by Model.train) decodes on the device"
            )
        if offload:
            from ..device.offload import split_offload  # imports vision (OpenCV): when asked

            ops, self.offloaded = split_offload(ops)
            if not self.offloaded:
                raise ValueError(
                    f"map: offload=True but the operations end with {op_name(ops[-1])}, which "
                    "does not run on the device; offloadable: Rescale, Normalize, HWC2CHW, "
                    "TypeCast"
                )
            if not ops:
                ops = [_identity]
        self.operations = ops
        # what runs: consecutive Rescale/Normalize fused into one pass, Decode and a crop op
        # into one region decode, with op positions; a map of no image op imports no OpenCV
        self._steps = list(enumerate(ops))
        if any(type(op).__module__.startswith("jisu.dataset.vision.") for op in ops):
            from ..vision.pixel import fuse_affine
            from ..vision.region_decode import fuse_decode_crop

            self._steps = fuse_decode_crop(fuse_affine(ops))
        self.input_columns = check_columns(
            "map", "input_columns", input_columns, child._columns
        ) or [child._columns[0]]
        self.output_columns = check_columns("map", "output_columns", output_columns) or list(
            self.input_columns
        )
        self._columns, self._sources = column_layout(
            child._columns, self.input_columns, self.output_columns
        )
        check_unique("map", self._columns)
        self._in_idx = [child._columns.index(c) for c in self.input_columns]
        if isinstance(ops[0], TensorOperation):  # (the later ops get what the first returns)
            check_inputs(ops[0], len(self.input_columns), "map: ")
        # in "skip" mode a failing sample vanishes, so rows can no longer be found by index
        self.skip_errors = config.get_error_samples_mode() == "skip"
        self._settle_kind(is_random_access(child) and not self.skip_errors)
        self._tail = self._elementwise_tail()
        if not isinstance(python_multiprocessing, (bool, np.bool_)):
            raise TypeError(
                "map: python_multiprocessing must be a bool. "
                f"Received: python_multiprocessing={python_multiprocessing!r}"
            )
        self.python_multiprocessing = bool(python_multiprocessing)
        self._workers()  # validates num_parallel_workers when the pipeline is built

    def functions(self) -> tuple[Any, ...]:
        return tuple(self.operations)

    def _row_count(self) -> int | None:
        return self.children[0]._row_count()

    def _elementwise_tail(self) -> int | None:
        """Index of a final elementwise op followed only by view ops, for a 1-to-1 map."""
        if len(self.input_columns) != 1 or len(self.output_columns) != 1:
            return None
        for k in range(len(self._steps) - 1, -1, -1):
            op = self._steps[k][1]
            if getattr(op, "elementwise", False) and not getattr(op, "randomized", False):
                return k
            if not getattr(op, "view_op", False):
                return None
        return None

    def can_defer(self) -> bool:
        """Whether :meth:`apply_row` can leave the last elementwise op to the batch assembly."""
        return self._tail is not None

    # ----------------------------------------------------------------- per-row work
    def apply_row(
        self,
        ctx: ExecContext,
        epoch: int,
        index: int,
        row: tuple,
        defer: bool = False,
        weight: int | None = None,
    ) -> tuple | None:
        """Apply the ops to one row (``index``: its position in this map's input).

        Returns None for a sample dropped in "skip" error mode.

        With ``defer`` (only inside a batch, when :meth:`can_defer`), the final elementwise op
        is not run: the output is a :class:`Deferred` that the batch assembly writes straight
        into the batch array. The view ops after it are applied first (they commute with it).

        When the plan limits this map below its stage's width (an explicit
        ``num_parallel_workers``), at most that many calls run at once.

        With the profiler on, the ops' times are recorded with ``weight`` (how many calls this
        one stands for; 0: not timed), which a batch decides once for all its rows; by default
        from the row's index (:meth:`OpTimes.weight`).
        """
        if weight is None:
            weight = ctx.op_times.weight(index) if ctx.op_times is not None else 0
        slot = ctx.slots.get(id(self))
        if slot is None:
            return self._apply_row(ctx, epoch, index, row, defer, weight)
        if weight:
            begin = time.perf_counter()
            slot.acquire()
            ctx.op_times.add(self, "wait", time.perf_counter() - begin, weight)
        else:
            slot.acquire()
        try:
            return self._apply_row(ctx, epoch, index, row, defer, weight)
        finally:
            slot.release()

    def _apply_row(
        self, ctx: ExecContext, epoch: int, index: int, row: tuple, defer: bool, weight: int
    ) -> tuple | None:
        args: Any = tuple(row[j] for j in self._in_idx)
        key = ctx.node_id(self) << 8
        tail = self._tail if defer else None
        timer = ctx.op_times if weight else None
        here = position().at(self, epoch, index)
        for step, (k, op) in enumerate(self._steps):
            if step == tail:
                continue
            here.op = op
            try:
                begin = time.perf_counter() if timer is not None else 0.0
                if isinstance(op, DevicePlan):  # draws for the ops it stands for, from k on
                    rng_at = lambda j, k=k: sample_rng(ctx.seed, epoch, index, key + k + j)  # noqa: E731
                    args = (op.plan(args[0], rng_at, index, epoch),)
                else:
                    result = apply_op(
                        op, args, lambda k=k: sample_rng(ctx.seed, epoch, index, key + k)
                    )
                    if result is None or (
                        isinstance(result, tuple) and any(r is None for r in result)
                    ):  # MindSpore 2.10: a RuntimeError
                        raise TypeError(
                            f"{op_name(op)} returned None; an operation returns a value (or a "
                            "tuple of values) for each output column"
                        )
                    args = as_columns(result)
                if timer is not None:
                    timer.add(self, step, time.perf_counter() - begin, weight)
            except Exception as exc:
                where = (
                    f"map: operation {op_name(op)} (#{k} of {len(self.operations)}) failed "
                    f"on input column(s) {self.input_columns} at sample {index} of epoch "
                    f"{epoch}{encoded_bytes_hint(op, args)}"
                )
                if self.skip_errors:
                    ctx.note_skip(f"{where}: {type(exc).__name__}: {exc}", epoch, self)
                    return None
                raise_in_context(exc, where)
        if tail is not None:
            perm = tuple(range(args[0].ndim))
            for _, op in self._steps[tail + 1 :]:  # the view ops, already applied to args
                perm = tuple(perm[a] for a in op.axes(len(perm)))
            args = (Deferred(args[0], self._steps[tail][1], perm),)
        if len(args) != len(self.output_columns):
            raise PipelineValueError(
                f"map: the last operation ({op_name(self.operations[-1])}) returned "
                f"{len(args)} column(s) but output_columns names {len(self.output_columns)}: "
                f"{self.output_columns} (at sample {index} of epoch {epoch}). "
                "Set output_columns to match what the operations return."
            )
        return tuple(args[j] if new else row[j] for new, j in self._sources)

    def map_rows(self, ctx: ExecContext, epoch: int, chunk: list[tuple[int, tuple]]) -> list:
        """Task of a stream map stage: the fused maps down to the stream, on ``(index, row)``s."""
        chain = stream_map_chain(self)[0]
        out = []
        for index, row in chunk:
            for node in chain:
                row = node.apply_row(ctx, epoch, index, row)
                if row is None:  # skipped: a failing sample in "skip" mode
                    break
            else:
                out.append(row)
        return out

"""MindSpore's array primitives (``mindspore.ops.operations.array_ops``) on torch.

The primitives without constructor arguments (``Reshape``, ``Fill``, ``GatherNd``, ``Unique``,
...) are made from the table of :mod:`._array_tables`; those with arguments (``Squeeze(axis)``,
``TopK(sorted)``, ``StridedSlice(masks)``, ...) are classes here. Index outputs are int32 and
tuple outputs are tuples, as in MindSpore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..function import array_func as af
from ..primitive import Primitive
from ._array_tables import ARRAY, make_classes

_TABLE_CLASSES = make_classes()
for _cls in _TABLE_CLASSES.values():
    _cls.__module__ = __name__  # MindSpore's path; instances pickle by it
globals().update(_TABLE_CLASSES)


def _check(op: str, name: str, value: Any, kind: type | tuple[type, ...]) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        what = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TypeError(f"{op}: {name} must be a {what}. Received: {name}={value!r}")


class Squeeze(Primitive):
    """MindSpore's ``Squeeze(axis=())``: ``x`` without its size-1 axes (all, or ``axis``)."""

    def __init__(self, axis: int | Sequence[int] = ()) -> None:
        _check("Squeeze", "axis", axis, (int, tuple, list))
        self.axis = axis

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return af.squeeze(x, self.axis)


class Concat(Primitive):
    """MindSpore's ``Concat(axis=0)``: a tuple of tensors joined along ``axis``."""

    def __init__(self, axis: int = 0) -> None:
        _check("Concat", "axis", axis, int)
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return af.concat(tensors, self.axis)


class Stack(Primitive):
    """MindSpore's ``Stack(axis=0)`` (``Pack`` before 1.x): a tuple of tensors stacked along a
    new ``axis``."""

    def __init__(self, axis: int = 0) -> None:
        _check(type(self).__name__, "axis", axis, int)
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return af.stack(tensors, self.axis)


class Pack(Stack):
    """MindSpore's ``Pack(axis=0)``: ``Stack``'s old name."""


class Unstack(Primitive):
    """MindSpore's ``Unstack(axis=0, num=None)`` (``Unpack``): the tuple of slices of ``x``
    along ``axis``."""

    def __init__(self, axis: int = 0, num: int | None = None) -> None:
        _check(type(self).__name__, "axis", axis, int)
        self.axis, self.num = axis, num

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return af.unstack(x, self.axis)


class Unpack(Unstack):
    """MindSpore's ``Unpack(axis=0)``: ``Unstack``'s old name."""


class Split(Primitive):
    """MindSpore's ``Split(axis=0, output_num=1)``: ``x`` cut into ``output_num`` equal parts
    along ``axis``, as a tuple."""

    def __init__(self, axis: int = 0, output_num: int = 1) -> None:
        _check("Split", "axis", axis, int)
        _check("Split", "output_num", output_num, int)
        if output_num < 1:
            raise ValueError(f"Split: output_num must be positive. Received: {output_num}")
        self.axis, self.output_num = axis, output_num

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return af.split(x, axis=self.axis, output_num=self.output_num)


class BroadcastTo(Primitive):
    """MindSpore's ``BroadcastTo(shape)``: ``x`` broadcast to ``shape`` (-1 keeps an axis)."""

    def __init__(self, shape: Sequence[int]) -> None:
        _check("BroadcastTo", "shape", shape, (tuple, list))
        self.shape = tuple(shape)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return af.broadcast_to(x, self.shape)


class TopK(Primitive):
    """MindSpore's ``TopK(sorted=True)``: ``(values, indices)`` of the ``k`` largest entries
    along the last axis, largest first; int32 indices."""

    def __init__(self, sorted: bool = True) -> None:
        _check("TopK", "sorted", sorted, bool)
        self.sorted = sorted

    def __call__(self, input_x: torch.Tensor, k: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return af.top_k(input_x, k, self.sorted)


class Sort(Primitive):
    """MindSpore's ``Sort(axis=-1, descending=False)``: ``(values, indices)`` sorted along
    ``axis`` (stable); int32 indices."""

    def __init__(self, axis: int = -1, descending: bool = False) -> None:
        _check("Sort", "axis", axis, int)
        _check("Sort", "descending", descending, bool)
        self.axis, self.descending = axis, descending

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return af.sort(x, self.axis, self.descending)


class StridedSlice(Primitive):
    """MindSpore's ``StridedSlice(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
    shrink_axis_mask=0)``: ``x[begin:end:strides]`` per axis, the masks' bit ``i`` ignoring
    ``begin[i]`` or ``end[i]``, making entry ``i`` an ellipsis, a new axis, or an index that
    drops its axis."""

    def __init__(
        self,
        begin_mask: int = 0,
        end_mask: int = 0,
        ellipsis_mask: int = 0,
        new_axis_mask: int = 0,
        shrink_axis_mask: int = 0,
    ) -> None:
        masks = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
                 "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}  # fmt: skip
        for name, value in masks.items():
            _check("StridedSlice", name, value, int)
            if value < 0:
                raise ValueError(f"StridedSlice: {name} must be >= 0. Received: {name}={value}")
        if ellipsis_mask & (ellipsis_mask - 1):
            raise ValueError("StridedSlice: only one bit of ellipsis_mask may be set")
        self.__dict__.update(masks)

    def __call__(self, x: torch.Tensor, begin: Any, end: Any, strides: Any) -> torch.Tensor:
        return af.strided_slice(
            x, begin, end, strides, self.begin_mask, self.end_mask, self.ellipsis_mask,
            self.new_axis_mask, self.shrink_axis_mask,
        )  # fmt: skip


class ReverseV2(Primitive):
    """MindSpore's ``ReverseV2(axis)``: ``x`` reversed along the axes in ``axis``."""

    def __init__(self, axis: Sequence[int]) -> None:
        _check("ReverseV2", "axis", axis, (tuple, list))
        self.axis = tuple(axis)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(x, self.axis)


class ReverseSequence(Primitive):
    """MindSpore's ``ReverseSequence(seq_dim, batch_dim=0)``: for each batch entry ``b``, the
    first ``seq_lengths[b]`` elements along ``seq_dim`` reversed; the rest kept."""

    def __init__(self, seq_dim: int, batch_dim: int = 0) -> None:
        _check("ReverseSequence", "seq_dim", seq_dim, int)
        _check("ReverseSequence", "batch_dim", batch_dim, int)
        self.seq_dim, self.batch_dim = seq_dim, batch_dim

    def __call__(self, x: torch.Tensor, seq_lengths: torch.Tensor) -> torch.Tensor:
        seq, batch = self.seq_dim % x.dim(), self.batch_dim % x.dim()
        steps = torch.arange(x.shape[seq], device=x.device)
        lengths = seq_lengths.to(device=x.device, dtype=torch.long)
        index = torch.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)
        view = [1] * x.dim()  # index is (batch, seq): place it on those axes, broadcast the rest
        view[batch], view[seq] = x.shape[batch], x.shape[seq]
        index = index if batch < seq else index.T
        return torch.gather(x, seq, index.reshape(view).expand(x.shape))


class Meshgrid(Primitive):
    """MindSpore's ``Meshgrid(indexing="xy")``: coordinate grids from a tuple of 1-D
    tensors."""

    def __init__(self, indexing: str = "xy") -> None:
        if indexing not in ("xy", "ij"):
            raise ValueError(
                f"Meshgrid: indexing must be 'xy' or 'ij'. Received: indexing={indexing!r}"
            )
        self.indexing = indexing

    def __call__(self, inputs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return torch.meshgrid(*inputs, indexing=self.indexing)


class Range(Primitive):
    """MindSpore's ``Range(maxlen=1000000)``: ``start, start + delta, ...`` below ``limit``,
    in the dtype of ``start``."""

    def __init__(self, maxlen: int = 1000000) -> None:
        _check("Range", "maxlen", maxlen, int)
        self.maxlen = maxlen

    def __call__(self, start: Any, limit: Any, delta: Any) -> torch.Tensor:
        return af.range(start, limit, delta)


class _SpaceDepth(Primitive):
    def __init__(self, block_size: int) -> None:
        _check(type(self).__name__, "block_size", block_size, int)
        if block_size < 2:
            raise ValueError(
                f"{type(self).__name__}: block_size must be >= 2. Received: {block_size}"
            )
        self.block_size = block_size


class DepthToSpace(_SpaceDepth):
    """MindSpore's ``DepthToSpace(block_size)``: NCHW channels moved into ``block_size`` x
    ``block_size`` blocks of space (channel ``(i * bs + j) * C + c`` -> ``c`` at offset
    ``(i, j)``)."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        bs = self.block_size
        x = x.reshape(n, bs, bs, c // (bs * bs), h, w).permute(0, 3, 4, 1, 5, 2)
        return x.reshape(n, c // (bs * bs), h * bs, w * bs)


class SpaceToDepth(_SpaceDepth):
    """MindSpore's ``SpaceToDepth(block_size)``: NCHW ``block_size`` x ``block_size`` blocks
    of space moved into channels (the inverse of ``DepthToSpace``)."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        bs = self.block_size
        x = x.reshape(n, c, h // bs, bs, w // bs, bs).permute(0, 3, 5, 1, 2, 4)
        return x.reshape(n, c * bs * bs, h // bs, w // bs)


class _Triangle(Primitive):
    def __init__(self, diagonal: int = 0) -> None:
        _check(type(self).__name__, "diagonal", diagonal, int)
        self.diagonal = diagonal


class Tril(_Triangle):
    """MindSpore's ``Tril(diagonal=0)``: the lower triangle of the last two axes."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tril(x, self.diagonal)


class Triu(_Triangle):
    """MindSpore's ``Triu(diagonal=0)``: the upper triangle of the last two axes."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.triu(x, self.diagonal)


def _write(target: torch.Tensor, write: Any) -> torch.Tensor:
    """Run the in-place ``write`` on ``target`` (a Parameter in MindSpore code); a leaf that
    requires grad is written outside autograd, as MindSpore's Parameter update is."""
    if target.is_leaf and target.requires_grad:
        with torch.no_grad():
            write(target)
    else:
        write(target)
    return target


class _ScatterRef(Primitive):
    def __init__(self, use_locking: bool = True) -> None:
        _check(type(self).__name__, "use_locking", use_locking, bool)
        self.use_locking = use_locking


class ScatterNdUpdate(_ScatterRef):
    """MindSpore's ``ScatterNdUpdate(use_locking=True)``: ``updates`` written into the
    Parameter ``input_x`` at the index tuples of ``indices``, in place; returns ``input_x``."""

    def __call__(self, input_x: torch.Tensor, indices: torch.Tensor, updates: Any) -> Any:
        idx = tuple(indices.long().movedim(-1, 0))
        return _write(input_x, lambda t: t.index_put_(idx, torch.as_tensor(updates, dtype=t.dtype)))


class ScatterUpdate(_ScatterRef):
    """MindSpore's ``ScatterUpdate(use_locking=True)``: rows ``indices`` of the Parameter
    ``input_x`` set to ``updates``, in place; returns ``input_x``."""

    def __call__(self, input_x: torch.Tensor, indices: torch.Tensor, updates: Any) -> Any:
        idx = indices.long()
        return _write(input_x, lambda t: t.index_put_((idx,), updates.to(t.dtype)))


class ScatterAdd(_ScatterRef):
    """MindSpore's ``ScatterAdd(use_locking=False)``: ``updates`` added into rows ``indices``
    of the Parameter ``input_x`` (repeated rows add up), in place; returns ``input_x``."""

    def __init__(self, use_locking: bool = False) -> None:
        super().__init__(use_locking)

    def __call__(self, input_x: torch.Tensor, indices: torch.Tensor, updates: Any) -> Any:
        idx = indices.long()
        return _write(input_x, lambda t: t.index_put_((idx,), updates.to(t.dtype), accumulate=True))


class IndexAdd(Primitive):
    """MindSpore's ``IndexAdd(axis, use_lock=True, check_index_bound=True)``: ``y`` added into
    the Parameter ``input_x`` at ``indices`` along ``axis`` (repeated indices add up), in
    place; returns ``input_x``."""

    def __init__(self, axis: int, use_lock: bool = True, check_index_bound: bool = True) -> None:
        _check("IndexAdd", "axis", axis, int)
        self.axis, self.use_lock, self.check_index_bound = axis, use_lock, check_index_bound

    def __call__(self, input_x: torch.Tensor, indices: torch.Tensor, y: torch.Tensor) -> Any:
        idx = indices.long()
        return _write(input_x, lambda t: t.index_add_(self.axis, idx, y.to(t.dtype)))


class InplaceAdd(Primitive):
    """MindSpore's ``InplaceAdd(indices)``: ``v`` added to rows ``indices`` of ``x``."""

    def __init__(self, indices: int | Sequence[int]) -> None:
        _check("InplaceAdd", "indices", indices, (int, tuple, list))
        self.indices = (indices,) if isinstance(indices, int) else tuple(indices)

    def __call__(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        idx = torch.tensor(self.indices, device=x.device)
        return x.index_add(0, idx, v.reshape(len(self.indices), *x.shape[1:]).to(x.dtype))


class UnsortedSegmentSum(Primitive):
    """MindSpore's ``UnsortedSegmentSum``: the sums of the slices of ``x`` that share a
    segment id, for ids ``0..num_segments-1`` (zeros for an id with no slice)."""

    def __call__(self, x: torch.Tensor, segment_ids: torch.Tensor, num_segments: Any) -> Any:
        ids = segment_ids.long()
        rest = x.shape[ids.dim() :]
        out = x.new_zeros((int(num_segments), *rest))
        return out.index_add(0, ids.reshape(-1), x.reshape(-1, *rest))


__all__ = sorted(
    [
        *ARRAY,
        "BroadcastTo",
        "Concat",
        "DepthToSpace",
        "IndexAdd",
        "InplaceAdd",
        "Meshgrid",
        "Pack",
        "Range",
        "ReverseSequence",
        "ReverseV2",
        "ScatterAdd",
        "ScatterNdUpdate",
        "ScatterUpdate",
        "Sort",
        "SpaceToDepth",
        "Split",
        "Squeeze",
        "Stack",
        "StridedSlice",
        "TopK",
        "Tril",
        "Triu",
        "Unpack",
        "UnsortedSegmentSum",
        "Unstack",
    ]
)

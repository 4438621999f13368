"""Generic ops: Slice, PadEnd, Mask (with :class:`Relational`), Unique, RandomOrder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np

from ..core.error_types import ArgumentError
from ..core.operation import TensorOperation
from ..core.rows import to_numpy_dtype
from .ops import _chain, _check_ops


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class Slice(TensorOperation):
    """Select along the leading axes, one argument per axis (MindSpore's rules).

    Each argument is an int (that index; the axis is kept, with length 1), a list of ints
    (those indices, in order, repeats allowed; lists on several axes select their outer
    product), a ``slice`` (Python's rules, any step), ``True`` or ``None`` (the whole axis),
    or ``...`` (the whole of the axes it stands for, at most once). Axes after the last
    argument are kept whole. Int and list indices may be negative and must lie in
    ``[-n, n)``; ``Slice()`` returns the input.
    """

    def __init__(self, *slices: Any) -> None:
        parts: list[Any] = []
        for k, s in enumerate(slices):
            if s is Ellipsis or s is None or isinstance(s, slice):
                parts.append(s)
            elif isinstance(s, (bool, np.bool_)):
                if not s:
                    raise ValueError(f"Slice: slices[{k}]=False selects nothing; use True or ...")
                parts.append(None)
            elif _is_int(s):
                parts.append(int(s))
            elif isinstance(s, list):
                if not s or not all(_is_int(v) for v in s):
                    raise TypeError(
                        f"Slice: slices[{k}] must be a non-empty list of ints. Received: {s!r}"
                    )
                parts.append([int(v) for v in s])
            else:
                raise TypeError(
                    f"Slice: slices[{k}] must be an int, a list of ints, a slice, True, None or "
                    f"`...`. Received: {s!r} ({type(s).__name__})"
                )
            if isinstance(s, slice) and s.step == 0:
                raise ValueError(f"Slice: slices[{k}] has step 0. Received: {s!r}")
        if sum(p is Ellipsis for p in parts) > 1:
            raise ValueError("Slice: at most one `...` may be given")
        self.slices = tuple(parts)

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        parts = list(self.slices)
        n_axes = sum(p is not Ellipsis for p in parts)
        if n_axes > x.ndim:
            raise ValueError(
                f"Slice: {n_axes} axes indexed, but the input has {x.ndim} (shape {x.shape})"
            )
        if Ellipsis in parts:
            k = parts.index(Ellipsis)
            parts[k : k + 1] = [None] * (x.ndim - n_axes)
        basic: list[Any] = []
        lists: list[tuple[int, np.ndarray]] = []
        for axis, p in enumerate(parts):
            n = x.shape[axis]
            if p is None:
                basic.append(slice(None))
                continue
            if isinstance(p, slice):
                basic.append(p)
                continue
            index = np.asarray(p if isinstance(p, list) else [p], dtype=np.intp)
            bad = (index < -n) | (index >= n)
            if bad.any():
                raise IndexError(
                    f"Slice: index {int(index[bad][0])} is out of bounds for axis {axis} "
                    f"of size {n}"
                )
            index = np.where(index < 0, index + n, index)
            if isinstance(p, int):  # one index keeps its axis (length 1): a view
                basic.append(slice(int(index[0]), int(index[0]) + 1))
            else:
                basic.append(slice(None))
                lists.append((axis, index))
        out = x[tuple(basic)]
        for axis, index in lists:  # one axis at a time: the outer product of the lists
            out = np.take(out, index, axis=axis)
        return out


class PadEnd(TensorOperation):
    """Pad (or cut) each axis at its end to ``pad_shape``, with ``pad_value``.

    ``pad_shape`` has one entry per input axis: a size >= 1, or ``None`` to keep that axis.
    An axis longer than its entry is cut. ``pad_value`` defaults to 0 (``''`` / ``b''`` for
    strings); a float value padding an integer array is truncated (7.6 -> 7), as in
    MindSpore, and a value outside an integer dtype's range is an error (MindSpore wraps it:
    -1 pads uint8 with 255). Strings pad strings, numbers numbers.
    """

    def __init__(self, pad_shape: Sequence[int | None], pad_value: Any = None) -> None:
        if not isinstance(pad_shape, (list, tuple)) or not all(
            d is None or (_is_int(d) and d >= 1) for d in pad_shape
        ):
            # MindSpore: a TypeError for a pad_shape that is no list, a ValueError for its values
            bad = ValueError if isinstance(pad_shape, (list, tuple)) else ArgumentError
            raise bad(
                f"PadEnd: pad_shape must be a list of ints >= 1 (or None to keep an axis). "
                f"Received: pad_shape={pad_shape!r}"
            )
        if pad_value is not None and not isinstance(pad_value, (int, float, str, bytes)):
            raise TypeError(
                f"PadEnd: pad_value must be a number, str or bytes. Received: {pad_value!r}"
            )
        self.pad_shape = [None if d is None else int(d) for d in pad_shape]
        self.pad_value = pad_value

    def _fill(self, x: np.ndarray) -> tuple[Any, np.dtype]:
        value, dtype, stringy = self.pad_value, x.dtype, x.dtype.kind in "SU"
        if value is None:
            value = (b"" if dtype.kind == "S" else "") if stringy else 0
        if stringy != isinstance(value, (str, bytes)):
            raise TypeError(
                f"PadEnd: cannot pad a {dtype} array with {value!r}: strings pad strings, "
                f"numbers numbers"
            )
        if stringy:  # widen the string dtype when the value is longer
            return value, np.result_type(dtype, np.asarray(value).dtype)
        if dtype.kind in "iu" and not isinstance(value, bool):
            info = np.iinfo(dtype)
            if not (np.isfinite(value) and info.min <= int(value) <= info.max):
                raise ValueError(
                    f"PadEnd: pad_value {value!r} does not fit the input's dtype {dtype} "
                    f"(range [{info.min}, {info.max}])"
                )
            value = int(value)
        return value, dtype

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        if len(self.pad_shape) != x.ndim:
            raise ValueError(
                f"PadEnd: pad_shape {self.pad_shape} has {len(self.pad_shape)} axes, the input "
                f"{x.ndim} (shape {x.shape})"
            )
        shape = tuple(n if d is None else d for d, n in zip(self.pad_shape, x.shape))
        value, dtype = self._fill(x)
        out = np.full(shape, value, dtype=dtype)
        keep = tuple(slice(0, min(d, n)) for d, n in zip(shape, x.shape))
        out[keep] = x[keep]
        return out


class Relational(Enum):
    """Comparisons for :class:`Mask`."""

    EQ = "=="
    NE = "!="
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="


_COMPARE = {
    Relational.EQ: np.equal,
    Relational.NE: np.not_equal,
    Relational.GT: np.greater,
    Relational.GE: np.greater_equal,
    Relational.LT: np.less,
    Relational.LE: np.less_equal,
}


class Mask(TensorOperation):
    """``input <operator> constant`` element by element, as ``dtype`` (bool by default; 1/0
    for numeric dtypes).

    Numbers compare with numbers, strings with strings. The comparison is exact: unlike
    MindSpore, the constant is not cast to the input's dtype first (MindSpore's
    ``Mask(EQ, 2.5)`` matches 2 in an int array, and ``Mask(GT, -1)`` on uint8 compares with
    255).
    """

    def __init__(self, operator: Relational, constant: Any, dtype: Any = np.bool_) -> None:
        if not isinstance(operator, Relational):
            raise TypeError(f"Mask: operator must be a Relational. Received: {operator!r}")
        if isinstance(constant, np.generic):
            constant = constant.item()
        if not isinstance(constant, (int, float, str, bytes)):
            raise TypeError(
                f"Mask: constant must be a number, bool, str or bytes. Received: {constant!r}"
            )
        out = to_numpy_dtype(dtype)
        if out.kind not in "biuf":
            raise TypeError(f"Mask: dtype must be bool or numeric. Received: dtype={dtype!r}")
        self.operator, self.constant, self.dtype = operator, constant, out

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        stringy = x.dtype.kind in "SU"
        if stringy != isinstance(self.constant, (str, bytes)):
            raise TypeError(
                f"Mask: cannot compare a {x.dtype} array with {self.constant!r}: numbers "
                f"compare with numbers, strings with strings"
            )
        return _COMPARE[self.operator](x, self.constant).astype(self.dtype, copy=False)


class Unique(TensorOperation):
    """Three outputs: the distinct values of the (flattened) input in order of first
    appearance, each element's index into them, and each value's count (both int32).

    As in MindSpore, NaNs are all distinct and 0.0 equals -0.0 (the first one seen is kept).
    Unlike MindSpore, 1-D, 0-D, empty, bool and string inputs are accepted (MindSpore asks for
    2-D or more numeric data).
    """

    def apply(self, x: np.ndarray, rng=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        flat = x.reshape(-1)
        kwargs = {"equal_nan": False} if flat.dtype.kind in "fc" else {}
        _, first, inverse, counts = np.unique(
            flat, return_index=True, return_inverse=True, return_counts=True, **kwargs
        )
        order = np.argsort(first, kind="stable")  # sorted values -> order of appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return (
            flat[first[order]],
            rank[inverse.reshape(-1)].astype(np.int32),
            counts[order].astype(np.int32),
        )


class RandomOrder(TensorOperation):
    """Apply all of ``transforms`` in a random order (a uniform permutation per call)."""

    randomized = True

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops("RandomOrder", transforms)

    def apply(self, *args: np.ndarray, rng=None) -> Any:
        order = rng.permutation(len(self.transforms))
        return _chain([self.transforms[k] for k in order], args, rng)

"""Generic ops: TypeCast, Compose, OneHot, Fill, Duplicate, Concatenate, RandomApply,
RandomChoice."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.error_types import ArgumentError, PipelineTypeError
from ..core.operation import TensorOperation, apply_op
from ..core.pil_images import is_pil
from ..core.rows import as_columns, to_array, to_numpy_dtype

_MISSING = object()  # an argument not given


def _check_ops(op: str, transforms: Any) -> list[Callable]:
    if not isinstance(transforms, (list, tuple)) or not transforms:
        raise ArgumentError(  # MindSpore: a ValueError for [], a TypeError for others
            f"{op}: transforms must be a non-empty list of ops. Received: transforms={transforms!r}"
        )
    for k, t in enumerate(transforms):
        if isinstance(t, type):  # MindSpore 2.10: a ValueError (parentheses missing)
            raise ValueError(
                f"{op}: transforms[{k}] is a class, not an op; call it to make one "
                f"(missing parentheses?). Received: transforms[{k}]={t!r}"
            )
        if not callable(t):
            raise TypeError(f"{op}: transforms[{k}] is not callable. Received: {t!r}")
    return list(transforms)


def _chain(transforms: Sequence[Callable], args: tuple, rng: np.random.Generator | None):
    """Apply ``transforms`` in turn, each to the columns the one before returned. A PIL image
    (``Decode(to_pil=True)``'s) goes on as it is to an op with a PIL path (``apply_pil``:
    ``RandomRotation(resample=Inter.ANTIALIAS)``, a Pillow filter), as MindSpore's
    ``Compose`` hands it on; any other op gets it as an array."""
    result: Any = args
    for k, t in enumerate(transforms):
        if is_pil(result) and hasattr(t, "apply_pil"):
            result = t.apply_pil(result, rng if t.randomized else None)
            continue
        result = apply_op(t, args if k == 0 else as_columns(result), lambda: rng)
    args = as_columns(result)
    return args[0] if len(args) == 1 else args


class TypeCast(TensorOperation):
    """Cast to ``data_type`` (a NumPy or torch dtype, ``jisu.int32`` etc., or
    ``mstype.string`` for text).

    As in MindSpore 2.10, text casts only to text: numbers or bytes to ``string``, and text or
    bytes to a number or bool, are refused (:class:`PipelineTypeError`, a ``TypeError`` and a
    ``RuntimeError``) rather than parsed or printed.

    Raises:
        TypeError: ``data_type`` missing (``output_type=`` is ``ToTensor``'s name), None, or
            not a data type.
    """

    elementwise = True

    def __init__(self, data_type: Any = _MISSING, **unknown: Any) -> None:
        if data_type is _MISSING or unknown:
            given = ", ".join(f"{k}={v!r}" for k, v in unknown.items())
            raise TypeError(  # MindSpore 2.10's words, then what was given instead
                "TypeCast: missing a required argument: 'data_type'"
                + (f"; it takes no {given}" if given else "")
            )
        if data_type is None:  # NumPy reads None as float64
            raise TypeError("TypeCast: data_type must be a data type. Received: None")
        self.data_type = to_numpy_dtype(data_type)
        if self.data_type.kind in "US":  # text has no fixed width to write into a batch
            self.elementwise = False

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        to_text, from_text = self.data_type.kind in "US", x.dtype.kind in "US"
        if (to_text or from_text) and x.dtype.kind != self.data_type.kind:
            raise PipelineTypeError(
                f"TypeCast: casting {x.dtype} to {self.data_type} is not supported: text casts "
                "only to text (as in MindSpore)"
            )
        return x.astype(self.data_type, copy=False)

    def apply_into(self, x: np.ndarray, out: np.ndarray, perm=None) -> None:
        np.copyto(out, x, casting="unsafe")

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        return self.data_type


class Compose(TensorOperation):
    """Apply ``transforms`` one after another as a single op."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops("Compose", transforms)
        self.randomized = any(getattr(t, "randomized", False) for t in self.transforms)

    def apply(self, *args: np.ndarray, rng=None) -> Any:
        return _chain(self.transforms, args, rng)


class RandomApply(TensorOperation):
    """Apply all of ``transforms`` with probability ``prob``, else pass the input through."""

    randomized = True

    def __init__(self, transforms: Sequence[Callable], prob: float = 0.5) -> None:
        self.transforms = _check_ops("RandomApply", transforms)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomApply: prob must be in [0, 1]. Received: prob={prob}")
        self.prob = float(prob)

    def apply(self, *args: np.ndarray, rng=None) -> Any:
        if rng.random() >= self.prob:
            return args[0] if len(args) == 1 else args
        return _chain(self.transforms, args, rng)


class RandomChoice(TensorOperation):
    """Apply one of ``transforms``, chosen uniformly at random."""

    randomized = True

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops("RandomChoice", transforms)

    def apply(self, *args: np.ndarray, rng=None) -> Any:
        chosen = self.transforms[int(rng.integers(len(self.transforms)))]
        return _chain([chosen], args, rng)


class OneHot(TensorOperation):
    """One-hot encode integer labels into ``num_classes`` (with optional label smoothing).

    Without smoothing the output keeps the label's integer dtype; with ``smoothing_rate`` s the
    target class gets ``1 - s + s / num_classes`` and every class ``s / num_classes`` (float64,
    as in MindSpore).
    """

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0) -> None:
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ArgumentError(
                f"OneHot: num_classes must be an int >= 1. Received: {num_classes!r}"
            )
        if not 0.0 <= smoothing_rate <= 1.0:
            raise ValueError(
                f"OneHot: smoothing_rate must be in [0, 1]. Received: {smoothing_rate}"
            )
        self.num_classes = num_classes
        self.smoothing_rate = float(smoothing_rate)

    def apply(self, label: np.ndarray, rng=None) -> np.ndarray:
        if label.dtype.kind not in "iu":
            raise TypeError(f"OneHot: labels must be integers. Received dtype {label.dtype}")
        if np.any(label < 0) or np.any(label >= self.num_classes):
            raise ValueError(
                f"OneHot: labels must be in [0, {self.num_classes}). Received: {label.tolist()}"
            )
        # MindSpore drops the label's size-1 axes first: (1,) and (1, 1) give (num_classes,)
        label = label.squeeze()
        hot = np.arange(self.num_classes) == label[..., None]
        if self.smoothing_rate == 0.0:
            return hot.astype(label.dtype)
        s = self.smoothing_rate
        return hot * (1.0 - s) + s / self.num_classes


class Fill(TensorOperation):
    """An array of the input's shape and dtype filled with ``fill_value``.

    A float value filling an integer array is truncated (2.7 -> 2), as in MindSpore. A value
    outside an integer dtype's range is an error (MindSpore wraps it: -1 fills uint8 with 255).
    Strings and bytes fill only string and bytes arrays, with the whole value (the result's
    dtype fits it, so ``Fill("xyz")`` on ``["ab"]`` gives ``["xyz"]``); mixing them with each
    other or with numbers is a ``TypeError``, as in MindSpore.
    """

    def __init__(self, fill_value: Any) -> None:
        if not isinstance(fill_value, (int, float, str, bytes, np.generic)):
            raise TypeError(  # MindSpore 2.10: None, lists, arrays are refused
                f"Fill: fill_value must be a number, bool, str or bytes. Received: {fill_value!r}"
            )
        self.fill_value = fill_value

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        value = self.fill_value
        text = "U" if isinstance(value, str) else "S" if isinstance(value, bytes) else None
        if text is not None or x.dtype.kind in "US":
            if text != x.dtype.kind:
                raise TypeError(
                    f"Fill: fill_value and the input must both be strings or both bytes when "
                    f"either is; received fill_value={value!r} for an input of dtype {x.dtype}"
                )
            return np.full(x.shape, value)
        if x.dtype.kind in "iu" and isinstance(value, (int, float, np.integer, np.floating)):
            info = np.iinfo(x.dtype)
            finite = not isinstance(value, (float, np.floating)) or np.isfinite(value)
            if not (finite and info.min <= int(value) <= info.max):
                raise ValueError(
                    f"Fill: fill_value {value!r} does not fit the input's dtype {x.dtype} "
                    f"(range [{info.min}, {info.max}]); pass a value in range or cast first"
                )
            value = int(value)
        return np.full_like(x, value)


class Duplicate(TensorOperation):
    """Two outputs: the input and a copy of it."""

    def apply(self, x: np.ndarray, rng=None) -> tuple[np.ndarray, np.ndarray]:
        return x, x.copy()


class Concatenate(TensorOperation):
    """Concatenate the input columns, with optional ``prepend``/``append`` arrays, into one
    1-D array (MindSpore's rule: 1-D inputs only, ``axis`` 0 or -1, every part of the input's
    dtype; strings may differ in length). Other ranks or mixed dtypes are refused rather than
    promoted, so a silent int -> float conversion cannot slip into a label column; use
    ``numpy.concatenate`` in a Python op for them."""

    def __init__(self, axis: int = 0, prepend: Any = None, append: Any = None) -> None:
        if isinstance(axis, bool) or not isinstance(axis, int) or axis not in (0, -1):
            raise ValueError(
                f"Concatenate: only 1-D concatenation is supported; axis must be 0 or -1. "
                f"Received: axis={axis!r}"
            )
        self.axis = axis
        self.prepend = _one_d("prepend", prepend)
        self.append = _one_d("append", append)

    def apply(self, *arrays: np.ndarray, rng=None) -> np.ndarray:
        parts = [a for a in (self.prepend, *arrays, self.append) if a is not None]
        kind = _dtype_kind(arrays[0].dtype)
        for i, a in enumerate(arrays):
            if a.ndim != 1:
                raise ValueError(
                    f"Concatenate: only 1-D inputs are supported. Input {i} has shape {a.shape}"
                )
        for name, part in (
            ("prepend", self.prepend),
            ("append", self.append),
            *((f"input {i}", a) for i, a in enumerate(arrays)),
        ):
            if part is not None and _dtype_kind(part.dtype) != kind:
                raise TypeError(
                    f"Concatenate: {name} has dtype {part.dtype}, the input {arrays[0].dtype}; "
                    "every part must have the input's dtype"
                )
        return np.concatenate(parts)


def _one_d(name: str, value: Any) -> np.ndarray | None:
    if value is None:
        return None
    array = to_array(value)
    if array.ndim != 1:
        raise ValueError(
            f"Concatenate: {name} must be a 1-D array. Received an array of shape {array.shape}"
        )
    return array


def _dtype_kind(dtype: np.dtype) -> Any:
    """Strings compare by kind (their length may differ), other dtypes exactly."""
    return dtype.kind if dtype.kind in "US" else dtype

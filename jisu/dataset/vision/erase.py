"""Erase: fill a fixed rectangle of an HWC RGB image with a value (MindSpore 2.10's op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation

_INT32_MAX = 2**31 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_int(name: str, value: Any, low: int) -> int:
    if not _is_int(value):
        raise TypeError(f"Erase: {name} must be an int. Received: {name}={value!r}")
    if not low <= value <= _INT32_MAX:
        raise ValueError(f"Erase: {name} must lie in [{low}, {_INT32_MAX}]. Received: {value}")
    return int(value)


def _check_value(value: Any) -> tuple[float, float, float]:
    """A number for every channel, or a tuple of three (R, G, B), each in [0, 255]."""
    number = (int, float, np.integer, np.floating)
    values = (value,) * 3 if isinstance(value, number) else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(values, tuple):
        raise TypeError(
            f"Erase: value must be a number or a tuple of three. Received: value={value!r}"
        )
    if len(values) != 3 or not all(
        isinstance(v, number) and not isinstance(v, (bool, np.bool_)) for v in values
    ):
        raise TypeError(f"Erase: value must be a number or a 3-tuple. Received: value={value!r}")
    if not all(0 <= v <= 255 for v in values):
        raise ValueError(f"Erase: value must lie in [0, 255]. Received: value={value!r}")
    return tuple(float(v) for v in values)


class Erase(TensorOperation):
    """Fill the box of ``height`` x ``width`` pixels at (``top``, ``left``) of an HWC image
    with 3 channels with ``value`` (one number, or (R, G, B); rounded half to even for an integer
    image). As in MindSpore, a box larger than the image or starting outside it is an error
    when the op runs, and one that starts inside is cut at the image's bottom and right edges.

    ``inplace`` is accepted for MindSpore's signature; jisu always returns a new array (an
    eager MindSpore call with ``inplace=True`` also changes the array it was given).

    Raises:
        TypeError: ``top``, ``left``, ``height`` or ``width`` not an int, ``value`` not a number
            or 3-tuple, ``inplace`` not a bool.
        ValueError: ``top``/``left`` negative, ``height``/``width`` below 1, ``value`` outside
            [0, 255].
    """

    pil_out = False

    def __init__(
        self,
        top: int,
        left: int,
        height: int,
        width: int,
        value: float | tuple[float, float, float] = 0.0,
        inplace: bool = False,
    ) -> None:
        self.top, self.left = _check_int("top", top, 0), _check_int("left", left, 0)
        self.height, self.width = _check_int("height", height, 1), _check_int("width", width, 1)
        self.value = _check_value(value)
        if not isinstance(inplace, bool):
            raise TypeError(f"Erase: inplace must be a bool. Received: inplace={inplace!r}")
        self.inplace = inplace

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype.kind not in "biuf":
            raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
                f"Erase: expected a numeric HWC image with 3 channels. Received shape "
                f"{image.shape}, dtype {image.dtype}"
            )
        h, w = image.shape[:2]
        # as MindSpore 2.10: a box larger than the image, or starting outside it, is an
        # error; one that starts inside is cut at the image's bottom and right edges
        if self.height > h or self.width > w or self.top >= h or self.left >= w:
            raise PipelineValueError(
                f"Erase: the box (top={self.top}, left={self.left}, height={self.height}, "
                f"width={self.width}) is larger than the image of shape {image.shape} or "
                "starts outside it"
            )
        fill = np.asarray(self.value)
        if image.dtype.kind in "biu":
            fill = np.rint(fill)  # half to even, as MindSpore's
        out = image.copy()
        out[self.top : self.top + self.height, self.left : self.left + self.width] = fill
        return out

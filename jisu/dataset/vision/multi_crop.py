"""Ops that turn one image into several: FiveCrop, TenCrop (MindSpore's PIL-era ops) and
SlicePatches. Each returns a tuple of images, which a pipeline spreads over as many columns
(``map(..., output_columns=[...])``) or hands to the next op of a ``Compose`` as that many
arguments, as MindSpore 2.10 does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation
from ..core.pil_images import is_pil, to_pil
from .utils import SliceMode, check_image

#: MindSpore 2.10's largest crop side
_MAX_SIDE = 16777216


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _crop_size(op: str, size: Any) -> tuple[int, int]:
    """``size`` (an int, or (height, width)) as a pair of ints in [1, 16777216].

    Raises:
        TypeError: not an int or a list/tuple of two ints.
        ValueError: a side out of range.
    """
    pair = (size, size) if _is_int(size) else size
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(map(_is_int, pair)):
        raise TypeError(
            f"{op}: size must be an int or a list/tuple (height, width) of two ints. "
            f"Received: size={size!r}"
        )
    if not all(1 <= s <= _MAX_SIDE for s in pair):
        raise ValueError(f"{op}: size must lie in [1, {_MAX_SIDE}]. Received: size={size!r}")
    return int(pair[0]), int(pair[1])


def five_crop(op: str, image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """(top left, top right, bottom left, bottom right, center) crops of an HW/HWC image;
    the center's offsets are rounded half to even, as MindSpore's (Python's ``round``)."""
    check_image(op, image)
    (th, tw), (h, w) = size, image.shape[:2]
    if th > h or tw > w:
        raise PipelineValueError(  # MindSpore 2.10: a ValueError eagerly, RuntimeError in a map
            f"{op}: crop size {size} is larger than the image ({h}, {w})"
        )
    top, left = round((h - th) / 2), round((w - tw) / 2)
    corners = [(0, 0), (0, w - tw), (h - th, 0), (h - th, w - tw), (top, left)]
    return tuple(np.ascontiguousarray(image[y : y + th, x : x + tw]) for y, x in corners)


class _ManyImages(TensorOperation):
    """An op returning a tuple of images: given one PIL image eagerly, a tuple of PIL images
    (as MindSpore's FiveCrop and TenCrop return)."""

    def __call__(self, *args: Any) -> Any:
        result = super().__call__(*args)
        if len(args) == 1 and is_pil(args[0]) and isinstance(result, tuple):
            return tuple(to_pil(type(self).__name__, r) for r in result)
        return result


class FiveCrop(_ManyImages):
    """The four corner crops and the central crop of ``size`` (an int or (height, width)),
    as a tuple (top left, top right, bottom left, bottom right, center).

    MindSpore 2.10 takes only PIL images here; jisu takes an HW/HWC array too (a PIL image
    gives PIL images eagerly). An image smaller than ``size`` is an error when the op runs.

    Raises:
        TypeError: ``size`` is not an int or a pair of ints.
        ValueError: ``size`` is not in [1, 16777216].
    """

    def __init__(self, size: int | tuple[int, int]) -> None:
        self.size = _crop_size("FiveCrop", size)

    def apply(self, image: np.ndarray, rng=None) -> tuple[np.ndarray, ...]:
        return five_crop("FiveCrop", image, self.size)


class TenCrop(_ManyImages):
    """:class:`FiveCrop`'s five crops, then the five crops of the image flipped horizontally
    (``use_vertical_flip=True``: vertically), as a tuple of ten.

    Raises:
        TypeError: ``size`` is not an int or a pair of ints; ``use_vertical_flip`` is not a
            bool.
        ValueError: ``size`` is not in [1, 16777216].
    """

    def __init__(self, size: int | tuple[int, int], use_vertical_flip: bool = False) -> None:
        self.size = _crop_size("TenCrop", size)
        if not isinstance(use_vertical_flip, bool):
            raise TypeError(
                f"TenCrop: use_vertical_flip must be a bool. Received: "
                f"use_vertical_flip={use_vertical_flip!r}"
            )
        self.use_vertical_flip = use_vertical_flip

    def apply(self, image: np.ndarray, rng=None) -> tuple[np.ndarray, ...]:
        first = five_crop("TenCrop", image, self.size)
        flipped = np.flip(image, 0 if self.use_vertical_flip else 1)
        return first + five_crop("TenCrop", flipped, self.size)


def _count(op: str, name: str, value: Any, low: int, high: int) -> int:
    if not _is_int(value):
        raise TypeError(f"{op}: {name} must be an int. Received: {name}={value!r}")
    if not low <= value <= high:
        raise ValueError(f"{op}: {name} must lie in [{low}, {high}]. Received: {name}={value}")
    return int(value)


class SlicePatches(TensorOperation):
    """Cut an HW/HWC image into ``num_height`` x ``num_width`` patches, returned row by row
    as a tuple (one patch: the image itself, as MindSpore returns it).

    ``SliceMode.PAD`` (default) makes each patch ``ceil(H / num_height)`` x
    ``ceil(W / num_width)``, padding the bottom and right with ``fill_value``;
    ``SliceMode.DROP`` makes them ``floor`` of those and drops the remainder. More patches
    than pixels along a side is an error when the op runs.

    Raises:
        TypeError: ``num_height``, ``num_width`` or ``fill_value`` is not an int;
            ``slice_mode`` is not a :class:`SliceMode`.
        ValueError: a count below 1, or ``fill_value`` outside [0, 255].
    """

    def __init__(
        self,
        num_height: int = 1,
        num_width: int = 1,
        slice_mode: SliceMode = SliceMode.PAD,
        fill_value: int = 0,
    ) -> None:
        op = "SlicePatches"
        self.num_height = _count(op, "num_height", num_height, 1, 2**31 - 1)
        self.num_width = _count(op, "num_width", num_width, 1, 2**31 - 1)
        if not isinstance(slice_mode, SliceMode):
            raise TypeError(
                f"{op}: slice_mode must be a SliceMode. Received: slice_mode={slice_mode!r}"
            )
        self.slice_mode = slice_mode
        self.fill_value = _count(op, "fill_value", fill_value, 0, 255)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray | tuple[np.ndarray, ...]:
        if self.num_height == self.num_width == 1:  # MindSpore: the image itself, no tuple
            return check_image("SlicePatches", image)
        check_image("SlicePatches", image)
        h, w = image.shape[:2]
        if self.num_height > h or self.num_width > w:
            raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
                f"SlicePatches: num_height={self.num_height} and num_width={self.num_width} "
                f"must not exceed the image's height and width. Received shape {image.shape}"
            )
        if self.slice_mode == SliceMode.PAD:
            ph, pw = math.ceil(h / self.num_height), math.ceil(w / self.num_width)
            padded = np.full(
                (ph * self.num_height, pw * self.num_width, *image.shape[2:]),
                self.fill_value,
                image.dtype,
            )
            padded[:h, :w] = image
            image = padded
        else:
            ph, pw = h // self.num_height, w // self.num_width
        return tuple(
            np.ascontiguousarray(image[i * ph : (i + 1) * ph, j * pw : (j + 1) * pw])
            for i in range(self.num_height)
            for j in range(self.num_width)
        )

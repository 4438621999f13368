"""MindSpore 2.x geometry ops: HorizontalFlip, VerticalFlip, Crop, ResizedCrop, RandomResize,
PadToSize (OpenCV and NumPy kernels, GIL released).

Rotations, affine and perspective warps are in :mod:`.affine`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.operation import TensorOperation
from .geometry import _flip
from .utils import (
    CV_DTYPES,
    Border,
    Inter,
    check_cv_pixels,
    check_image,
    pad_image,
    resize_plane,
    size_pair,
)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_inter(op: str, name: str, value: Any, allowed: tuple[Inter, ...]) -> Inter:
    """``value`` is one of the :class:`Inter` modes ``allowed`` (MindSpore's set for the op)."""
    if not isinstance(value, Inter):
        raise TypeError(f"{op}: {name} must be an Inter. Received: {value!r}")
    if value not in allowed:
        names = ", ".join(m.name for m in allowed)
        raise ValueError(f"{op}: {name} must be one of {names}. Received: {value}")
    return value


def check_image_or_batch(op: str, image: np.ndarray) -> np.ndarray:
    """HW, HWC, or HWC images under leading axes (NHWC, a video batch NTHWC ...), as the ops
    MindSpore applies to ``<..., H, W, C>`` take; 1-D and 0-D input is refused."""
    if image.ndim < 2:
        raise ValueError(
            f"{op}: expected an HW or HWC image or a batch of HWC images (..., H, W, C). "
            f"Received shape {image.shape}"
        )
    return image


def per_image(image: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` on an HW/HWC image, or on each HWC image under the leading axes (stacked back
    under them)."""
    if image.ndim < 4:
        return fn(image)
    if image.size == 0:
        return image.copy()
    flat = image.reshape(-1, *image.shape[-3:])
    outs = np.stack([fn(img) for img in flat])
    return outs.reshape(*image.shape[:-3], *outs.shape[1:])


def cv_image(image: np.ndarray) -> np.ndarray:
    """``image`` in a dtype and layout OpenCV's kernels take (converted back by the caller)."""
    src = image if image.dtype in CV_DTYPES else image.astype(np.float32)
    return src if src.flags.c_contiguous else np.ascontiguousarray(src)


def resize_image(image: np.ndarray, height: int, width: int, interpolation: Inter) -> np.ndarray:
    """``cv2.resize`` of an HW/HWC image, keeping its dtype and number of dimensions."""
    if image.shape[:2] == (height, width):
        return np.ascontiguousarray(image)
    src = cv_image(image)
    channels = 1 if image.ndim == 2 else image.shape[2]
    if channels > 512:  # OpenCV's channel limit: resize in slices
        parts = [
            resize_image(image[..., i : i + 512], height, width, interpolation)
            for i in range(0, channels, 512)
        ]
        return np.concatenate(parts, axis=2)
    out = resize_plane(src, height, width, interpolation)
    out = out.reshape(height, width, *image.shape[2:])
    return out if out.dtype == image.dtype else out.astype(image.dtype)


class HorizontalFlip(TensorOperation):
    """Mirror left-right: an HW/HWC image, or HWC images under leading axes (N, T ...)."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_cv_pixels("HorizontalFlip", check_image_or_batch("HorizontalFlip", image))
        if image.ndim >= 4:
            return np.ascontiguousarray(image[..., ::-1, :])
        return _flip(image, 1)


class VerticalFlip(TensorOperation):
    """Mirror top-bottom: an HW/HWC image, or HWC images under leading axes (N, T ...)."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_cv_pixels("VerticalFlip", check_image_or_batch("VerticalFlip", image))
        if image.ndim >= 4:
            return np.ascontiguousarray(image[..., ::-1, :, :])
        return _flip(image, 0)


def _coordinates(op: str, coordinates: Any) -> tuple[int, int]:
    if (
        not isinstance(coordinates, (tuple, list))
        or len(coordinates) != 2
        or not all(_is_int(c) and c >= 0 for c in coordinates)
    ):
        raise ValueError(
            f"{op}: coordinates must be (top, left), non-negative ints. "
            f"Received: coordinates={coordinates!r}"
        )
    return int(coordinates[0]), int(coordinates[1])


def _check_region(op: str, image: np.ndarray, top: int, left: int, height: int, width: int):
    h, w = image.shape[:2]
    if top + height > h or left + width > w:
        raise ValueError(
            f"{op}: the region top={top}, left={left}, height={height}, width={width} "
            f"exceeds the image (height {h}, width {w})"
        )


class Crop(TensorOperation):
    """The region of ``size`` ((height, width) or an int for a square) whose top-left corner is
    ``coordinates`` (top, left). A region reaching past the image is an error."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, coordinates: Any, size: int | tuple[int, int]) -> None:
        self.coordinates = _coordinates("Crop", coordinates)
        self.size = size_pair("Crop", size)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("Crop", image)
        (top, left), (height, width) = self.coordinates, self.size
        _check_region("Crop", image, top, left, height, width)
        return image[top : top + height, left : left + width]

    def crop_region(self, height: int, width: int, rng=None) -> tuple[int, int, int, int] | None:
        """The region of an image of ``height`` x ``width`` that this op keeps (for region
        decoding); None when it reaches past the image (``apply`` then says so)."""
        (top, left), (h, w) = self.coordinates, self.size
        return (top, left, h, w) if top + h <= height and left + w <= width else None

    def finish_region(self, region: np.ndarray) -> np.ndarray:
        return region


#: the modes MindSpore's resizing ops take for NumPy images
RESIZE_INTERS = (Inter.NEAREST, Inter.LINEAR, Inter.CUBIC, Inter.AREA, Inter.PILCUBIC)


class ResizedCrop(TensorOperation):
    """Crop the region (``top``, ``left``, ``height``, ``width``) and resize it to ``size``
    ((height, width) or an int for a square) with ``interpolation``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self,
        top: int,
        left: int,
        height: int,
        width: int,
        size: int | tuple[int, int],
        interpolation: Inter = Inter.BILINEAR,
    ) -> None:
        for name, value, low in (("top", top, 0), ("left", left, 0)):
            if not _is_int(value) or value < low:
                raise ValueError(f"ResizedCrop: {name} must be an int >= 0. Received: {value!r}")
        for name, value in (("height", height), ("width", width)):
            if not _is_int(value) or value < 1:
                raise ValueError(f"ResizedCrop: {name} must be an int >= 1. Received: {value!r}")
        self.top, self.left, self.height, self.width = int(top), int(left), int(height), int(width)
        self.size = size_pair("ResizedCrop", size)
        self.interpolation = check_inter(
            "ResizedCrop", "interpolation", interpolation, RESIZE_INTERS
        )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("ResizedCrop", image)
        t, l, h, w = self.top, self.left, self.height, self.width  # noqa: E741
        _check_region("ResizedCrop", image, t, l, h, w)
        return resize_image(image[t : t + h, l : l + w], *self.size, self.interpolation)

    def crop_region(self, height: int, width: int, rng=None) -> tuple[int, int, int, int] | None:
        """See :meth:`Crop.crop_region`."""
        t, l, h, w = self.top, self.left, self.height, self.width  # noqa: E741
        return (t, l, h, w) if t + h <= height and l + w <= width else None

    def finish_region(self, region: np.ndarray) -> np.ndarray:
        return resize_image(region, *self.size, self.interpolation)


#: RandomResize draws one of these, each with probability 1/4 (as MindSpore does)
RANDOM_RESIZE_INTERS = (Inter.LINEAR, Inter.NEAREST, Inter.CUBIC, Inter.AREA)


class RandomResize(TensorOperation):
    """Resize like :class:`~jisu.dataset.vision.Resize` (``size``: (height, width), or an int
    for the shorter side) with an interpolation drawn uniformly from LINEAR, NEAREST, CUBIC and
    AREA. Takes an HW/HWC image or HWC images under leading axes (one draw for them all)."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True
    multi_input = True  # MindSpore 2.10: several images, the same draw

    def __init__(self, size: int | tuple[int, int]) -> None:
        if _is_int(size):
            if size <= 0:
                raise ValueError(f"RandomResize: size must be positive. Received: size={size}")
            self.size: int | tuple[int, int] = int(size)
        else:
            self.size = size_pair("RandomResize", size)

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        if isinstance(self.size, tuple):
            return self.size
        if height <= width:
            return self.size, int(width * self.size / height)
        return int(height * self.size / width), self.size

    def draw(self, rng: np.random.Generator) -> Inter:
        """The interpolation mode of one application."""
        return RANDOM_RESIZE_INTERS[int(rng.integers(0, len(RANDOM_RESIZE_INTERS)))]

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image_or_batch("RandomResize", image)
        inter = self.draw(rng)
        hw = image.shape[-3:-1] if image.ndim >= 4 else image.shape[:2]
        h, w = self.output_size(*hw)
        return per_image(image, lambda img: resize_image(img, h, w, inter))


class PadToSize(TensorOperation):
    """Pad an image to ``size`` ((height, width) or an int for a square).

    Args:
        size: the output size; it must not be smaller than the image.
        offset: (top, left) padding, or an int for both; ``None`` centres the image (the odd
            pixel of padding goes to the bottom/right).
        fill_value: value of CONSTANT padding: an int, or a 3-tuple (one per channel).
        padding_mode: a :class:`Border` mode (CONSTANT, EDGE, REFLECT, SYMMETRIC).
    """

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self,
        size: int | tuple[int, int],
        offset: int | tuple[int, int] | None = None,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self.size = size_pair("PadToSize", size)
        if isinstance(offset, (tuple, list)) and not offset:
            offset = None  # MindSpore 2.10: an empty offset centres the image, as None does
        if offset is not None:
            pair = (offset, offset) if _is_int(offset) else offset
            if (
                not isinstance(pair, (tuple, list))
                or len(pair) != 2
                or not all(_is_int(o) and o >= 0 for o in pair)
            ):
                raise ValueError(
                    "PadToSize: offset must be None, a non-negative int or (top, left). "
                    f"Received: offset={offset!r}"
                )
            offset = (int(pair[0]), int(pair[1]))
        self.offset = offset
        self.fill_value = check_fill("PadToSize", fill_value)
        if not isinstance(padding_mode, Border):
            raise TypeError(f"PadToSize: padding_mode must be a Border. Received: {padding_mode!r}")
        self.padding_mode = padding_mode

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("PadToSize", image)
        (th, tw), (h, w) = self.size, image.shape[:2]
        if th < h or tw < w:
            raise ValueError(
                f"PadToSize: size {self.size} is smaller than the image (height {h}, width {w})"
            )
        top, left = ((th - h) // 2, (tw - w) // 2) if self.offset is None else self.offset
        if top + h > th or left + w > tw:
            raise ValueError(
                f"PadToSize: offset {(top, left)} plus the image size {(h, w)} exceeds "
                f"size {self.size}"
            )
        fill = channel_fill(self.fill_value, image)
        return pad_image(image, left, top, tw - w - left, th - h - top, self.padding_mode, fill)


def check_fill(op: str, fill_value: Any) -> int | tuple[int, int, int]:
    """MindSpore's ``fill_value``: an int in [0, 255], or 3 of them (R, G, B)."""
    if _is_int(fill_value) and 0 <= fill_value <= 255:
        return int(fill_value)
    if (
        isinstance(fill_value, (tuple, list))
        and len(fill_value) == 3
        and all(_is_int(v) and 0 <= v <= 255 for v in fill_value)
    ):
        return tuple(int(v) for v in fill_value)  # type: ignore[return-value]
    raise ValueError(
        f"{op}: fill_value must be an int in [0, 255] or 3 of them. "
        f"Received: fill_value={fill_value!r}"
    )


def channel_fill(fill: int | tuple[int, ...], image: np.ndarray) -> float | tuple[float, ...]:
    """One fill value per channel: an int fills every channel; a 3-tuple fills channels 0-2
    in order (a 1-channel image takes the first; channels past the third take 0)."""
    if isinstance(fill, int):
        return float(fill)
    channels = 1 if image.ndim == 2 else image.shape[2]
    values = [float(v) for v in fill[:channels]] + [0.0] * max(0, channels - 3)
    return tuple(values) if channels > 1 else values[0]

"""Geometric ops: Resize, CenterCrop, RandomCrop, flips, Pad (OpenCV kernels, GIL released)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation
from ..core.pil_images import is_pil
from .pil_geometry import PIL_FILTERS, pil_resize
from .utils import (
    CV_DTYPES,
    Border,
    Inter,
    check_cv_pixels,
    check_image,
    pad_image,
    padding_4,
    resize_plane,
    size_pair,
)


def per_image(op: str, images: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` applied to each HWC image of a batch (``(N, H, W, C)``, or more leading axes),
    the results stacked. Random ops draw for each image in turn from the same generator, so
    each image gets its own draw and the batch's result depends on the seed alone."""
    flat = images.reshape(-1, *images.shape[-3:])
    if flat.shape[0] == 0:
        raise ValueError(f"{op}: the batch is empty. Received shape {images.shape}")
    outs = [fn(image) for image in flat]
    return np.stack(outs).reshape(*images.shape[:-3], *outs[0].shape)


def _cv_ok(image: np.ndarray) -> bool:
    return image.dtype in CV_DTYPES and (image.ndim == 2 or image.shape[2] <= 512)


class Resize(TensorOperation):
    """Resize to ``size``: (height, width), or an int for the shorter side (keeping the
    aspect ratio; the longer side is ``int(long * size / short)``).

    Called on a PIL image with NEAREST, BILINEAR, BICUBIC or ANTIALIAS (Pillow's Lanczos,
    antialiased), it resizes with Pillow's ``Image.resize`` and returns a PIL image, as
    MindSpore does; AREA and PILCUBIC resize a PIL image with the array kernels.
    """

    def __init__(self, size: int | tuple[int, int], interpolation: Inter = Inter.LINEAR) -> None:
        if isinstance(size, int) and not isinstance(size, bool):
            if size <= 0:
                raise ValueError(f"Resize: size must be positive. Received: size={size}")
            self.size: int | tuple[int, int] = size
        else:
            self.size = size_pair("Resize", size)
        if not isinstance(interpolation, Inter):
            raise TypeError(f"Resize: interpolation must be an Inter. Received: {interpolation!r}")
        self.interpolation = interpolation

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        if isinstance(self.size, tuple):
            return self.size
        if height <= width:
            return self.size, int(width * self.size / height)
        return int(height * self.size / width), self.size

    def __call__(self, *args: Any) -> Any:
        """Pillow's resize for one PIL image (MindSpore's path for it), else the array op."""
        if len(args) == 1 and is_pil(args[0]) and self.interpolation in PIL_FILTERS:
            return pil_resize(args[0], self.size, self.interpolation)
        return super().__call__(*args)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("Resize", image, lambda im: self.apply(im, rng=rng))
        check_image("Resize", image)
        h, w = self.output_size(image.shape[0], image.shape[1])
        if (h, w) == image.shape[:2]:
            return image
        src = image if _cv_ok(image) else image.astype(np.float32)
        out = resize_plane(src, h, w, self.interpolation)
        out = out.reshape(h, w, *image.shape[2:])
        return out if out.dtype == image.dtype else out.astype(image.dtype)


def crop(image: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    return image[top : top + height, left : left + width]


class CenterCrop(TensorOperation):
    """The central ``size`` region (top/left offsets rounded down); an image smaller than
    ``size`` is first padded with zeros, centered."""

    def __init__(self, size: int | tuple[int, int]) -> None:
        self.size = size_pair("CenterCrop", size)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("CenterCrop", image, lambda im: self.apply(im, rng=rng))
        check_image("CenterCrop", image)
        th, tw = self.size
        h, w = image.shape[:2]
        if h < th or w < tw:
            ph, pw = max(0, th - h), max(0, tw - w)
            image = pad_image(
                image, pw // 2, ph // 2, pw - pw // 2, ph - ph // 2, Border.CONSTANT, 0
            )
            h, w = image.shape[:2]
        return crop(image, (h - th) // 2, (w - tw) // 2, th, tw)

    def crop_region(self, height: int, width: int, rng=None) -> tuple[int, int, int, int] | None:
        """The central region an image of ``height`` x ``width`` keeps (for region decoding);
        None when the image is smaller than ``size`` (it is padded then)."""
        th, tw = self.size
        if height < th or width < tw:
            return None
        return (height - th) // 2, (width - tw) // 2, th, tw

    def finish_region(self, region: np.ndarray) -> np.ndarray:
        return region


class RandomCrop(TensorOperation):
    """A ``size`` region at a uniformly random position, after optional padding.

    Args:
        size: (height, width) or an int.
        padding: padding applied first (int, 2 or 4 values: left, top, right, bottom).
        pad_if_needed: pad images smaller than ``size`` up to it.
        fill_value: value for CONSTANT padding (an int or one per channel).
        padding_mode: a :class:`Border` mode.
    """

    randomized = True
    multi_input = True  # MindSpore 2.10: several images, the same draw

    def __init__(
        self,
        size: int | tuple[int, int],
        padding: Any = None,
        pad_if_needed: bool = False,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        self.size = size_pair("RandomCrop", size)
        self.padding = None if padding is None else padding_4("RandomCrop", padding)
        self.pad_if_needed = bool(pad_if_needed)
        self.fill_value = fill_value
        if not isinstance(padding_mode, Border):
            raise TypeError(
                f"RandomCrop: padding_mode must be a Border. Received: {padding_mode!r}"
            )
        self.padding_mode = padding_mode

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("RandomCrop", image, lambda im: self.apply(im, rng=rng))
        check_image("RandomCrop", image)
        if self.padding is not None:
            image = pad_image(image, *self.padding, self.padding_mode, self.fill_value)
        th, tw = self.size
        h, w = image.shape[:2]
        if self.pad_if_needed and (h < th or w < tw):
            ph, pw = max(0, th - h), max(0, tw - w)
            image = pad_image(image, pw, ph, pw, ph, self.padding_mode, self.fill_value)
            h, w = image.shape[:2]
        if h < th or w < tw:
            raise PipelineValueError(  # MindSpore: a RuntimeError
                f"RandomCrop: crop size {self.size} is larger than the image "
                f"{(h, w)}; set pad_if_needed=True or padding"
            )
        top = int(rng.integers(0, h - th + 1))
        left = int(rng.integers(0, w - tw + 1))
        return crop(image, top, left, th, tw)


def _flip(image: np.ndarray, axis: int) -> np.ndarray:
    """A mirrored copy. Not a view: OpenCV mirrors a 224x224x3 image in ~12 us, while a
    negative-strided view makes the next op slower by far more (OpenCV copies it first,
    NumPy loops slowly), and a user function could not hand it to ``torch.from_numpy``."""
    if _cv_ok(image) and image.flags.c_contiguous and image.size > 0:
        return cv2.flip(image, axis).reshape(image.shape)  # flipCode 0: rows, 1: columns
    return np.ascontiguousarray(np.flip(image, axis))


class RandomHorizontalFlip(TensorOperation):
    """Mirror left-right with probability ``prob``."""

    randomized = True
    multi_input = True  # MindSpore 2.10: several images, the same draw

    def __init__(self, prob: float = 0.5) -> None:
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: prob must be in [0, 1]. Received: {prob}")
        self.prob = float(prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_cv_pixels("RandomHorizontalFlip", image)
        if image.ndim >= 4:
            return per_image("RandomHorizontalFlip", image, lambda im: self.apply(im, rng=rng))
        check_image("RandomHorizontalFlip", image)
        return _flip(image, 1) if rng.random() < self.prob else image


class RandomVerticalFlip(TensorOperation):
    """Mirror top-bottom with probability ``prob``."""

    randomized = True
    multi_input = True  # MindSpore 2.10: several images, the same draw

    def __init__(self, prob: float = 0.5) -> None:
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomVerticalFlip: prob must be in [0, 1]. Received: {prob}")
        self.prob = float(prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_cv_pixels("RandomVerticalFlip", image)
        if image.ndim >= 4:
            return per_image("RandomVerticalFlip", image, lambda im: self.apply(im, rng=rng))
        check_image("RandomVerticalFlip", image)
        return _flip(image, 0) if rng.random() < self.prob else image


class Pad(TensorOperation):
    """Pad the borders: ``padding`` as int, (left/right, top/bottom) or (left, top, right,
    bottom); ``fill_value`` for CONSTANT mode (an int or one per channel)."""

    def __init__(
        self, padding: Any, fill_value: Any = 0, padding_mode: Border = Border.CONSTANT
    ) -> None:
        self.padding = padding_4("Pad", padding)
        self.fill_value = fill_value
        if not isinstance(padding_mode, Border):
            raise TypeError(f"Pad: padding_mode must be a Border. Received: {padding_mode!r}")
        self.padding_mode = padding_mode

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("Pad", image, self.apply)
        check_image("Pad", image)
        return pad_image(image, *self.padding, self.padding_mode, self.fill_value)

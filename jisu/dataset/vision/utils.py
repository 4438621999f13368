"""``mindspore.dataset.vision.utils``: the vision enums (MindSpore's names, bases and values),
the image helpers of that module, and the checks the vision ops share."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any

import cv2
import numpy as np

from ..core.error_types import ArgumentError, PipelineTypeError, PipelineValueError
from .image_io import ImageReadMode, get_image_num_channels, get_image_size, read_file, read_image

__all__ = [
    "AutoAugmentPolicy",
    "Border",
    "ConvertMode",
    "ImageBatchFormat",
    "ImageReadMode",
    "Inter",
    "SliceMode",
    "get_image_num_channels",
    "get_image_size",
    "read_file",
    "read_image",
]

#: dtypes OpenCV's kernels take
CV_DTYPES = frozenset(
    np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64)
)


class Inter(IntEnum):
    """Interpolation modes, with MindSpore's names and values (``Inter.BILINEAR == 2``);
    :attr:`cv_flag` is the OpenCV flag that implements each.

    - NEAREST: nearest neighbour.
    - LINEAR / BILINEAR (the same mode): bilinear.
    - CUBIC / BICUBIC (the same mode): bicubic.
    - AREA: pixel-area averaging (for shrinking; OpenCV's warps treat it as bilinear).
    - PILCUBIC: Pillow's bicubic resampler, antialiased when shrinking (its kernel widens with
      the scale): resizes use :func:`~jisu.dataset.vision.pil_resample.pil_bicubic_resize`
      (within one level of MindSpore's PILCUBIC and of Pillow); warps that take it use
      OpenCV's bicubic.
    - ANTIALIAS: MindSpore takes it for Pillow images only (Pillow's ANTIALIAS is its LANCZOS
      filter); here OpenCV's Lanczos-4. Ops that MindSpore refuses it for refuse it too.
    """

    NEAREST = 0
    ANTIALIAS = 1
    BILINEAR = 2
    LINEAR = 2
    BICUBIC = 3
    CUBIC = 3
    AREA = 4
    PILCUBIC = 5

    @property
    def cv_flag(self) -> int:
        """The OpenCV interpolation flag of this mode (PILCUBIC: bicubic)."""
        return _CV_INTER[self]


_CV_INTER = {
    Inter.NEAREST: cv2.INTER_NEAREST,
    Inter.ANTIALIAS: cv2.INTER_LANCZOS4,
    Inter.BILINEAR: cv2.INTER_LINEAR,
    Inter.BICUBIC: cv2.INTER_CUBIC,
    Inter.AREA: cv2.INTER_AREA,
    Inter.PILCUBIC: cv2.INTER_CUBIC,
}


def resize_plane(image: np.ndarray, height: int, width: int, inter: Inter) -> np.ndarray:
    """``cv2.resize(image, (width, height))`` in mode ``inter``, with PILCUBIC resized as
    Pillow does; HW1 images may come back HW (as from OpenCV)."""
    if inter is Inter.PILCUBIC:
        from .pil_resample import pil_bicubic_resize

        return pil_bicubic_resize(image, height, width)
    return cv2.resize(image, (width, height), interpolation=inter.cv_flag)


class Border(str, Enum):
    """Padding modes, with MindSpore's names and values (``Border.EDGE == "edge"``): CONSTANT
    value, EDGE repeat, REFLECT (no edge repeat), SYMMETRIC; :attr:`cv_flag` is OpenCV's."""

    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"

    @property
    def cv_flag(self) -> int:
        """The OpenCV border type of this mode."""
        return _CV_BORDER[self]


_CV_BORDER = {
    Border.CONSTANT: cv2.BORDER_CONSTANT,
    Border.EDGE: cv2.BORDER_REPLICATE,
    Border.REFLECT: cv2.BORDER_REFLECT_101,
    Border.SYMMETRIC: cv2.BORDER_REFLECT,
}


class ConvertMode(IntEnum):
    """Colour conversions of :class:`~jisu.dataset.vision.ConvertColor` (MindSpore's names and
    values; the RGB/BGR pairs that are the same channel shuffle are aliases, e.g.
    ``COLOR_RGB2BGR`` is ``COLOR_BGR2RGB``)."""

    COLOR_BGR2BGRA = 0
    COLOR_RGB2RGBA = 0
    COLOR_BGRA2BGR = 1
    COLOR_RGBA2RGB = 1
    COLOR_BGR2RGBA = 2
    COLOR_RGB2BGRA = 2
    COLOR_RGBA2BGR = 3
    COLOR_BGRA2RGB = 3
    COLOR_BGR2RGB = 4
    COLOR_RGB2BGR = 4
    COLOR_BGRA2RGBA = 5
    COLOR_RGBA2BGRA = 5
    COLOR_BGR2GRAY = 6
    COLOR_RGB2GRAY = 7
    COLOR_GRAY2BGR = 8
    COLOR_GRAY2RGB = 8
    COLOR_GRAY2BGRA = 9
    COLOR_GRAY2RGBA = 9
    COLOR_BGRA2GRAY = 10
    COLOR_RGBA2GRAY = 11


class AutoAugmentPolicy(str, Enum):
    """The AutoAugment policies (MindSpore's names and values)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


class ImageBatchFormat(IntEnum):
    """Layout of a batch of images: NHWC or NCHW (MindSpore's names and values)."""

    NHWC = 0
    NCHW = 1


class SliceMode(IntEnum):
    """The modes of :class:`~jisu.dataset.vision.SlicePatches`: PAD the last patches or DROP
    the remainder (MindSpore's names and values)."""

    PAD = 0
    DROP = 1


def check_image(op: str, image: np.ndarray) -> np.ndarray:
    """An image is HW or HWC."""
    if image.ndim not in (2, 3):
        raise PipelineValueError(  # MindSpore: a RuntimeError
            f"{op}: expected an HW or HWC image. Received shape {image.shape}"
        )
    return image


def check_pixels(op: str, image: np.ndarray) -> np.ndarray:
    """An image holds numbers (or bools): strings, bytes and objects are no pixels.

    Raises:
        PipelineTypeError: a text, bytes or object array (MindSpore 2.10: a RuntimeError).
    """
    if image.dtype.kind not in "biuf":
        raise PipelineTypeError(
            f"{op}: expected an image of numbers. Received an array of dtype {image.dtype}"
        )
    return image


#: pixel types OpenCV has no matrix type for, which MindSpore's OpenCV ops refuse
NO_CV_TYPE = (np.dtype(np.uint32), np.dtype(np.int64), np.dtype(np.uint64))


def check_cv_pixels(op: str, image: np.ndarray) -> np.ndarray:
    """:func:`check_pixels`, refusing uint32, int64 and uint64 too, as MindSpore 2.10's ops on
    OpenCV matrices do (the flips; "Cannot convert [int64] to OpenCV type").

    Raises:
        PipelineTypeError: such an image (MindSpore 2.10: a RuntimeError).
    """
    check_pixels(op, image)
    if image.dtype in NO_CV_TYPE:
        raise PipelineTypeError(
            f"{op}: the image's dtype must be bool, int8/16/32, uint8/16 or float (not uint32, "
            f"int64, uint64: no OpenCV type). Received dtype {image.dtype}; cast it first "
            "(transforms.TypeCast)"
        )
    return image


def size_pair(op: str, size: Any, name: str = "size") -> tuple[int, int]:
    """``size`` as (height, width): an int means a square."""
    if isinstance(size, int) and not isinstance(size, bool):
        size = (size, size)
    if (
        not isinstance(size, (tuple, list))
        or len(size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in size)
    ):  # MindSpore: a TypeError (a ValueError for a size <= 0)
        raise ArgumentError(
            f"{op}: {name} must be a positive int or (height, width). Received: {name}={size!r}"
        )
    if not all(s > 0 for s in size):
        raise ValueError(
            f"{op}: {name} must be a positive int or (height, width). Received: {name}={size!r}"
        )
    return int(size[0]), int(size[1])


def padding_4(op: str, padding: Any) -> tuple[int, int, int, int]:
    """Padding as (left, top, right, bottom): int, (left/right, top/bottom) or 4 values."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        padding = (padding,)
    if (
        not isinstance(padding, (tuple, list))
        or len(padding) not in (1, 2, 4)
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in padding)
    ):
        raise ValueError(
            f"{op}: padding must be a non-negative int or a sequence of 2 or 4 "
            f"of them. Received: padding={padding!r}"
        )
    if len(padding) == 1:
        return (padding[0],) * 4
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    return tuple(padding)  # type: ignore[return-value]


def pad_image(
    image: np.ndarray, left: int, top: int, right: int, bottom: int, mode: Border, fill: Any
) -> np.ndarray:
    """Pad an HW/HWC image (OpenCV's copyMakeBorder, which releases the GIL)."""
    if not (left or top or right or bottom):
        return image
    if image.dtype in (
        np.uint8,
        np.int8,
        np.uint16,
        np.int16,
        np.int32,
        np.float32,
        np.float64,
    ) and (image.ndim == 2 or image.shape[2] <= 4):
        channels = 1 if image.ndim == 2 else image.shape[2]
        value = fill if isinstance(fill, (tuple, list)) else (fill,) * channels
        out = cv2.copyMakeBorder(
            image, top, bottom, left, right, mode.cv_flag, value=tuple(float(v) for v in value)
        )
        return out.reshape(out.shape[0], out.shape[1], *image.shape[2:])
    widths = ((top, bottom), (left, right)) + (((0, 0),) if image.ndim == 3 else ())
    numpy_mode = {
        Border.CONSTANT: "constant",
        Border.EDGE: "edge",
        Border.REFLECT: "reflect",
        Border.SYMMETRIC: "symmetric",
    }[mode]
    if mode is Border.CONSTANT:
        if isinstance(fill, (tuple, list)):
            out = np.pad(image, widths, mode="constant")
            out[:top], out[out.shape[0] - bottom :] = fill, fill
            out[:, :left], out[:, out.shape[1] - right :] = fill, fill
            return out
        return np.pad(image, widths, mode="constant", constant_values=fill)
    return np.pad(image, widths, mode=numpy_mode)

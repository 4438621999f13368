"""MindSpore 2.x warps: Rotate, RandomRotation, Affine, RandomAffine (OpenCV's warpAffine,
which releases the GIL); Perspective and RandomPerspective are in :mod:`.perspective`.

Conventions (MindSpore's, checked against its output): pixel centres sit at integer
coordinates and the image centre is ((width - 1) / 2, (height - 1) / 2). ``Rotate`` turns
counter-clockwise for a positive angle; ``Affine`` turns clockwise (its documented direction).
Pixels that come from outside the image take ``fill_value``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import cv2
import numpy as np

from ..core.operation import TensorOperation
from ..core.pil_images import is_pil
from .pil_geometry import PIL_FILTERS, pil_rotate
from .transform_geometry import (
    channel_fill,
    check_fill,
    check_image_or_batch,
    check_inter,
    per_image,
)
from .utils import Inter, check_image

#: the modes MindSpore's warps take for NumPy images (AREA warps bilinearly, as in OpenCV)
WARP_INTERS = (Inter.NEAREST, Inter.LINEAR, Inter.CUBIC, Inter.AREA)
#: dtypes OpenCV's warps take as they are
_WARP_DTYPES = frozenset(
    np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32, np.float64)
)


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def warp(
    image: np.ndarray,
    matrix: np.ndarray,
    size: tuple[int, int],
    inter: Inter,
    fill: Any,
    perspective: bool = False,
) -> np.ndarray:
    """Warp an HW/HWC image by the forward ``matrix`` (2x3, or 3x3 with ``perspective``) into
    ``size`` (height, width); outside pixels take ``fill`` (an int or one per channel)."""
    height, width = size
    channels = 1 if image.ndim == 2 else image.shape[2]
    src = image if image.dtype in _WARP_DTYPES else image.astype(np.float32)
    fills = channel_fill(fill, image)
    fills = fills if isinstance(fills, tuple) else (fills,) * channels
    fn = cv2.warpPerspective if perspective else cv2.warpAffine
    parts = []
    for c in range(0, channels, 4):  # OpenCV's border value holds 4 channels
        part = src if channels <= 4 else np.ascontiguousarray(src[..., c : c + 4])
        if not part.flags.c_contiguous:
            part = np.ascontiguousarray(part)
        value = tuple(fills[c : c + 4]) + (0.0,) * 4
        out = fn(
            part,
            matrix,
            (width, height),
            flags=inter.cv_flag,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=value[:4],
        )
        parts.append(out.reshape(height, width, -1))
    out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=2)
    out = out.reshape(height, width, *image.shape[2:])
    if out.dtype != image.dtype:
        if np.issubdtype(image.dtype, np.integer):
            info = np.iinfo(image.dtype)
            out = np.clip(np.rint(out), info.min, info.max)
        out = out.astype(image.dtype)
    return out


def _check_center(op: str, center: Any) -> tuple[float, float] | None:
    if center is None:
        return None
    if not isinstance(center, (tuple, list)) or len(center) != 2 or not all(map(_number, center)):
        raise ValueError(f"{op}: center must be None or (x, y). Received: center={center!r}")
    return float(center[0]), float(center[1])


def rotation_matrix(
    height: int, width: int, degrees: float, center: tuple[float, float] | None, expand: bool
) -> tuple[np.ndarray, tuple[int, int]]:
    """The forward 2x3 matrix of a counter-clockwise rotation and the output (height, width).

    With ``expand`` the output is the rotated image's bounding box (its sides rounded to the
    nearest int) and the image is shifted by half the growth, as MindSpore does.
    """
    cx, cy = ((width - 1) / 2.0, (height - 1) / 2.0) if center is None else center
    matrix = cv2.getRotationMatrix2D((cx, cy), degrees, 1.0)
    if not expand:
        return matrix, (height, width)
    rad = math.radians(degrees)
    cos, sin = abs(math.cos(rad)), abs(math.sin(rad))
    box_w, box_h = width * cos + height * sin, width * sin + height * cos
    matrix[0, 2] += box_w / 2.0 - width / 2.0
    matrix[1, 2] += box_h / 2.0 - height / 2.0
    return matrix, (int(np.rint(box_h)), int(np.rint(box_w)))


class Rotate(TensorOperation):
    """Rotate by ``degrees``, counter-clockwise for a positive angle.

    Args:
        degrees: the angle in degrees.
        resample: an :class:`Inter` mode: NEAREST (default), BILINEAR, BICUBIC or AREA.
        expand: grow the output to hold the whole rotated image (rotation about the centre).
        center: the rotation centre (x, y), origin at the top-left pixel; ``None``: the image
            centre ((width - 1) / 2, (height - 1) / 2).
        fill_value: the value of pixels from outside: an int, or (R, G, B), applied as
            MindSpore does (:func:`rotate_fill`: channel 0 takes B, 2 takes R, 3 takes 0).

    Takes an HW/HWC image, or HWC images under leading axes (NHWC, NTHWC ...).
    """

    pil_out = False  # MindSpore's returns an array for a PIL image
    _inters = WARP_INTERS

    def __init__(
        self,
        degrees: float,
        resample: Inter = Inter.NEAREST,
        expand: bool = False,
        center: tuple[float, float] | None = None,
        fill_value: Any = 0,
    ) -> None:
        op = type(self).__name__
        if not _number(degrees):
            raise TypeError(f"{op}: degrees must be a number. Received: {degrees!r}")
        self.degrees = float(degrees)
        self.resample = check_inter(op, "resample", resample, self._inters)
        if not isinstance(expand, bool):
            raise TypeError(f"{op}: expand must be a bool. Received: {expand!r}")
        self.expand = expand
        self.center = _check_center(op, center)
        self.fill_value = check_fill(op, fill_value)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image_or_batch("Rotate", image)
        return per_image(image, lambda img: self._rotate(img, self.degrees))

    def _rotate(self, image: np.ndarray, degrees: float) -> np.ndarray:
        matrix, size = rotation_matrix(
            image.shape[0], image.shape[1], degrees, self.center, self.expand
        )
        channels = 1 if image.ndim == 2 else image.shape[2]
        return warp(image, matrix, size, self.resample, rotate_fill(self.fill_value, channels))


def rotate_fill(fill: int | tuple[int, int, int], channels: int) -> tuple[float, ...]:
    """The value of each channel outside the rotated image, as MindSpore 2.10's Rotate and
    RandomRotation give it: OpenCV's border colour ``(B, G, R, 0)`` from ``fill = (R, G, B)``
    (an int ``v``: ``(v, v, v, 0)``), repeated every 4 channels; so channel 0 takes the
    tuple's last value and channel 3 takes 0, though MindSpore documents R, G, B."""
    values = (fill, fill, fill) if isinstance(fill, int) else tuple(reversed(fill))
    border = (*(float(v) for v in values), 0.0)
    return tuple(border[c % 4] for c in range(channels))


def _range(op: str, name: str, value: Any, symmetric_from: float | None = None):
    """A (min, max) range; a number ``d`` means (-d, d) when ``symmetric_from`` is set."""
    if _number(value) and symmetric_from is not None:
        if value < 0:
            raise ValueError(f"{op}: {name} must be non-negative. Received: {name}={value!r}")
        return -float(value), float(value)
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or not all(map(_number, value))
        or value[0] > value[1]
    ):
        raise ValueError(f"{op}: {name} must be a number or (min, max). Received: {name}={value!r}")
    return float(value[0]), float(value[1])


class RandomRotation(Rotate):
    """Rotate by an angle drawn uniformly from ``degrees``: (min, max), or a number ``d`` for
    (-d, d). Other arguments as :class:`Rotate`; one image (HW/HWC) at a time.

    Called on a PIL image with NEAREST, BILINEAR, BICUBIC or ANTIALIAS, it rotates with
    Pillow's ``Image.rotate``, as MindSpore does: ``center`` is then in Pillow's coordinates
    (the origin at the top-left pixel's corner) and ``expand`` sizes the canvas as Pillow
    does. ANTIALIAS takes PIL images only, and only turns by multiples of 90 degrees that
    Pillow can do without resampling (see :func:`~jisu.dataset.vision.pil_geometry.pil_rotate`).
    """

    pil_out = True  # MindSpore's returns a PIL image (its Rotate an array)
    _inters = (*WARP_INTERS, Inter.ANTIALIAS)

    randomized = True

    def __init__(
        self,
        degrees: Any,
        resample: Inter = Inter.NEAREST,
        expand: bool = False,
        center: tuple[float, float] | None = None,
        fill_value: Any = 0,
    ) -> None:
        super().__init__(0.0, resample, expand, center, fill_value)
        del self.degrees
        self.degrees = _range("RandomRotation", "degrees", degrees, symmetric_from=0.0)

    def draw(self, rng: np.random.Generator) -> float:
        """The angle of one application."""
        return float(rng.uniform(*self.degrees))

    def __call__(self, *args: Any) -> Any:
        """Pillow's rotation for one PIL image (MindSpore's path for it), else the array op."""
        if len(args) == 1 and is_pil(args[0]) and self.resample in PIL_FILTERS:
            angle = self.draw(self._eager_rng())
            return pil_rotate(
                "RandomRotation", args[0], angle, self.resample, self.expand, self.center,
                self.fill_value,
            )  # fmt: skip
        return super().__call__(*args)

    def apply_pil(self, image: Any, rng: np.random.Generator | None = None) -> Any:
        """A PIL image handed on inside a ``Compose`` (after ``Decode(to_pil=True)``): rotated
        by Pillow as :meth:`__call__` does, with the pipeline's draw."""
        if self.resample not in PIL_FILTERS:
            return self.apply(np.asarray(image), rng)
        angle = self.draw(rng)
        return pil_rotate(
            "RandomRotation", image, angle, self.resample, self.expand, self.center,
            self.fill_value,
        )  # fmt: skip

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomRotation", image)
        if self.resample is Inter.ANTIALIAS:
            raise TypeError(
                "RandomRotation: Inter.ANTIALIAS is Pillow's filter and takes a PIL image "
                f"only; use another resample for arrays. Received an array of shape {image.shape}"
            )
        return self._rotate(image, self.draw(rng))


def affine_matrix(
    height: int,
    width: int,
    degrees: float,
    translate: tuple[float, float],
    scale: float,
    shear: tuple[float, float],
) -> np.ndarray:
    """The forward 2x3 matrix: about the image centre, rotate ``degrees`` clockwise, shear
    (``shear`` = (x, y) angles in degrees), scale, then shift by ``translate`` pixels."""
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    rot, sx, sy = math.radians(degrees), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    linear = np.array([[a, b], [c, d]]) * scale
    shift = np.array([cx + translate[0], cy + translate[1]]) - linear @ np.array([cx, cy])
    return np.concatenate([linear, shift[:, None]], axis=1)


def _shear_pair(op: str, shear: Any) -> tuple[float, float]:
    if _number(shear):
        return float(shear), 0.0
    if isinstance(shear, (tuple, list)) and len(shear) == 2 and all(map(_number, shear)):
        return float(shear[0]), float(shear[1])
    raise ValueError(f"{op}: shear must be a number or (x, y). Received: shear={shear!r}")


class Affine(TensorOperation):
    """An affine warp about the image centre, the output the input's size.

    Args:
        degrees: rotation in [-180, 180] degrees, clockwise for a positive angle.
        translate: (x, y) shift as fractions in [-1, 1] of the width and height.
        scale: a positive scale factor.
        shear: x shear angle in degrees, or (x, y) angles, each in [-180, 180].
        resample: an :class:`Inter` mode: NEAREST (default), BILINEAR, BICUBIC or AREA.
        fill_value: the value of pixels from outside: an int, or (R, G, B) for channels 0-2.
    """

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self,
        degrees: float,
        translate: Any,
        scale: float,
        shear: Any,
        resample: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        if not _number(degrees) or not -180 <= degrees <= 180:
            raise ValueError(f"Affine: degrees must be in [-180, 180]. Received: {degrees!r}")
        self.degrees = float(degrees)
        if (
            not isinstance(translate, (tuple, list))
            or len(translate) != 2
            or not all(_number(t) and -1 <= t <= 1 for t in translate)
        ):
            raise ValueError(
                f"Affine: translate must be (x, y) in [-1, 1]. Received: translate={translate!r}"
            )
        self.translate = (float(translate[0]), float(translate[1]))
        if not _number(scale) or scale <= 0:
            raise ValueError(f"Affine: scale must be positive. Received: scale={scale!r}")
        self.scale = float(scale)
        self.shear = _shear_pair("Affine", shear)
        if not all(-180 <= s <= 180 for s in self.shear):
            raise ValueError(f"Affine: shear must be in [-180, 180]. Received: shear={shear!r}")
        self.resample = check_inter("Affine", "resample", resample, WARP_INTERS)
        self.fill_value = check_fill("Affine", fill_value)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("Affine", image)
        return _affine(
            image, self.degrees, self.translate, self.scale, self.shear, self.resample,
            self.fill_value,
        )  # fmt: skip


def _affine(image, degrees, translate, scale, shear, resample, fill) -> np.ndarray:
    h, w = image.shape[:2]
    shift = (translate[0] * w, translate[1] * h)
    matrix = affine_matrix(h, w, degrees, shift, scale, shear)
    return warp(image, matrix, (h, w), resample, fill)


class RandomAffine(TensorOperation):
    """An :class:`Affine` warp with parameters drawn uniformly from ranges.

    Args:
        degrees: rotation range (min, max), or a number ``d`` for (-d, d) (clockwise positive).
        translate: ``None``, (x_min, x_max) or (x_min, x_max, y_min, y_max): fractions in
            [-1, 1] of the width and height.
        scale: ``None`` (1) or a range (min, max) of non-negative factors.
        shear: ``None``, a number ``s`` for an x shear in (-s, s), (x_min, x_max), or
            (x_min, x_max, y_min, y_max), in degrees.
        resample: an :class:`Inter` mode: NEAREST (default), BILINEAR, BICUBIC or AREA.
        fill_value: the value of pixels from outside: an int, or (R, G, B) for channels 0-2.
    """

    randomized = True

    def __init__(
        self,
        degrees: Any,
        translate: Any = None,
        scale: Any = None,
        shear: Any = None,
        resample: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        op = "RandomAffine"
        self.degrees = _range(op, "degrees", degrees, symmetric_from=0.0)
        if translate is None:
            translate = (0.0, 0.0, 0.0, 0.0)
        if (
            not isinstance(translate, (tuple, list))
            or len(translate) not in (2, 4)
            or not all(_number(t) and -1 <= t <= 1 for t in translate)
            or translate[0] > translate[1]
            or (len(translate) == 4 and translate[2] > translate[3])
        ):
            raise ValueError(
                f"{op}: translate must be None or 2 or 4 values (min, max, ...) in [-1, 1]. "
                f"Received: translate={translate!r}"
            )
        t = [float(v) for v in translate]
        self.translate = tuple(t) if len(t) == 4 else (t[0], t[1], 0.0, 0.0)
        self.scale = (1.0, 1.0) if scale is None else _range(op, "scale", scale)
        if self.scale[0] < 0:
            raise ValueError(f"{op}: scale must be non-negative. Received: scale={scale!r}")
        if shear is None:
            self.shear = (0.0, 0.0, 0.0, 0.0)
        elif _number(shear):
            lo, hi = _range(op, "shear", shear, symmetric_from=0.0)
            self.shear = (lo, hi, 0.0, 0.0)
        elif isinstance(shear, (tuple, list)) and len(shear) == 4:
            self.shear = _range(op, "shear", shear[:2]) + _range(op, "shear", shear[2:])
        else:
            self.shear = (*_range(op, "shear", shear), 0.0, 0.0)
        self.resample = check_inter(op, "resample", resample, WARP_INTERS)
        self.fill_value = check_fill(op, fill_value)

    def draw(self, rng: np.random.Generator, height: int, width: int):
        """(degrees, (tx, ty) in pixels, scale, (shear x, shear y)) of one application."""
        degrees = float(rng.uniform(*self.degrees))
        tx = float(rng.uniform(self.translate[0], self.translate[1])) * width
        ty = float(rng.uniform(self.translate[2], self.translate[3])) * height
        scale = float(rng.uniform(*self.scale))
        shear = (float(rng.uniform(*self.shear[:2])), float(rng.uniform(*self.shear[2:])))
        return degrees, (tx, ty), scale, shear

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomAffine", image)
        h, w = image.shape[:2]
        degrees, shift, scale, shear = self.draw(rng, h, w)
        matrix = affine_matrix(h, w, degrees, shift, scale, shear)
        return warp(image, matrix, (h, w), self.resample, self.fill_value)

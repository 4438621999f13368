"""RgbToHsv and HsvToRgb: MindSpore 2.10's colour-space conversions of float images.

MindSpore converts pixel by pixel with Python's ``colorsys`` (every value read as a Python
number, i.e. in float64) and returns float64 HSV/RGB with hue, saturation and value in the
input's scale: on 0-1 RGB (``ToTensor``'s output, the intended input) hue and saturation are
in [0, 1]. The kernels below are the same formulas in float64 over whole arrays, so the
results equal MindSpore's exactly, including one quirk: MindSpore's ``np.vectorize`` takes each
output channel's dtype from its result for an image's first pixel (computed on NumPy scalars
of the image's dtype, under NumPy 1.x's rules), so a float32 image whose first pixel is not
grey gets its saturation rounded to float32 (RgbToHsv), one channel of HsvToRgb's output is
rounded to float32, and a first pixel of saturation 0 keeps the input's dtype throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.error_types import PipelineTypeError
from ..core.operation import TensorOperation


def _check_bool(op: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool. Received: {name}={value!r}")
    return value


def _channels_last(op: str, image: np.ndarray, is_hwc: bool) -> np.ndarray:
    """The (…, 3) float64 view of an HWC/NHWC or CHW/NCHW image of 3 channels.

    Raises:
        PipelineTypeError: not 3 or 4 dimensions, or not 3 channels (MindSpore 2.10: a
            TypeError eagerly, a RuntimeError in a pipeline).
    """
    if image.ndim not in (3, 4) or image.dtype.kind not in "biuf":
        raise PipelineTypeError(
            f"{op}: expected a numeric (N)HWC or (N)CHW image. Received shape {image.shape}, "
            f"dtype {image.dtype}"
        )
    axis = image.ndim - 1 if is_hwc else image.ndim - 3
    if image.shape[axis] != 3:
        raise PipelineTypeError(
            f"{op}: expected 3 channels on axis {axis} (is_hwc={is_hwc}). Received shape "
            f"{image.shape}"
        )
    return np.moveaxis(image.astype(np.float64), axis, -1)


#: per hue sector of HsvToRgb, the channel that holds ``v`` itself
_V_CHANNEL = (0, 1, 1, 2, 2, 0)


def _first_pixel_dtypes(op: str, first: np.ndarray) -> list[np.dtype]:
    """The dtypes of colorsys' three results for an image's first pixel under NumPy 1.x's
    scalar rules (MindSpore 2.10 needs NumPy < 2): a scalar of the image's dtype with a Python
    float gives float64, two of the image's dtype give their own (a division: its float)."""
    dtype = first.dtype
    wide = np.dtype(np.float64)
    if op == "RgbToHsv":
        if first.max() == first.min():  # grey: (0.0, 0.0, v)
            return [wide, wide, dtype]
        return [wide, np.true_divide(first[:1], first[:1]).dtype, dtype]
    h, s, _ = first
    if s == 0:  # (v, v, v)
        return [dtype] * 3
    kinds = [wide] * 3
    kinds[_V_CHANNEL[int(np.trunc(np.float64(h) * 6.0)) % 6]] = dtype
    return kinds


def _convert(op: str, image: np.ndarray, is_hwc: bool, kernel: Callable) -> np.ndarray:
    """``kernel`` over the image (each image of a batch), each channel cast to the dtype
    colorsys gives for the image's first pixel, as MindSpore's ``np.vectorize`` does."""
    values = _channels_last(op, image, is_hwc)
    axis = image.ndim - 1 if is_hwc else image.ndim - 3
    raw = np.moveaxis(image, axis, -1)
    images, raws = (values[None], raw[None]) if image.ndim == 3 else (values, raw)
    results = []
    for one, first in zip(images, raws):
        out = kernel(one)
        if out.size:
            kinds = _first_pixel_dtypes(op, first.reshape(-1, 3)[0])
            out = np.stack([out[..., k].astype(kinds[k]) for k in range(3)], axis=-1)
        results.append(out)
    out = np.stack(results) if image.ndim == 4 else results[0]
    return np.ascontiguousarray(np.moveaxis(out, -1, axis))


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """(…, 3) float64 RGB to HSV by ``colorsys.rgb_to_hsv``'s formulas (hue in turns)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    high, low = rgb.max(axis=-1), rgb.min(axis=-1)
    span = high - low
    grey = span == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(grey, 0.0, span / high)
        rc, gc, bc = ((high - c) / span for c in (r, g, b))
    h = np.where(r == high, bc - gc, np.where(g == high, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(grey, 0.0, np.mod(h / 6.0, 1.0))
    return np.stack([h, s, high], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """(…, 3) float64 HSV to RGB by ``colorsys.hsv_to_rgb``'s formulas."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    sector = np.trunc(h * 6.0)
    f = h * 6.0 - sector
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    sector = np.mod(sector, 6).astype(np.intp)
    # per sector, the (r, g, b) picks from (v, p, q, t)
    picks = np.array([[0, 3, 1], [2, 0, 1], [1, 0, 3], [1, 2, 0], [3, 1, 0], [0, 1, 2]])
    table = np.stack([v, p, q, t], axis=-1)
    rgb = np.take_along_axis(table, picks[sector], axis=-1)
    return np.where((s == 0.0)[..., None], v[..., None], rgb)


class RgbToHsv(TensorOperation):
    """RGB to HSV of an HWC/NHWC (``is_hwc=True``) or CHW/NCHW (default) image with 3
    channels, as float64 (see the module's note): hue and saturation in [0, 1] and value in
    the input's scale (give 0-1 float RGB, e.g. ``ToTensor``'s output, as MindSpore intends).

    Raises:
        TypeError: ``is_hwc`` is not a bool.
    """

    pil_out = False

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = _check_bool("RgbToHsv", "is_hwc", is_hwc)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        return _convert("RgbToHsv", image, self.is_hwc, rgb_to_hsv)


class HsvToRgb(TensorOperation):
    """HSV to RGB (the inverse of :class:`RgbToHsv`) of an HWC/NHWC (``is_hwc=True``) or
    CHW/NCHW (default) image with 3 channels, as float64.

    Raises:
        TypeError: ``is_hwc`` is not a bool.
    """

    pil_out = False

    def __init__(self, is_hwc: bool = False) -> None:
        self.is_hwc = _check_bool("HsvToRgb", "is_hwc", is_hwc)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        return _convert("HsvToRgb", image, self.is_hwc, hsv_to_rgb)

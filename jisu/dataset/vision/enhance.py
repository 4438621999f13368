"""Colour adjustments (``mindspore.dataset.vision``' names): Grayscale, ConvertColor, Adjust*
(brightness, contrast, saturation, hue, gamma, sharpness) and GaussianBlur. Kernels: OpenCV
lookup tables, colour conversions and filters, and NumPy vector ops (GIL released)."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from ..core.operation import TensorOperation
from .adjust import apply_lut, check_number, check_prob, is_number
from .hsv8 import adjust_hue_uint8
from .utils import ConvertMode, check_image

_LEVELS = np.arange(256, dtype=np.float64)
MAX_FACTOR = float(1 << 24)  # MindSpore's upper bound of factors


def _check_rgb(op: str, image: np.ndarray) -> np.ndarray:
    check_image(op, image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"{op}: expected an RGB HWC image (3 channels). Received {image.shape}")
    return image


def check_numeric(op: str, image: np.ndarray) -> np.ndarray:
    if image.dtype == np.bool_ or image.dtype.kind not in "uif":
        raise TypeError(f"{op}: expected a numeric image. Received dtype {image.dtype}")
    return image


def to_dtype(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results in ``dtype``: integers are rounded (half to even) and saturated."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def colour_cv_image(image: np.ndarray) -> np.ndarray:
    return image if image.flags.c_contiguous else np.ascontiguousarray(image)


def blend(image: np.ndarray, other: np.ndarray | float, factor: float) -> np.ndarray:
    """``other + (image - other) * factor`` in float32, then back to ``image.dtype``."""
    other = np.asarray(other, np.float32)
    out = image.astype(np.float32) - other
    out *= np.float32(factor)
    out += other
    return to_dtype(out, image.dtype)


# --------------------------------------------------------------------------------- Grayscale


def _pil_luma_uint8(image: np.ndarray) -> np.ndarray:
    """PIL's ``convert("L")``: (R*19595 + G*38470 + B*7471 + 2**15) >> 16, in integers."""
    rgb = image.astype(np.int32)
    luma = rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + (1 << 15)
    return (luma >> 16).astype(np.uint8)


def to_gray(image: np.ndarray) -> np.ndarray:
    """The ITU-R 601-2 luma of an RGB image as HW: PIL's integer rule for uint8, float32
    ``0.299 R + 0.587 G + 0.114 B`` otherwise."""
    if image.dtype == np.uint8:
        return _pil_luma_uint8(image)
    luma = image.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    return to_dtype(luma, image.dtype)


class Grayscale(TensorOperation):
    """An RGB HWC image to grayscale (PIL's luma): HW for ``num_output_channels=1``, HWC with
    the gray plane repeated for 3. uint8 results equal PIL's ``Image.convert("L")``."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3) or isinstance(num_output_channels, bool):
            raise ValueError(
                f"Grayscale: num_output_channels must be 1 or 3. "
                f"Received: num_output_channels={num_output_channels!r}"
            )
        self.num_output_channels = int(num_output_channels)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        gray = to_gray(check_numeric("Grayscale", _check_rgb("Grayscale", image)))
        if self.num_output_channels == 1:
            return gray
        return np.repeat(gray[..., None], 3, axis=2)


class RandomGrayscale(TensorOperation):
    """With probability ``prob``, an RGB image to grayscale with 3 equal channels (the
    output keeps the input's shape); 1-channel (HW, HW1) images pass unchanged."""

    randomized = True

    def __init__(self, prob: float = 0.1) -> None:
        self.prob = check_prob("RandomGrayscale", prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomGrayscale", image)
        if rng.random() >= self.prob or image.ndim == 2 or image.shape[2] == 1:
            return image
        gray = to_gray(check_numeric("RandomGrayscale", _check_rgb("RandomGrayscale", image)))
        return np.repeat(gray[..., None], 3, axis=2)


# ------------------------------------------------------------------------------ ConvertColor


# mode value -> (OpenCV code, input channels)
_CV_CONVERSIONS = {
    0: (cv2.COLOR_BGR2BGRA, 3),
    1: (cv2.COLOR_BGRA2BGR, 4),
    2: (cv2.COLOR_BGR2RGBA, 3),
    3: (cv2.COLOR_RGBA2BGR, 4),
    4: (cv2.COLOR_BGR2RGB, 3),
    5: (cv2.COLOR_BGRA2RGBA, 4),
    6: (cv2.COLOR_BGR2GRAY, 3),
    7: (cv2.COLOR_RGB2GRAY, 3),
    8: (cv2.COLOR_GRAY2BGR, 1),
    9: (cv2.COLOR_GRAY2BGRA, 1),
    10: (cv2.COLOR_BGRA2GRAY, 4),
    11: (cv2.COLOR_RGBA2GRAY, 4),
}
CV_COLOR_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))


class ConvertColor(TensorOperation):
    """Convert between RGB, BGR, RGBA, BGRA and gray (OpenCV's ``cvtColor``): uint8, uint16 or
    float32 HWC images (HW or HW1 for the GRAY2* modes); gray outputs are HW. Gray values
    are OpenCV's (uint8: fixed-point luma, which can differ from PIL's by one level)."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, convert_mode: ConvertMode) -> None:
        if not isinstance(convert_mode, ConvertMode):
            raise TypeError(
                f"ConvertColor: convert_mode must be a ConvertMode. "
                f"Received: convert_mode={convert_mode!r}"
            )
        self.convert_mode = convert_mode

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("ConvertColor", image)
        code, channels = _CV_CONVERSIONS[self.convert_mode.value]
        have = 1 if image.ndim == 2 else image.shape[2]
        if have != channels:
            raise ValueError(
                f"ConvertColor: {self.convert_mode.name} expects {channels}-channel images. "
                f"Received shape {image.shape}"
            )
        if image.dtype not in CV_COLOR_DTYPES:
            raise TypeError(
                f"ConvertColor: expected a uint8, uint16 or float32 image. "
                f"Received dtype {image.dtype}"
            )
        if image.size == 0:
            raise ValueError(f"ConvertColor: empty image. Received shape {image.shape}")
        return cv2.cvtColor(colour_cv_image(image), code)


# ---------------------------------------------------------------------------- brightness etc.


def check_factor(op: str, name: str, value: Any) -> float:
    return check_number(op, name, value, 0.0, MAX_FACTOR)


def adjust_brightness(image: np.ndarray, factor: float) -> np.ndarray:
    if image.dtype == np.uint8:
        return apply_lut(image, np.clip(np.rint(_LEVELS * factor), 0, 255))
    return to_dtype(image.astype(np.float32) * np.float32(factor), image.dtype)


class AdjustBrightness(TensorOperation):
    """Multiply every value by ``brightness_factor`` (>= 0; 0 gives black, 1 the original).
    uint8 results are rounded and saturated; float images are not clipped. HW or HWC."""

    def __init__(self, brightness_factor: float) -> None:
        self.brightness_factor = check_factor(
            "AdjustBrightness", "brightness_factor", brightness_factor
        )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("AdjustBrightness", image)
        check_numeric("AdjustBrightness", image)
        return adjust_brightness(image, self.brightness_factor)


def _cv_gray(image: np.ndarray) -> np.ndarray:
    """OpenCV's RGB -> gray (uint8: rounded fixed point), float32 for other dtypes."""
    if image.dtype in CV_COLOR_DTYPES:
        return cv2.cvtColor(colour_cv_image(image), cv2.COLOR_RGB2GRAY)
    return cv2.cvtColor(image.astype(np.float32), cv2.COLOR_RGB2GRAY)


def adjust_contrast(image: np.ndarray, factor: float) -> np.ndarray:
    mean = float(_cv_gray(image).mean())
    if image.dtype == np.uint8:  # the mean gray level rounded, as MindSpore
        mean = np.float32(np.rint(mean))
        table = (_LEVELS.astype(np.float32) - mean) * np.float32(factor) + mean
        return apply_lut(image, np.clip(np.rint(table), 0, 255))
    return blend(image, mean, factor)


class AdjustContrast(TensorOperation):
    """Blend an RGB HWC image with its mean gray level: ``mean + (x - mean) * factor``
    (``contrast_factor`` >= 0; 0 gives a flat gray image, 1 the original)."""

    def __init__(self, contrast_factor: float) -> None:
        self.contrast_factor = check_factor("AdjustContrast", "contrast_factor", contrast_factor)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_numeric("AdjustContrast", _check_rgb("AdjustContrast", image))
        return adjust_contrast(image, self.contrast_factor)


def adjust_saturation(image: np.ndarray, factor: float) -> np.ndarray:
    return blend(image, _cv_gray(image)[..., None], factor)


class AdjustSaturation(TensorOperation):
    """Blend an RGB HWC image with its grayscale version: ``gray + (x - gray) * factor``
    (``saturation_factor`` >= 0; 0 gives gray, 1 the original)."""

    def __init__(self, saturation_factor: float) -> None:
        self.saturation_factor = check_factor(
            "AdjustSaturation", "saturation_factor", saturation_factor
        )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_numeric("AdjustSaturation", _check_rgb("AdjustSaturation", image))
        return adjust_saturation(image, self.saturation_factor)


def check_degrees(op: str, degrees: Any) -> tuple[float, float]:
    """A random enhance op's factor range ``(min, max)``, 0 <= min <= max."""
    if not isinstance(degrees, (list, tuple)) or len(degrees) != 2:
        raise TypeError(f"{op}: degrees must be (min, max). Received: degrees={degrees!r}")
    low = check_factor(op, "degrees[0]", degrees[0])
    high = check_factor(op, "degrees[1]", degrees[1])
    if low > high:
        raise ValueError(
            f"{op}: degrees must be (min, max) with min <= max. Received: degrees={degrees!r}"
        )
    return low, high


class RandomColor(TensorOperation):
    """:class:`AdjustSaturation` with a factor drawn uniformly from ``degrees = (min, max)``
    (MindSpore's RandomColor, Pillow's ``ImageEnhance.Color``; RGB HWC images)."""

    randomized = True

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = check_degrees("RandomColor", degrees)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_numeric("RandomColor", _check_rgb("RandomColor", image))
        return adjust_saturation(image, float(rng.uniform(*self.degrees)))


def adjust_hue(image: np.ndarray, factor: float) -> np.ndarray:
    """MindSpore 2.10's result for uint8 (through 8-bit HSV: :mod:`.hsv8`); other dtypes
    rotate hues exactly in float32 HSV (MindSpore's float32 result reads the float HSV image's
    bytes as 8-bit values: no hue rotation to match)."""
    if image.dtype == np.uint8:
        return adjust_hue_uint8(image, factor)
    hsv = cv2.cvtColor(image.astype(np.float32), cv2.COLOR_RGB2HSV)
    hsv[..., 0] = np.mod(hsv[..., 0] + np.float32(factor * 360.0), np.float32(360.0))
    return to_dtype(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB), image.dtype)


class AdjustHue(TensorOperation):
    """Rotate the hue of an RGB HWC image by ``hue_factor`` turns (in [-0.5, 0.5]) in HSV
    space. uint8 images give MindSpore 2.10's very output (its 8-bit HSV round trip, which
    moves pixels by a level or so even for ``hue_factor=0``); float images are rotated exactly
    and keep their scale (the rotation does not depend on it)."""

    def __init__(self, hue_factor: float) -> None:
        self.hue_factor = check_number("AdjustHue", "hue_factor", hue_factor, -0.5, 0.5)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_numeric("AdjustHue", _check_rgb("AdjustHue", image))
        return adjust_hue(image, self.hue_factor)


# --------------------------------------------------------------------------------- AdjustGamma


class AdjustGamma(TensorOperation):
    """Gamma correction ``out = 255 * gain * (x / 255) ** gamma`` for uint8 (rounded,
    saturated) and other integer images; float images are taken as 0-1 values:
    ``gain * x ** gamma``, clipped to [0, 1]. HW, HWC or batched NHWC images.

    Args:
        gamma: the exponent (>= 0): below 1 brightens the shadows, above 1 darkens them.
        gain: a constant factor.
    """

    def __init__(self, gamma: float, gain: float = 1) -> None:
        self.gamma = check_number("AdjustGamma", "gamma", gamma, 0.0, MAX_FACTOR)
        if not is_number(gain):
            raise TypeError(f"AdjustGamma: gain must be a number. Received: gain={gain!r}")
        self.gain = float(gain)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim not in (2, 3, 4):
            raise ValueError(
                f"AdjustGamma: expected an HW, HWC or NHWC image. Received shape {image.shape}"
            )
        check_numeric("AdjustGamma", image)
        if image.dtype == np.uint8:
            table = np.clip(np.rint(255 * self.gain * (_LEVELS / 255) ** self.gamma), 0, 255)
            if image.ndim == 4:
                return apply_lut(image.reshape(-1, *image.shape[2:]), table).reshape(image.shape)
            return apply_lut(image, table)
        if image.dtype.kind == "f":
            x = image.astype(np.float32, copy=False)
            out = np.clip(np.float32(self.gain) * np.power(x, np.float32(self.gamma)), 0, 1)
            return out.astype(image.dtype, copy=False)
        top = float(np.iinfo(image.dtype).max)
        out = 255 * self.gain * (image.astype(np.float64) / 255) ** self.gamma
        return np.clip(np.rint(out), 0, top).astype(image.dtype)


# ------------------------------------------------------------------------------- sharpness

"""Filters: sharpness (PIL's smoothing kernel, as MindSpore) and Gaussian blur."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from ..core.operation import TensorOperation
from .adjust import check_number, is_number
from .enhance import (
    CV_COLOR_DTYPES,
    MAX_FACTOR,
    blend,
    check_degrees,
    check_factor,
    check_numeric,
    colour_cv_image,
    to_dtype,
)
from .utils import check_image

_SMOOTH = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / np.float32(13)


def adjust_sharpness(image: np.ndarray, factor: float) -> np.ndarray:
    """Blend with a smoothed copy (PIL's SMOOTH kernel; border pixels kept): factor 0 gives
    the smoothed image, 1 the original, above 1 a sharper one."""
    if factor == 1.0 or image.shape[0] < 3 or image.shape[1] < 3:
        return image
    src = image if image.dtype in CV_COLOR_DTYPES else image.astype(np.float32)
    smooth = cv2.filter2D(colour_cv_image(src), -1, _SMOOTH, borderType=cv2.BORDER_REPLICATE)
    smooth = smooth.reshape(image.shape)
    inner = (slice(1, -1), slice(1, -1))
    degenerate = image.copy()
    degenerate[inner] = (
        smooth[inner] if smooth.dtype == image.dtype else smooth[inner].astype(image.dtype)
    )
    return blend(image, degenerate, factor)


class AdjustSharpness(TensorOperation):
    """Sharpen (``sharpness_factor`` > 1) or blur (< 1) an HW/HWC image by blending it with a
    smoothed copy: 0 gives the smoothed image, 1 the original. The 1-pixel border is kept."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, sharpness_factor: float) -> None:
        self.sharpness_factor = check_factor(
            "AdjustSharpness", "sharpness_factor", sharpness_factor
        )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("AdjustSharpness", image)
        check_numeric("AdjustSharpness", image)
        return adjust_sharpness(image, self.sharpness_factor)


class RandomSharpness(TensorOperation):
    """:class:`AdjustSharpness` with a factor drawn uniformly from ``degrees = (min, max)``
    (0 <= min <= max)."""

    randomized = True

    def __init__(self, degrees: tuple[float, float] = (0.1, 1.9)) -> None:
        self.degrees = check_degrees("RandomSharpness", degrees)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomSharpness", image)
        check_numeric("RandomSharpness", image)
        return adjust_sharpness(image, float(rng.uniform(*self.degrees)))


# -------------------------------------------------------------------------------- GaussianBlur


def _odd_pair(kernel_size: Any) -> tuple[int, int]:
    values = kernel_size if isinstance(kernel_size, (list, tuple)) else (kernel_size,)
    if len(values) == 1 and not isinstance(kernel_size, (list, tuple)):
        values = (kernel_size, kernel_size)
    if len(values) != 2 or not all(
        isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) for k in values
    ):
        raise TypeError(
            f"GaussianBlur: kernel_size must be an int or (width, height). "
            f"Received: kernel_size={kernel_size!r}"
        )
    if not all(k >= 1 and k % 2 == 1 for k in values):
        raise ValueError(
            f"GaussianBlur: kernel_size must be positive and odd. "
            f"Received: kernel_size={kernel_size!r}"
        )
    return int(values[0]), int(values[1])


class GaussianBlur(TensorOperation):
    """Gaussian blur of an HW/HWC image (OpenCV's ``GaussianBlur``, reflected borders).

    Args:
        kernel_size: odd int or (width, height).
        sigma: standard deviation, or (sigma_x, sigma_y); None or 0 derives it from the
            kernel size: ``0.3 * ((k - 1) * 0.5 - 1) + 0.8``.
    """

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, kernel_size: int | tuple[int, int], sigma: Any = None) -> None:
        self.kernel_size = _odd_pair(kernel_size)
        if sigma is None:
            self.sigma = (0.0, 0.0)
        elif is_number(sigma):
            s = check_number("GaussianBlur", "sigma", sigma, 0.0, MAX_FACTOR)
            self.sigma = (s, s)
        elif isinstance(sigma, (list, tuple)) and len(sigma) == 2:
            self.sigma = tuple(
                check_number("GaussianBlur", "sigma", s, 0.0, MAX_FACTOR) for s in sigma
            )
        else:
            raise TypeError(
                f"GaussianBlur: sigma must be a number or (sigma_x, sigma_y). "
                f"Received: sigma={sigma!r}"
            )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("GaussianBlur", image)
        check_numeric("GaussianBlur", image)
        src = image if image.dtype in CV_COLOR_DTYPES else image.astype(np.float32)
        # sigma 0: derived from the kernel size (OpenCV would use fixed tables for k <= 7)
        sx, sy = (
            s if s > 0 else 0.3 * ((k - 1) * 0.5 - 1) + 0.8
            for s, k in zip(self.sigma, self.kernel_size)
        )
        out = cv2.GaussianBlur(colour_cv_image(src), self.kernel_size, sigmaX=sx, sigmaY=sy)
        out = out.reshape(image.shape)
        return out if out.dtype == image.dtype else to_dtype(out, image.dtype)


class RandomAdjustSharpness(TensorOperation):
    """:class:`AdjustSharpness` by ``degree`` (0 blurs, 1 keeps, 2 doubles the sharpness),
    applied with probability ``prob`` to an HW/HWC image.

    Raises:
        TypeError: ``degree`` or ``prob`` is not a number.
        ValueError: ``degree`` outside [0, 16777216] or ``prob`` outside [0, 1].
    """

    randomized = True
    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, degree: float, prob: float = 0.5) -> None:
        self.degree = check_number("RandomAdjustSharpness", "degree", degree, 0.0, MAX_FACTOR)
        self.prob = check_number("RandomAdjustSharpness", "prob", prob, 0.0, 1.0)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomAdjustSharpness", image)
        check_numeric("RandomAdjustSharpness", image)
        if rng.random() >= self.prob:
            return image
        return adjust_sharpness(image, self.degree)

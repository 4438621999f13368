"""RandomColorAdjust: brightness, contrast, saturation and hue jitter (torchvision's rules)."""

from __future__ import annotations

import cv2
import numpy as np

from ..core.operation import TensorOperation
from .geometry import per_image
from .utils import check_image

# ITU-R 601-2 luma, as PIL and torchvision compute grayscale
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _factor_range(name: str, value, center: float, bound: tuple[float, float] | None):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"RandomColorAdjust: {name} must be >= 0. Received: {value}")
        low, high = center - value, center + value
        if bound is not None:
            low = max(low, bound[0])
    elif isinstance(value, (tuple, list)) and len(value) == 2 and value[0] <= value[1]:
        low, high = float(value[0]), float(value[1])
    else:
        raise ValueError(
            f"RandomColorAdjust: {name} must be a number or (min, max). Received: {value!r}"
        )
    if bound is not None and (low < bound[0] or high > bound[1]):
        raise ValueError(
            f"RandomColorAdjust: {name} range must lie in {list(bound)}. Received: {value!r}"
        )
    return (low, high) if (low, high) != (center, center) else None


def gray(image: np.ndarray) -> np.ndarray:
    return image @ _LUMA


def adjust_brightness(image: np.ndarray, factor: float) -> np.ndarray:
    return image * np.float32(factor)


def adjust_contrast(image: np.ndarray, factor: float) -> np.ndarray:
    mean = np.float32(gray(image).mean())
    return mean + (image - mean) * np.float32(factor)


def adjust_saturation(image: np.ndarray, factor: float) -> np.ndarray:
    g = gray(image)[..., None]
    return g + (image - g) * np.float32(factor)


def adjust_hue(image: np.ndarray, shift: float) -> np.ndarray:
    """Rotate the hue by ``shift`` turns (in [-0.5, 0.5]) in HSV space."""
    hsv = cv2.cvtColor(np.clip(image, 0, 255) / np.float32(255), cv2.COLOR_RGB2HSV)
    hsv[..., 0] = (hsv[..., 0] + shift * 360.0) % 360.0
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB) * np.float32(255)


class RandomColorAdjust(TensorOperation):
    """Jitter brightness, contrast, saturation and hue of an RGB HWC image, in a random order.

    Each argument is a number ``v`` (factor drawn from ``[max(0, 1 - v), 1 + v]``; for hue a
    shift from ``[-v, v]`` turns, ``v <= 0.5``) or an explicit ``(min, max)``. The output has
    the input's dtype (uint8 results are rounded and clipped to [0, 255]).
    """

    randomized = True

    def __init__(self, brightness=(1, 1), contrast=(1, 1), saturation=(1, 1), hue=(0, 0)):
        self.brightness = _factor_range("brightness", brightness, 1.0, (0.0, float("inf")))
        self.contrast = _factor_range("contrast", contrast, 1.0, (0.0, float("inf")))
        self.saturation = _factor_range("saturation", saturation, 1.0, (0.0, float("inf")))
        self.hue = _factor_range("hue", hue, 0.0, (-0.5, 0.5))

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("RandomColorAdjust", image, lambda im: self.apply(im, rng=rng))
        check_image("RandomColorAdjust", image)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(
                f"RandomColorAdjust: expected an RGB HWC image. Received shape {image.shape}"
            )
        steps = [
            (adjust_brightness, self.brightness),
            (adjust_contrast, self.contrast),
            (adjust_saturation, self.saturation),
            (adjust_hue, self.hue),
        ]
        out = image.astype(np.float32)
        for k in rng.permutation(4):
            fn, bounds = steps[k]
            if bounds is not None:
                out = fn(out, rng.uniform(bounds[0], bounds[1]))
        if image.dtype == np.uint8:
            return np.clip(np.rint(out), 0, 255).astype(np.uint8)
        return out.astype(image.dtype, copy=False)

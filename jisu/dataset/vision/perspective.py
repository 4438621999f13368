"""MindSpore 2.x Perspective and RandomPerspective (OpenCV's warpPerspective, which releases the
GIL). Pixel centres sit at integer coordinates; pixels from outside the image are 0."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from ..core.operation import TensorOperation
from .affine import _number, warp
from .transform_geometry import check_inter
from .utils import Inter, check_image


def _points(op: str, name: str, points: Any) -> np.ndarray:
    if (
        not isinstance(points, (tuple, list))
        or len(points) != 4
        or not all(
            isinstance(p, (tuple, list)) and len(p) == 2 and all(map(_number, p)) for p in points
        )
    ):
        raise ValueError(
            f"{op}: {name} must be 4 (x, y) points (top-left, top-right, bottom-right, "
            f"bottom-left). Received: {name}={points!r}"
        )
    return np.array(points, dtype=np.float32)


#: Perspective's modes (PILCUBIC warps as CUBIC, as in MindSpore)
PERSPECTIVE_INTERS = (Inter.NEAREST, Inter.LINEAR, Inter.CUBIC, Inter.AREA, Inter.PILCUBIC)


def perspective(image: np.ndarray, start: np.ndarray, end: np.ndarray, inter: Inter) -> np.ndarray:
    matrix = cv2.getPerspectiveTransform(start, end)
    return warp(image, matrix, image.shape[:2], inter, 0, perspective=True)


class Perspective(TensorOperation):
    """Warp so that the quadrilateral ``start_points`` lands on ``end_points`` (each 4 (x, y)
    points: top-left, top-right, bottom-right, bottom-left); outside pixels are 0."""

    def __init__(
        self, start_points: Any, end_points: Any, interpolation: Inter = Inter.BILINEAR
    ) -> None:
        self.start_points = _points("Perspective", "start_points", start_points)
        self.end_points = _points("Perspective", "end_points", end_points)
        self.interpolation = check_inter(
            "Perspective", "interpolation", interpolation, PERSPECTIVE_INTERS
        )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("Perspective", image)
        return perspective(image, self.start_points, self.end_points, self.interpolation)


class RandomPerspective(TensorOperation):
    """With probability ``prob``, move each corner inwards by up to ``distortion_scale`` of
    half the width/height (uniform integers) and warp the image accordingly (outside: 0).

    Args:
        distortion_scale: in [0, 1] (default 0.5).
        prob: probability of warping (default 0.5).
        interpolation: an :class:`Inter` mode (default BICUBIC).
    """

    randomized = True

    def __init__(
        self, distortion_scale: float = 0.5, prob: float = 0.5, interpolation: Inter = Inter.BICUBIC
    ) -> None:
        op = "RandomPerspective"
        if not _number(distortion_scale) or not 0 <= distortion_scale <= 1:
            raise ValueError(
                f"{op}: distortion_scale must be in [0, 1]. Received: {distortion_scale!r}"
            )
        if not _number(prob) or not 0 <= prob <= 1:
            raise ValueError(f"{op}: prob must be in [0, 1]. Received: {prob!r}")
        self.distortion_scale, self.prob = float(distortion_scale), float(prob)
        self.interpolation = check_inter(op, "interpolation", interpolation, PERSPECTIVE_INTERS)

    def draw(
        self, rng: np.random.Generator, height: int, width: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(start points, end points) of one application, or ``None`` when it does not warp."""
        if not rng.random() < self.prob:
            return None
        dw = int(self.distortion_scale * (width // 2))
        dh = int(self.distortion_scale * (height // 2))
        right, bottom = width - 1, height - 1
        lo_x, hi_x = rng.integers(0, dw + 1, 2), right - rng.integers(0, dw + 1, 2)
        lo_y, hi_y = rng.integers(0, dh + 1, 2), bottom - rng.integers(0, dh + 1, 2)
        end = np.array(
            [[lo_x[0], lo_y[0]], [hi_x[0], lo_y[1]], [hi_x[1], hi_y[0]], [lo_x[1], hi_y[1]]],
            dtype=np.float32,
        )
        start = np.array([[0, 0], [right, 0], [right, bottom], [0, bottom]], dtype=np.float32)
        return start, end

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomPerspective", image)
        points = self.draw(rng, image.shape[0], image.shape[1])
        if points is None:
            return image
        return perspective(image, *points, self.interpolation)

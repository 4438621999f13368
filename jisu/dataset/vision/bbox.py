"""Bounding-box ops, part 1: flips and resizes that move an image's boxes with its pixels
(``mindspore.dataset.vision``' ``RandomHorizontalFlipWithBBox``, ``RandomVerticalFlipWithBBox``,
``ResizeWithBBox``, ``RandomResizeWithBBox``), and the box arithmetic the crop ops share.

Each op takes two columns, ``(image, bbox)``: an HW/HWC image and an (N, 4+) float32 array of
boxes ``[x, y, width, height, ...]`` in pixels (columns past the fourth, a label say, ride
along unchanged). As in MindSpore 2.10, the boxes are checked when the op runs (jisu cannot see
a column's values earlier): a 2-D float32 array with at least one box of at least 4 columns,
no corner left of or above the image, none past its right or bottom edge (1e-4 of slack for
float rounding); a failure is a RuntimeError, as MindSpore's is. Box arithmetic is float32,
as MindSpore's, so results equal its bit for bit. The box array given is never written to
(MindSpore's eager call writes its result into the caller's array; jisu returns a new one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.error_types import PipelineTypeError, PipelineValueError
from ..core.operation import TensorOperation
from .adjust import check_prob
from .geometry import Resize, _flip
from .transform_geometry import RANDOM_RESIZE_INTERS
from .utils import Inter, check_image, check_pixels

#: MindSpore's slack for a box edge past the image's (float rounding: 100.000008 > 100)
EDGE_SLACK = np.float32(1e-4)


def check_boxes(op: str, image: np.ndarray, bbox: np.ndarray) -> np.ndarray:
    """A float32 copy of ``bbox`` after MindSpore 2.10's checks against ``image``.

    Raises:
        PipelineValueError: the image is not HW/HWC; ``bbox`` is not 2-D, has no box or
            fewer than 4 columns, or a box lies partly outside the image (MindSpore: a
            RuntimeError).
        PipelineTypeError: ``bbox`` is not float32 (MindSpore: a RuntimeError).
    """
    check_pixels(op, image)
    check_image(op, image)
    if bbox.ndim != 2:
        raise PipelineValueError(
            f"{op}: bbox must be a 2-D (N, 4+) array of [x, y, width, height, ...] rows. "
            f"Received shape {bbox.shape}"
        )
    if bbox.dtype != np.float32:
        raise PipelineTypeError(f"{op}: bbox must be float32. Received dtype {bbox.dtype}")
    if bbox.shape[1] < 4:
        raise PipelineValueError(
            f"{op}: bbox rows need at least 4 values (x, y, width, height). "
            f"Received shape {bbox.shape}"
        )
    if bbox.shape[0] == 0:
        raise PipelineValueError(f"{op}: bbox holds no box. Received shape {bbox.shape}")
    height, width = image.shape[:2]
    x, y, w, h = (bbox[:, i] for i in range(4))
    past = ((x + w) - np.float32(width) > EDGE_SLACK) | ((y + h) - np.float32(height) > EDGE_SLACK)
    if past.any():
        i = int(np.argmax(past))
        raise PipelineValueError(
            f"{op}: box {i} {bbox[i, :4].tolist()} reaches past the {width}x{height} image "
            f"(x + width = {x[i] + w[i]}, y + height = {y[i] + h[i]})"
        )
    negative = (x < -EDGE_SLACK) | (y < -EDGE_SLACK)
    if negative.any():
        i = int(np.argmax(negative))
        raise PipelineValueError(
            f"{op}: box {i} {bbox[i, :4].tolist()} has a negative corner (x={x[i]}, y={y[i]})"
        )
    return bbox.copy()


def scale_boxes(bbox: np.ndarray, height: int, width: int, new_h: int, new_w: int) -> np.ndarray:
    """Boxes of a ``height`` x ``width`` image on the image resized to ``new_h`` x ``new_w``:
    x and width times ``new_w / width``, y and height times ``new_h / height`` (the ratios
    in float32, as MindSpore's). Changes ``bbox`` in place and returns it."""
    fx = np.float32(new_w) / np.float32(width)
    fy = np.float32(new_h) / np.float32(height)
    bbox[:, 0] *= fx
    bbox[:, 2] *= fx
    bbox[:, 1] *= fy
    bbox[:, 3] *= fy
    return bbox


def crop_boxes(bbox: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    """The boxes on the crop ``[top, top + height) x [left, left + width)``: each clipped to
    the crop and shifted to its origin; a box that does not touch the crop is dropped (one
    that only touches its edge is kept, with width or height 0), as MindSpore 2.10 does. Extra
    columns are kept. May return an (0, C) array."""
    x0, y0 = bbox[:, 0], bbox[:, 1]
    x1, y1 = x0 + bbox[:, 2], y0 + bbox[:, 3]
    right, bottom = np.float32(left + width), np.float32(top + height)
    keep = ~((x0 > right) | (y0 > bottom) | (x1 < np.float32(left)) | (y1 < np.float32(top)))
    out = bbox[keep].copy()
    x0, y0, x1, y1 = x0[keep], y0[keep], x1[keep], y1[keep]
    nx0 = np.maximum(np.maximum(x0, np.float32(left)) - np.float32(left), np.float32(0))
    ny0 = np.maximum(np.maximum(y0, np.float32(top)) - np.float32(top), np.float32(0))
    nx1 = np.minimum(np.minimum(x1, right) - np.float32(left), np.float32(width))
    ny1 = np.minimum(np.minimum(y1, bottom) - np.float32(top), np.float32(height))
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = nx0, ny0, nx1 - nx0, ny1 - ny0
    return out


class _RandomFlipWithBBox(TensorOperation):
    """A flip of the image and its boxes with probability ``prob``."""

    randomized = True
    _axis = 1  # 1: left-right, 0: top-bottom

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob(type(self).__name__, prob)

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        boxes = check_boxes(type(self).__name__, image, bbox)
        if not rng.random() < self.prob:
            return image, boxes
        if self._axis == 1:  # x' = W - x - w
            boxes[:, 0] = np.float32(image.shape[1]) - boxes[:, 0] - boxes[:, 2]
        else:  # y' = H - y - h
            boxes[:, 1] = np.float32(image.shape[0]) - boxes[:, 1] - boxes[:, 3]
        return _flip(image, self._axis), boxes


class RandomHorizontalFlipWithBBox(_RandomFlipWithBBox):
    """Mirror the image left-right with probability ``prob``, and its boxes with it
    (``x`` becomes ``image width - x - width``).

    Args:
        prob: probability of flipping, in [0, 1] (default 0.5).

    Takes ``(image, bbox)``: see :mod:`jisu.dataset.vision.bbox` for the box format and the
    run-time checks.
    """

    _axis = 1


class RandomVerticalFlipWithBBox(_RandomFlipWithBBox):
    """Mirror the image top-bottom with probability ``prob``, and its boxes with it
    (``y`` becomes ``image height - y - height``).

    Args:
        prob: probability of flipping, in [0, 1] (default 0.5).

    Takes ``(image, bbox)``: see :mod:`jisu.dataset.vision.bbox`.
    """

    _axis = 0


def _check_size(op: str, size: Any) -> int | tuple[int, int]:
    """An int (the shorter side) or (height, width); MindSpore's TypeError/ValueError."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        if size <= 0:
            raise ValueError(f"{op}: size must be positive. Received: size={size}")
        return int(size)
    if not (
        isinstance(size, (tuple, list))
        and len(size) == 2
        and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in size)
    ):
        raise TypeError(
            f"{op}: size must be an int or a (height, width) pair of ints. Received: size={size!r}"
        )
    if min(size) <= 0:
        raise ValueError(f"{op}: size must be positive. Received: size={size!r}")
    return int(size[0]), int(size[1])


def resize_with_boxes(
    op: str, image: np.ndarray, bbox: np.ndarray, size: Any, interpolation: Inter
) -> tuple[np.ndarray, np.ndarray]:
    """``image`` resized as :class:`Resize` does and its (checked) boxes scaled with it."""
    boxes = check_boxes(op, image, bbox)
    resize = Resize(size, interpolation)
    height, width = image.shape[:2]
    new_h, new_w = resize.output_size(height, width)
    return resize.apply(image), scale_boxes(boxes, height, width, new_h, new_w)


class ResizeWithBBox(TensorOperation):
    """Resize the image as :class:`~jisu.dataset.vision.Resize` does and scale its boxes.

    Args:
        size: (height, width), or an int for the shorter side (keeping the aspect ratio).
        interpolation: an :class:`Inter` mode (default LINEAR, i.e. BILINEAR).

    Takes ``(image, bbox)`` (see :mod:`jisu.dataset.vision.bbox`); x and width are scaled by
    ``new width / width``, y and height by ``new height / height``. Unlike MindSpore 2.10,
    which reads a batch's first two axes as the image's height and width, an image batch is
    refused.
    """

    def __init__(self, size: int | tuple[int, int], interpolation: Inter = Inter.LINEAR) -> None:
        self.size = _check_size("ResizeWithBBox", size)
        if not isinstance(interpolation, Inter):
            raise TypeError(
                f"ResizeWithBBox: interpolation must be an Inter. Received: {interpolation!r}"
            )
        self.interpolation = interpolation

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return resize_with_boxes("ResizeWithBBox", image, bbox, self.size, self.interpolation)


class RandomResizeWithBBox(TensorOperation):
    """:class:`ResizeWithBBox` with an interpolation drawn uniformly from LINEAR, NEAREST,
    CUBIC and AREA (:class:`~jisu.dataset.vision.RandomResize`'s draw).

    Args:
        size: (height, width), or an int for the shorter side.
    """

    randomized = True

    def __init__(self, size: int | tuple[int, int]) -> None:
        self.size = _check_size("RandomResizeWithBBox", size)

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        inter = RANDOM_RESIZE_INTERS[int(rng.integers(0, len(RANDOM_RESIZE_INTERS)))]
        return resize_with_boxes("RandomResizeWithBBox", image, bbox, self.size, inter)

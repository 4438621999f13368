"""Bounding-box ops, part 2: random crops that keep an image's boxes on it, and
BoundingBoxAugment (``mindspore.dataset.vision``' ``RandomCropWithBBox``,
``RandomResizedCropWithBBox``, ``BoundingBoxAugment``).

The crops draw the region as :class:`~jisu.dataset.vision.RandomCrop` and
:class:`~jisu.dataset.vision.RandomResizedCrop` do (the same draws from the op's generator),
then treat the boxes as MindSpore 2.10 does: a box that does not touch the crop is dropped
(so the result may hold no box), the others are clipped to the crop and shifted to its
origin (a box that only touches the crop's edge is kept with width or height 0); extra
columns are kept. The (image, bbox) input and its run-time checks are described in
:mod:`jisu.dataset.vision.bbox`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation, apply_op
from .adjust import check_number, is_number
from .bbox import check_boxes, crop_boxes, scale_boxes
from .geometry import Resize
from .random_crop_resize import _CropParams, sample_crop
from .transform_geometry import channel_fill
from .utils import Border, Inter, pad_image, padding_4, size_pair


def _check_fill(op: str, fill_value: Any) -> int | tuple[int, int, int]:
    """An int in [0, 255] or three of them; MindSpore's TypeError for another type or length,
    ValueError for a value out of range."""
    values = fill_value if isinstance(fill_value, tuple) else (fill_value,)
    if len(values) not in (1, 3) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values
    ):
        raise TypeError(
            f"{op}: fill_value must be an int or a tuple of 3 ints. Received: "
            f"fill_value={fill_value!r}"
        )
    if not all(0 <= v <= 255 for v in values):
        raise ValueError(f"{op}: fill_value must be in [0, 255]. Received: {fill_value!r}")
    return int(values[0]) if len(values) == 1 else tuple(int(v) for v in values)  # type: ignore[return-value]


class RandomCropWithBBox(TensorOperation):
    """A ``size`` region at a uniformly random position, after optional padding, with the
    boxes that touch it (clipped and shifted into it; the others dropped).

    Args:
        size: (height, width) or an int.
        padding: padding applied first (int, 2 or 4 values: left, top, right, bottom); the
            boxes move with the image.
        pad_if_needed: pad an image smaller than ``size`` up to it.
        fill_value: value for CONSTANT padding (an int in [0, 255] or 3 of them).
        padding_mode: a :class:`Border` mode.

    Takes ``(image, bbox)``; see :mod:`jisu.dataset.vision.bbox_crop`.
    """

    randomized = True

    def __init__(
        self,
        size: int | tuple[int, int],
        padding: Any = None,
        pad_if_needed: bool = False,
        fill_value: Any = 0,
        padding_mode: Border = Border.CONSTANT,
    ) -> None:
        op = "RandomCropWithBBox"
        self.size = size_pair(op, size)
        if padding is not None and not (
            isinstance(padding, (int, np.integer, tuple, list)) and not isinstance(padding, bool)
        ):
            raise TypeError(
                f"{op}: padding must be an int or a sequence of 2 or 4 ints. "
                f"Received: padding={padding!r}"
            )
        self.padding = None if padding is None else padding_4(op, padding)
        if not isinstance(pad_if_needed, bool):
            raise TypeError(f"{op}: pad_if_needed must be a bool. Received: {pad_if_needed!r}")
        self.pad_if_needed = pad_if_needed
        self.fill_value = _check_fill(op, fill_value)
        if not isinstance(padding_mode, Border):
            raise TypeError(f"{op}: padding_mode must be a Border. Received: {padding_mode!r}")
        self.padding_mode = padding_mode

    def _pad(self, image: np.ndarray, boxes: np.ndarray, pads: tuple) -> np.ndarray:
        left, top, right, bottom = pads
        boxes[:, 0] += np.float32(left)
        boxes[:, 1] += np.float32(top)
        fill = channel_fill(self.fill_value, image)
        return pad_image(image, left, top, right, bottom, self.padding_mode, fill)

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        boxes = check_boxes("RandomCropWithBBox", image, bbox)
        if self.padding is not None:
            image = self._pad(image, boxes, self.padding)
        th, tw = self.size
        h, w = image.shape[:2]
        if self.pad_if_needed and (h < th or w < tw):
            ph, pw = max(0, th - h), max(0, tw - w)
            image = self._pad(image, boxes, (pw, ph, pw, ph))
            h, w = image.shape[:2]
        if h < th or w < tw:
            raise PipelineValueError(  # MindSpore: a RuntimeError
                f"RandomCropWithBBox: crop size {self.size} is larger than the image "
                f"{(h, w)}; set pad_if_needed=True or padding"
            )
        top = int(rng.integers(0, h - th + 1))  # RandomCrop's draws
        left = int(rng.integers(0, w - tw + 1))
        crop = np.ascontiguousarray(image[top : top + th, left : left + tw])
        return crop, crop_boxes(boxes, top, left, th, tw)


def _check_pair_type(op: str, name: str, value: Any) -> Any:
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(map(is_number, value))):
        raise TypeError(f"{op}: {name} must be a (min, max) pair. Received: {name}={value!r}")
    return value


class RandomResizedCropWithBBox(TensorOperation):
    """:class:`~jisu.dataset.vision.RandomResizedCrop`'s crop (its draws) resized to
    ``size``, with the boxes that touch the crop clipped into it and scaled with it.

    Args:
        size: output (height, width), or an int for a square.
        scale: range of the crop's share of the image area (default (0.08, 1.0)).
        ratio: range of the crop's aspect ratio width/height (default (3/4, 4/3)).
        interpolation: an :class:`Inter` mode (default BILINEAR).
        max_attempts: draws before falling back to a central crop (default 10).

    Takes ``(image, bbox)``; see :mod:`jisu.dataset.vision.bbox_crop`.
    """

    randomized = True

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        op = "RandomResizedCropWithBBox"
        _check_pair_type(op, "scale", scale)
        _check_pair_type(op, "ratio", ratio)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, (int, np.integer)):
            raise TypeError(f"{op}: max_attempts must be an int. Received: {max_attempts!r}")
        self._params = _CropParams(op, size, scale, ratio, interpolation, int(max_attempts))
        self.size, self.scale, self.ratio = size, scale, ratio
        self.interpolation, self.max_attempts = interpolation, max_attempts

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        boxes = check_boxes("RandomResizedCropWithBBox", image, bbox)
        p = self._params
        top, left, h, w = sample_crop(
            image.shape[0], image.shape[1], p.scale, p.ratio, p.max_attempts, rng
        )
        boxes = crop_boxes(boxes, top, left, h, w)
        out = p.resize(image[top : top + h, left : left + w])
        return out, scale_boxes(boxes, h, w, *p.size)


class BoundingBoxAugment(TensorOperation):
    """Apply ``transform`` to the image region under a random choice of its boxes.

    Each box in turn is chosen with probability ``ratio``; its region (corners truncated to
    whole pixels) goes through ``transform``, is resized back to the region's size (bilinear)
    when the transform changed it, and replaces the region; a later box sees the earlier ones'
    results where boxes overlap. The boxes themselves are returned unchanged.

    Args:
        transform: a jisu vision op on one image (it draws from this op's generator when
            random).
        ratio: probability of each box being chosen, in [0, 1] (default 0.3).

    Takes ``(image, bbox)``; see :mod:`jisu.dataset.vision.bbox`. A chosen box of width or
    height under one pixel is refused (a RuntimeError, as MindSpore's).
    """

    randomized = True

    def __init__(self, transform: TensorOperation, ratio: float = 0.3) -> None:
        if not isinstance(transform, TensorOperation):
            raise TypeError(
                "BoundingBoxAugment: transform must be a jisu vision op (a TensorOperation). "
                f"Received: transform={transform!r}"
            )
        self.transform = transform
        self.ratio = check_number("BoundingBoxAugment", "ratio", ratio, 0.0, 1.0)

    def apply(
        self, image: np.ndarray, bbox: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        boxes = check_boxes("BoundingBoxAugment", image, bbox)
        out = image.copy()
        for i, box in enumerate(boxes):
            if not rng.random() < self.ratio:
                continue
            x, y, w, h = (int(v) for v in box[:4])  # truncated, as MindSpore's
            if w < 1 or h < 1:
                raise PipelineValueError(
                    f"BoundingBoxAugment: box {i} {box[:4].tolist()} covers no whole pixel; "
                    "the transform needs at least a 1x1 region"
                )
            region = np.ascontiguousarray(out[y : y + h, x : x + w])
            result = np.asarray(apply_op(self.transform, (region,), lambda: rng))
            if result.shape[:2] != (h, w):
                result = Resize((h, w), Inter.LINEAR).apply(result)
            out[y : y + h, x : x + w] = result.reshape(out[y : y + h, x : x + w].shape)
        return out, boxes

"""Erasing and batch-mixing ops (``mindspore.dataset.vision``' names): RandomErasing, CutOut,
MixUpBatch, CutMixBatch, MixUp. NumPy kernels (slice assignments and vector arithmetic).

Conventions checked against MindSpore 2.10:

- ``RandomErasing`` takes CHW images (MindSpore's Python op unpacks ``C, H, W``).
- ``CutOut`` fills square patches with 0; a patch may hang over the image's edges.
- ``MixUpBatch`` draws one ``lam ~ Beta(alpha, alpha)`` per batch and a random permutation
  (which may leave an image paired with itself); images ``lam * x + (1 - lam) * x[perm]``
  (integer images rounded to nearest), one-hot labels the same, as float32.
- ``CutMixBatch`` draws, per image, ``lam ~ Beta(alpha, alpha)`` and applies with ``prob``: a box
  of sides ``sqrt(1 - lam)`` times the image's, centred uniformly, is pasted from ``x[perm]``;
  the label weight is ``1 - box area / image area`` (float32 labels).
- ``MixUp`` (``is_single=True``) mixes each image with the next one (circularly), one ``lam``
  per image; float64 results.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.operation import TensorOperation
from .adjust import check_number, check_prob, is_number
from .utils import ImageBatchFormat


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_pair(op: str, name: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(map(is_number, value)):
        raise TypeError(f"{op}: {name} must be (min, max). Received: {name}={value!r}")
    low, high = float(value[0]), float(value[1])
    if low < 0 or high < 0:
        raise ValueError(f"{op}: {name} must be non-negative. Received: {name}={value!r}")
    if low > high:
        raise ValueError(f"{op}: {name} must be (min, max) with min <= max. Received: {value!r}")
    return low, high


# ------------------------------------------------------------------------------ RandomErasing


class RandomErasing(TensorOperation):
    """Erase a random rectangle of a CHW image (``mindspore.dataset.vision.RandomErasing``).

    With probability ``prob``, up to ``max_attempts`` times: draw an area fraction from
    ``scale`` and an aspect ratio (width / height) from ``ratio`` (both uniformly); the first
    box smaller than the image in both sides is placed uniformly inside it and filled.

    Args:
        prob: probability of erasing, in [0, 1].
        scale: (min, max) fraction of the image's area to erase.
        ratio: (min, max) aspect ratio of the box.
        value: an int in [0, 255] for every channel, three ints (one per channel), or
            ``"random"`` for standard-normal noise.
        inplace: accepted for MindSpore compatibility; the result is always a new array
            (writing into a pipeline's input could change its source data).
        max_attempts: boxes to try before returning the image unchanged (>= 1).
    """

    randomized = True

    def __init__(
        self,
        prob: float = 0.5,
        scale: tuple[float, float] = (0.02, 0.33),
        ratio: tuple[float, float] = (0.3, 3.3),
        value: Any = 0,
        inplace: bool = False,
        max_attempts: int = 10,
    ) -> None:
        op = "RandomErasing"
        self.prob = check_prob(op, prob)
        self.scale = _check_pair(op, "scale", scale)
        if self.scale[1] <= 0:
            raise ValueError(f"{op}: scale[1] must be positive. Received: scale={scale!r}")
        self.ratio = _check_pair(op, "ratio", ratio)
        if self.ratio[0] <= 0:
            raise ValueError(f"{op}: ratio must be positive. Received: ratio={ratio!r}")
        if isinstance(value, str):
            if value != "random":
                raise ValueError(f"{op}: a str value must be 'random'. Received: value={value!r}")
        elif _is_int(value):
            if not 0 <= value <= 255:
                raise ValueError(f"{op}: value must be in [0, 255]. Received: value={value!r}")
            value = int(value)
        elif isinstance(value, (tuple, list)) and len(value) == 3 and all(map(_is_int, value)):
            if not all(0 <= v <= 255 for v in value):
                raise ValueError(f"{op}: value must be in [0, 255]. Received: value={value!r}")
            value = tuple(int(v) for v in value)
        else:
            raise TypeError(
                f"{op}: value must be an int, 3 ints or 'random'. Received: value={value!r}"
            )
        self.value = value
        if not isinstance(inplace, bool):
            raise TypeError(f"{op}: inplace must be a bool. Received: inplace={inplace!r}")
        self.inplace = inplace
        if not _is_int(max_attempts) or max_attempts < 1:
            raise ValueError(
                f"{op}: max_attempts must be an int >= 1. Received: max_attempts={max_attempts!r}"
            )
        self.max_attempts = int(max_attempts)

    def draw(
        self, rng: np.random.Generator, height: int, width: int
    ) -> tuple[int, int, int, int] | None:
        """The box (top, left, height, width) of one application, or ``None`` (no erasing)."""
        if not rng.random() < self.prob:
            return None
        area = height * width
        for _ in range(self.max_attempts):
            erase_area = rng.uniform(*self.scale) * area
            aspect = rng.uniform(*self.ratio)
            w = round(math.sqrt(erase_area * aspect))
            h = round(w / aspect)
            if h < height and w < width:
                top = int(rng.integers(0, height - h + 1))
                left = int(rng.integers(0, width - w + 1))
                return top, left, h, w
        return None

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if image.ndim != 3:
            raise ValueError(f"RandomErasing: expected a CHW image. Received shape {image.shape}")
        box = self.draw(rng, image.shape[1], image.shape[2])
        if box is None:
            return image
        value = self.value
        if value == "random":
            value = rng.standard_normal((image.shape[0], box[2], box[3]))
        return erase(image, *box, value)


def erase(image: np.ndarray, top: int, left: int, height: int, width: int, value: Any):
    """A copy of the CHW ``image`` with the box filled by ``value`` (a number, one per
    channel, or an array of the box's shape)."""
    if isinstance(value, tuple):
        if image.shape[0] != len(value):
            raise ValueError(
                f"RandomErasing: 3 fill values need 3 channels. Received shape {image.shape}"
            )
        value = np.asarray(value)[:, None, None]
    out = image.copy()
    out[:, top : top + height, left : left + width] = value
    return out


# ------------------------------------------------------------------------------------ CutOut


class CutOut(TensorOperation):
    """Fill ``num_patches`` square patches of side ``length`` with 0
    (``mindspore.dataset.vision.CutOut``).

    Each patch's top-left corner is drawn uniformly so that the patch covers at least one
    pixel; patches may hang over the edges (they are clipped) and may overlap.

    Args:
        length: the side of each patch (>= 1).
        num_patches: patches per image (>= 1).
        is_hwc: ``True`` for HWC (or HW) images, ``False`` for CHW.
    """

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(self, length: int, num_patches: int = 1, is_hwc: bool = True) -> None:
        for name, v in (("length", length), ("num_patches", num_patches)):
            if not _is_int(v):
                raise TypeError(f"CutOut: {name} must be an int. Received: {name}={v!r}")
            if v < 1:
                raise ValueError(f"CutOut: {name} must be >= 1. Received: {name}={v!r}")
        if not isinstance(is_hwc, bool):
            raise TypeError(f"CutOut: is_hwc must be a bool. Received: is_hwc={is_hwc!r}")
        self.length, self.num_patches, self.is_hwc = int(length), int(num_patches), is_hwc

    def draw(self, rng: np.random.Generator, height: int, width: int) -> list[tuple[int, int]]:
        """The (top, left) corners of the patches (before clipping to the image)."""
        tops = rng.integers(1 - self.length, height, self.num_patches)
        lefts = rng.integers(1 - self.length, width, self.num_patches)
        return [(int(t), int(v)) for t, v in zip(tops, lefts)]

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if image.ndim not in (2, 3) or (not self.is_hwc and image.ndim != 3):
            layout = "an HW or HWC" if self.is_hwc else "a CHW"
            raise ValueError(f"CutOut: expected {layout} image. Received shape {image.shape}")
        h_axis = 0 if self.is_hwc else 1
        height, width = image.shape[h_axis], image.shape[h_axis + 1]
        if self.length > min(height, width):  # MindSpore 2.10: a RuntimeError when it runs
            raise ValueError(
                f"CutOut: length must not exceed the image's height or width. Received: "
                f"length={self.length} for an image of {height}x{width}"
            )
        return cut_out(image, self.draw(rng, height, width), self.length, self.is_hwc)


def cut_out(image: np.ndarray, corners, length: int, is_hwc: bool = True) -> np.ndarray:
    """A copy of ``image`` with a ``length``-sided zero patch at each (top, left) corner."""
    out = image.copy()
    view = out if is_hwc else np.moveaxis(out, 0, -1)
    for top, left in corners:
        view[max(top, 0) : max(top + length, 0), max(left, 0) : max(left + length, 0)] = 0
    return out


# ----------------------------------------------------------------------------- batch mixing


def _check_alpha(op: str, alpha: Any) -> float:
    alpha = check_number(op, "alpha", alpha, 0.0, float(np.finfo(np.float32).max))
    if alpha <= 0:
        raise ValueError(f"{op}: alpha must be positive. Received: alpha={alpha!r}")
    return alpha


def _check_batch(op: str, images: np.ndarray, labels: np.ndarray, image_ndim: int = 4) -> None:
    if images.ndim != image_ndim:
        raise ValueError(
            f"{op}: expected a batch of images with {image_ndim} dimensions (use it after "
            f"batch). Received shape {images.shape}"
        )
    if labels.ndim < 2 or labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{op}: expected one-hot labels of shape (N, ..., num_classes) for {images.shape[0]} "
            f"images (use OneHot before batch). Received shape {labels.shape}"
        )
    if labels.dtype == np.bool_ or labels.dtype.kind not in "uif":
        raise TypeError(f"{op}: expected numeric one-hot labels. Received dtype {labels.dtype}")


def _cast_like(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results in ``dtype``: integers are rounded to nearest and saturated."""
    if np.dtype(dtype).kind == "f":
        return values.astype(dtype, copy=False)
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def _weights(lam: np.ndarray | float, ndim: int, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(lam, np.float32), (n,)).reshape((n,) + (1,) * (ndim - 1))


def mix_up(
    images: np.ndarray, labels: np.ndarray, perm: np.ndarray, lam: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``lam * x + (1 - lam) * x[perm]`` for images (in float32, back to their dtype) and
    labels (float32); ``lam``: one weight, or one per image."""
    n = images.shape[0]
    wi = _weights(lam, images.ndim, n)
    mixed = wi * images.astype(np.float32) + (np.float32(1) - wi) * images[perm]
    wl = _weights(lam, labels.ndim, n)
    mixed_labels = wl * labels.astype(np.float32) + (np.float32(1) - wl) * labels[perm]
    return _cast_like(mixed, images.dtype), mixed_labels.astype(np.float32)


class MixUpBatch(TensorOperation):
    """Mix a batch of images and its one-hot labels with a permutation of itself
    (``mindspore.dataset.vision.MixUpBatch``; use after ``batch``).

    One ``lam ~ Beta(alpha, alpha)`` per batch; ``x[i]`` becomes
    ``lam * x[i] + (1 - lam) * x[perm[i]]`` for a random permutation ``perm`` (an image may
    be paired with itself); the labels likewise. Takes ``(images, labels)``: NHWC or NCHW
    images (the formula does not depend on the layout) and labels (N, ..., num_classes).
    Returns images in their dtype (integers rounded) and float32 labels.
    """

    randomized = True

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = _check_alpha("MixUpBatch", alpha)

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
        """(permutation, lam) of one batch of ``n`` images."""
        perm = rng.permutation(n)
        return perm, float(np.float32(rng.beta(self.alpha, self.alpha)))

    def apply(
        self, images: np.ndarray, labels: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        _check_batch("MixUpBatch", images, labels)
        perm, lam = self.draw(rng, images.shape[0])
        return mix_up(images, labels, perm, lam)


def crop_box(height: int, width: int, lam: float, cy: int, cx: int) -> tuple[int, int, int, int]:
    """CutMix's box (top, left, height, width): sides ``int(side * sqrt(1 - lam))`` centred at
    (cy, cx), clipped to the image (it may end up empty)."""
    ratio = math.sqrt(max(0.0, 1.0 - lam))
    cut_h, cut_w = int(height * ratio), int(width * ratio)
    y1, y2 = np.clip([cy - cut_h // 2, cy + cut_h // 2], 0, height)
    x1, x2 = np.clip([cx - cut_w // 2, cx + cut_w // 2], 0, width)
    return int(y1), int(x1), int(y2 - y1), int(x2 - x1)


def cut_mix(
    images: np.ndarray,
    labels: np.ndarray,
    perm: np.ndarray,
    boxes: list[tuple[int, int, int, int] | None],
    nchw: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Paste ``images[perm[i]]``'s box ``boxes[i]`` (top, left, height, width; ``None``: keep
    the image) into image ``i``; labels weighted by the pasted area (float32)."""
    out = images.copy()
    view, src = (np.moveaxis(out, 1, -1), np.moveaxis(images, 1, -1)) if nchw else (out, images)
    height, width = view.shape[1:3]
    weights = np.ones(images.shape[0], np.float32)
    for i, box in enumerate(boxes):
        if box is None:
            continue
        top, left, h, w = box
        region = (slice(top, top + h), slice(left, left + w))
        view[i][region] = src[perm[i]][region]
        weights[i] = np.float32(1.0 - (h * w) / (height * width))
    wl = _weights(weights, labels.ndim, labels.shape[0])
    mixed = wl * labels.astype(np.float32) + (np.float32(1) - wl) * labels[perm]
    return out, mixed.astype(np.float32)


class CutMixBatch(TensorOperation):
    """Paste a random box of another image of the batch into each image, and mix the one-hot
    labels by area (``mindspore.dataset.vision.CutMixBatch``; use after ``batch``).

    Images are paired by a random permutation. Each image, with probability ``prob``, draws
    ``lam ~ Beta(alpha, alpha)`` and a centre uniformly in the image; the box's sides are
    ``sqrt(1 - lam)`` times the image's (clipped at the edges). Its label becomes
    ``r * label[i] + (1 - r) * label[perm[i]]`` with ``r = 1 - box area / image area``.

    Args:
        image_batch_format: :class:`ImageBatchFormat` ``NHWC`` or ``NCHW``.
        alpha: the Beta distribution's parameter (> 0).
        prob: probability of mixing each image, in [0, 1].

    Takes ``(images, labels)``; returns images in their dtype and float32 labels.
    """

    randomized = True

    def __init__(
        self, image_batch_format: ImageBatchFormat, alpha: float = 1.0, prob: float = 1.0
    ) -> None:
        if not isinstance(image_batch_format, ImageBatchFormat):
            raise TypeError(
                "CutMixBatch: image_batch_format must be an ImageBatchFormat. "
                f"Received: {image_batch_format!r}"
            )
        self.image_batch_format = image_batch_format
        self.alpha = _check_alpha("CutMixBatch", alpha)
        self.prob = check_prob("CutMixBatch", prob)

    def draw(self, rng: np.random.Generator, n: int, height: int, width: int):
        """(permutation, boxes) of one batch: a box (top, left, height, width) per image, or
        ``None`` where the image is left alone."""
        perm = rng.permutation(n)
        boxes: list[tuple[int, int, int, int] | None] = []
        for _ in range(n):
            lam = float(rng.beta(self.alpha, self.alpha))
            if rng.random() < self.prob:
                cy, cx = int(rng.integers(0, height + 1)), int(rng.integers(0, width + 1))
                boxes.append(crop_box(height, width, lam, cy, cx))
            else:
                boxes.append(None)
        return perm, boxes

    def apply(
        self, images: np.ndarray, labels: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        _check_batch("CutMixBatch", images, labels)
        nchw = self.image_batch_format is ImageBatchFormat.NCHW
        height, width = images.shape[2:4] if nchw else images.shape[1:3]
        perm, boxes = self.draw(rng, images.shape[0], height, width)
        return cut_mix(images, labels, perm, boxes, nchw)


class MixUp(TensorOperation):
    """Mix each image of a batch with the next one, circularly
    (``mindspore.dataset.vision.MixUp`` with ``is_single=True``).

    Image ``i`` becomes ``lam_i * x[i] + (1 - lam_i) * x[(i + 1) % n]`` with
    ``lam_i ~ Beta(alpha, alpha)`` drawn per image; one-hot labels likewise. Results are
    float64, as MindSpore's. ``batch_size`` is checked but the batch's real size is used (the
    last batch may be smaller). ``is_single=False`` (mixing with the previous batch's output)
    needs state carried between batches, which jisu's ops do not hold: it is refused.
    """

    randomized = True

    def __init__(self, batch_size: int, alpha: float, is_single: bool = True) -> None:
        if not _is_int(batch_size) or batch_size < 1:
            raise ValueError(f"MixUp: batch_size must be an int >= 1. Received: {batch_size!r}")
        self.batch_size = int(batch_size)
        self.alpha = _check_alpha("MixUp", alpha)
        if not isinstance(is_single, bool):
            raise TypeError(f"MixUp: is_single must be a bool. Received: {is_single!r}")
        if not is_single:
            raise NotImplementedError(
                "MixUp: is_single=False (mixing with the previous batch) keeps state between "
                "batches and is not supported; use is_single=True or MixUpBatch"
            )
        self.is_single = is_single

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """The weights ``lam`` of one batch (one per image)."""
        return rng.beta(self.alpha, self.alpha, n)

    def apply(
        self, images: np.ndarray, labels: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if images.ndim < 2:
            raise ValueError(f"MixUp: expected a batch of images. Received shape {images.shape}")
        _check_batch("MixUp", images, labels, images.ndim)
        n = images.shape[0]
        lam = self.draw(rng, n)
        shift = np.roll(np.arange(n), -1)
        li = lam.reshape((n,) + (1,) * (images.ndim - 1))
        ll = lam.reshape((n,) + (1,) * (labels.ndim - 1))
        mixed = li * images + (1 - li) * images[shift]
        return mixed, ll * labels + (1 - ll) * labels[shift]

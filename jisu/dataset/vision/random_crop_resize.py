"""RandomResizedCrop and RandomCropDecodeResize (torchvision's/MindSpore's crop sampling).

The crop covers a random ``scale`` fraction of the image area with a random aspect ratio drawn
log-uniformly from ``ratio``; after ``max_attempts`` failed draws it falls back to a central
crop with the ratio clamped into range. RandomCropDecodeResize draws the same crop from the
JPEG header alone and, by default, decodes only at the scale the crop needs (libjpeg-turbo's
scaled decoding at 1/2, 1/4, 1/8), so a large JPEG is not decoded at full size for a small
output; with ``scaled_decode = False`` it gives Decode + RandomResizedCrop's very pixels (as
MindSpore's test of its fused op asserts).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.operation import TensorOperation
from .decode import _buffer, check_declared_size, decode_image, decode_jpeg, is_jpeg
from .geometry import per_image
from .region_decode import decode_region
from .utils import Inter, check_image, resize_plane, size_pair


def _check_range(op: str, name: str, value, low: float) -> tuple[float, float]:
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or not all(isinstance(v, (int, float)) for v in value)
        or not low <= value[0] <= value[1]
    ):
        raise ValueError(
            f"{op}: {name} must be (min, max) with {low} <= min <= max. Received: {name}={value!r}"
        )
    return float(value[0]), float(value[1])


def sample_crop(
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    attempts: int,
    rng: np.random.Generator,
) -> tuple[int, int, int, int]:
    """(top, left, crop height, crop width) as MindSpore 2.10's RandomResizedCrop computes it
    from its draws (the draws are jisu's streams): the aspect ratio is drawn log-uniformly
    in float32, ``w = round(sqrt(area * scale * aspect))`` and ``h = round(w / aspect)``
    (each at least 1); after ``attempts`` crops that do not fit, a central crop with the
    ratio clamped into range, its corner rounded half up (the ratio bounds as float32)."""
    area = height * width
    low, high = np.float32(ratio[0]), np.float32(ratio[1])
    log_ratio = (float(np.log(low)), float(np.log(high)))
    for _ in range(attempts):
        share = float(np.float32(rng.uniform(scale[0], scale[1])))
        aspect = float(np.exp(np.float32(rng.uniform(log_ratio[0], log_ratio[1]))))
        w = max(1, _round_half_away(math.sqrt(area * share * aspect)))
        h = max(1, _round_half_away(w / aspect))
        if w <= width and h <= height:
            left = int(rng.integers(0, width - w + 1))
            top = int(rng.integers(0, height - h + 1))
            return top, left, h, w
    in_ratio = width / height  # fallback: a central crop, its ratio clamped into range
    if in_ratio < low:
        w, h = width, _round_half_away(width / float(low))
    elif in_ratio > high:
        h, w = height, _round_half_away(height * float(high))
    else:
        w, h = width, height
    w, h = max(1, w), max(1, h)
    return _round_half_away((height - h) / 2), _round_half_away((width - w) / 2), h, w


def _round_half_away(x: float) -> int:
    """C's ``round``: halves away from zero (Python's ``round`` takes halves to even)."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


class _CropParams:
    def __init__(self, op: str, size, scale, ratio, interpolation, max_attempts) -> None:
        self.size = size_pair(op, size)
        self.scale = _check_range(op, "scale", scale, 0.0)
        self.ratio = _check_range(op, "ratio", ratio, 1e-12)
        if not isinstance(interpolation, Inter):
            raise TypeError(f"{op}: interpolation must be an Inter. Received: {interpolation!r}")
        self.interpolation = interpolation
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"{op}: max_attempts must be an int >= 1. Received: {max_attempts!r}")
        self.max_attempts = max_attempts

    def resize(self, crop: np.ndarray) -> np.ndarray:
        h, w = self.size
        if crop.shape[:2] == (h, w):
            return np.ascontiguousarray(crop)
        out = resize_plane(crop, h, w, self.interpolation)
        return out.reshape(h, w, *crop.shape[2:])


class _RandomCropResize(TensorOperation):
    """Shared arguments of the random-resized-crop ops (see :class:`RandomResizedCrop`)."""

    randomized = True

    def __init__(
        self,
        size,
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
        interpolation: Inter = Inter.BILINEAR,
        max_attempts: int = 10,
    ) -> None:
        self._params = _CropParams(
            type(self).__name__, size, scale, ratio, interpolation, max_attempts
        )


class RandomResizedCrop(_RandomCropResize):
    """Crop a random area and aspect ratio, then resize to ``size``.

    Args:
        size: output (height, width), or an int for a square.
        scale: range of the crop's share of the image area (default (0.08, 1.0)).
        ratio: range of the crop's aspect ratio width/height (default (3/4, 4/3)).
        interpolation: an :class:`Inter` mode (default BILINEAR).
        max_attempts: draws before falling back to a central crop (default 10).
    """

    multi_input = True  # MindSpore 2.10: several images, the same draw

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if image.ndim >= 4:
            return per_image("RandomResizedCrop", image, lambda im: self.apply(im, rng=rng))
        check_image("RandomResizedCrop", image)
        p = self._params
        top, left, h, w = sample_crop(
            image.shape[0], image.shape[1], p.scale, p.ratio, p.max_attempts, rng
        )
        return p.resize(image[top : top + h, left : left + w])

    def crop_region(self, height: int, width: int, rng=None) -> tuple[int, int, int, int]:
        """The crop ``apply`` would draw from ``rng`` for an image of ``height`` x ``width``
        (for region decoding: the same draws)."""
        p = self._params
        return sample_crop(height, width, p.scale, p.ratio, p.max_attempts, rng)

    def finish_region(self, region: np.ndarray) -> np.ndarray:
        return self._params.resize(region)


class RandomCropDecodeResize(_RandomCropResize):
    """Decode a random crop of an encoded image and resize it.

    The crop is ``Decode`` then :class:`RandomResizedCrop`'s (same random draws, MindSpore's
    crop formulas). jisu's speed default (``scaled_decode``, True) decodes a JPEG at the
    smallest of 1/2, 1/4, 1/8 scale at which the crop still has ``size`` pixels
    (libjpeg-turbo's fast scaled decoding), or at full scale only the crop's region when
    ``jisu[nvimgcodec]`` is installed (:mod:`~jisu.dataset.vision.region_decode`): faster for
    a small output from a large photo, and then not pixel-equal to ``Decode`` +
    ``RandomResizedCrop`` (the scaled decode averages in the DCT domain where the bilinear
    resize samples; a few levels on textured images). ``op.scaled_decode = False`` (or the
    class attribute) gives their very pixels and errors, as MindSpore's test of its fused op
    asserts. Like :class:`Decode`, it refuses an image larger than
    ``config.set_max_image_pixels`` (its declared full size) before decoding, and a truncated
    or corrupt JPEG.
    """

    runs_on_device = True  # device("GPU") decodes in the offload module
    #: decode JPEGs at a reduced scale when the crop allows (jisu's speed default; False:
    #: Decode + RandomResizedCrop's pixels)
    scaled_decode = True

    def apply(self, data: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        op, p = "RandomCropDecodeResize", self._params
        buf = _buffer(data)
        if not (self.scaled_decode and is_jpeg(buf)):  # Decode's very pixels and checks
            image = decode_image(op, data)
            top, left, h, w = sample_crop(
                image.shape[0], image.shape[1], p.scale, p.ratio, p.max_attempts, rng
            )
            return p.resize(image[top : top + h, left : left + w])
        # the declared full size is checked against the pixel limit: decoding time grows with
        # it even when only a scaled-down image is allocated
        height, width = check_declared_size(op, data, buf)
        top, left, h, w = sample_crop(height, width, p.scale, p.ratio, p.max_attempts, rng)
        # Decode at 1/2, 1/4 or 1/8 when the crop keeps at least `size` pixels: libjpeg-turbo
        # is fast at those scales (measured 1.22 ms full size, slower at 7/8..5/8: 1.83 ms).
        need = max(p.size[0] / h, p.size[1] / w)
        factor = 1
        while factor < 8 and need * factor * 2 <= 1.0:
            factor *= 2
        if factor == 1:  # at full scale: only the crop's region, where the extra is installed
            region = decode_region(buf, top, left, h, w)
            if region is not None:
                return p.resize(region)
        image = decode_jpeg(
            op,
            data,
            buf,
            min_height=math.ceil(height / factor) if factor > 1 else 0,
            min_width=math.ceil(width / factor) if factor > 1 else 0,
        )
        # the scale of what came back: OpenCV decodes JPEG flavours libjpeg-turbo does not (at
        # full size)
        fy, fx = image.shape[0] / height, image.shape[1] / width
        y0, x0 = round(top * fy), round(left * fx)
        y1 = max(y0 + 1, min(image.shape[0], round((top + h) * fy)))
        x1 = max(x0 + 1, min(image.shape[1], round((left + w) * fx)))
        return p.resize(image[y0:y1, x0:x1])

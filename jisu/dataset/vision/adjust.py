"""Point colour ops (``mindspore.dataset.vision``' names): Invert, Posterize, Solarize, Equalize,
AutoContrast and their random forms. uint8 maps run as OpenCV lookup tables (GIL released)."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from ..core.operation import TensorOperation
from .utils import check_image

_LEVELS = np.arange(256, dtype=np.float64)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def check_number(op: str, name: str, value: Any, low: float, high: float = float("inf")) -> float:
    """``value`` as a float in [low, high]; errors name the op and the argument."""
    if not is_number(value):
        raise TypeError(f"{op}: {name} must be a number. Received: {name}={value!r}")
    if not low <= value <= high:
        bounds = f"in [{low}, {high}]" if high != float("inf") else f">= {low}"
        raise ValueError(f"{op}: {name} must be {bounds}. Received: {name}={value!r}")
    return float(value)


def check_prob(op: str, prob: Any) -> float:
    return check_number(op, "prob", prob, 0.0, 1.0)


def check_uint8(op: str, image: np.ndarray) -> np.ndarray:
    check_image(op, image)
    if image.dtype != np.uint8:
        raise TypeError(f"{op}: expected a uint8 image. Received dtype {image.dtype}")
    return image


def check_gray_or_rgb(op: str, image: np.ndarray) -> np.ndarray:
    """An HW image or an HWC one with 1 or 3 channels: MindSpore 2.10's Invert and
    AutoContrast refuse 2 and 4 (RGBA: the alpha channel is no colour to invert or stretch)."""
    check_image(op, image)
    if image.ndim == 3 and image.shape[2] not in (1, 3):
        raise ValueError(
            f"{op}: expected an image with 1 or 3 channels. Received shape {image.shape}"
        )
    return image


def apply_lut(image: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``table[image]`` for a uint8 HW/HWC image (OpenCV's LUT; ``table``: 256 uint8 values,
    or (256, channels) for one table per channel)."""
    table = np.ascontiguousarray(table, dtype=np.uint8)
    channels = 1 if image.ndim == 2 else image.shape[2]
    if image.size == 0:
        return image.copy()
    if table.ndim == 2 and table.shape[1] == 1:
        table = table[:, 0]
    if channels <= 4 and (table.ndim == 1 or table.shape[1] == channels):
        lut = table.reshape(256, 1) if table.ndim == 1 else table.reshape(256, 1, channels)
        src = image if image.flags.c_contiguous else np.ascontiguousarray(image)
        return cv2.LUT(src, lut).reshape(image.shape)
    if table.ndim == 1:
        return table[image]
    return np.take_along_axis(table, image.reshape(-1, channels).astype(np.intp), 0).reshape(
        image.shape
    )


def _channels(image: np.ndarray) -> int:
    return 1 if image.ndim == 2 else image.shape[2]


def _histograms(image: np.ndarray) -> list[np.ndarray]:
    """One 256-bin histogram per channel of a uint8 HW/HWC image (OpenCV's calcHist)."""
    src = image if image.flags.c_contiguous else np.ascontiguousarray(image)
    return [
        cv2.calcHist([src], [c], None, [256], [0, 256]).ravel().astype(np.int64)
        for c in range(_channels(image))
    ]


# ------------------------------------------------------------------------------------ Invert


class Invert(TensorOperation):
    """``255 - x`` per pixel (MindSpore's ``Invert``): uint8 images, or other dtypes in 0-255
    units (a float image gives ``255.0 - x``). Output: the input's dtype and shape.

    RGB (HWC, 3 channels) as MindSpore 2.10; HW and 1-channel images too (MindSpore refuses
    them); 2 or 4 channels are refused, as there."""

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_gray_or_rgb("Invert", image)
        if image.dtype == np.uint8:
            src = image if image.flags.c_contiguous else np.ascontiguousarray(image)
            return cv2.bitwise_not(src).reshape(image.shape)
        if image.dtype == np.bool_ or image.dtype.kind not in "uif":
            raise TypeError(f"Invert: expected a numeric image. Received dtype {image.dtype}")
        return np.subtract(image.dtype.type(255), image, dtype=image.dtype, casting="unsafe")


class RandomInvert(TensorOperation):
    """:class:`Invert` with probability ``prob``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob("RandomInvert", prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_gray_or_rgb("RandomInvert", image)
        return _INVERT.apply(image) if rng.random() < self.prob else image


_INVERT = Invert()


# --------------------------------------------------------------------------------- Posterize


def _check_bits(op: str, bits: Any, low: int) -> int:
    if not isinstance(bits, (int, np.integer)) or isinstance(bits, (bool, np.bool_)):
        raise TypeError(f"{op}: bits must be an int. Received: bits={bits!r}")
    if not low <= bits <= 8:
        raise ValueError(f"{op}: bits must be in [{low}, 8]. Received: bits={bits!r}")
    return int(bits)


def posterize(image: np.ndarray, bits: int) -> np.ndarray:
    mask = (0xFF << (8 - bits)) & 0xFF
    return apply_lut(image, np.arange(256, dtype=np.uint8) & np.uint8(mask))


class Posterize(TensorOperation):
    """Keep the ``bits`` (0-8) most significant bits of each uint8 value (``bits=0`` gives
    black). HW or HWC uint8 images."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, bits: int) -> None:
        self.bits = _check_bits("Posterize", bits, 0)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        return posterize(check_uint8("Posterize", image), self.bits)


class RandomPosterize(TensorOperation):
    """:class:`Posterize` with ``bits`` drawn uniformly from the integers in ``[min, max]``
    (``bits``: an int, or ``(min, max)`` with ``1 <= min <= max <= 8``; the default (8, 8)
    leaves images unchanged)."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(self, bits: int | tuple[int, int] = (8, 8)) -> None:
        if isinstance(bits, (list, tuple)):
            if len(bits) != 2:
                raise TypeError(
                    f"RandomPosterize: bits must be an int or (min, max). Received: bits={bits!r}"
                )
            low, high = (_check_bits("RandomPosterize", b, 1) for b in bits)
            if low > high:
                raise ValueError(
                    f"RandomPosterize: bits must be (min, max) with min <= max. "
                    f"Received: bits={bits!r}"
                )
        else:
            low = high = _check_bits("RandomPosterize", bits, 1)
        self.bits = (low, high)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_uint8("RandomPosterize", image)
        bits = int(rng.integers(self.bits[0], self.bits[1] + 1))
        return posterize(image, bits)


# ---------------------------------------------------------------------------------- Solarize


def _threshold_pair(op: str, threshold: Any) -> tuple[float, float]:
    if is_number(threshold):
        return check_number(op, "threshold", threshold, 0, 255), 255.0
    if isinstance(threshold, (list, tuple)) and len(threshold) == 2:
        low = check_number(op, "threshold[0]", threshold[0], 0, 255)
        high = check_number(op, "threshold[1]", threshold[1], 0, 255)
        if low > high:
            raise ValueError(
                f"{op}: threshold must be (min, max) with min <= max. "
                f"Received: threshold={threshold!r}"
            )
        return low, high
    raise TypeError(
        f"{op}: threshold must be a number or (min, max). Received: threshold={threshold!r}"
    )


def solarize(image: np.ndarray, low: float, high: float) -> np.ndarray:
    """``255 - x`` where ``low <= x <= high``, ``x`` elsewhere."""
    if image.dtype == np.uint8:
        table = np.where((low <= _LEVELS) & (high >= _LEVELS), 255 - _LEVELS, _LEVELS)
        return apply_lut(image, table.astype(np.uint8))
    if image.dtype == np.bool_ or image.dtype.kind not in "uif":
        raise TypeError(f"Solarize: expected a numeric image. Received dtype {image.dtype}")
    inverted = np.subtract(image.dtype.type(255), image, dtype=image.dtype, casting="unsafe")
    return np.where((image >= low) & (image <= high), inverted, image)


class Solarize(TensorOperation):
    """Invert (``255 - x``) the values in a range: ``threshold`` is a number ``t`` (values
    ``>= t``) or ``(min, max)`` (values in ``[min, max]``), within [0, 255]. uint8 images, or
    other dtypes in 0-255 units; HW or HWC."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(self, threshold: float | tuple[float, float]) -> None:
        self.threshold = _threshold_pair("Solarize", threshold)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_image("Solarize", image)
        return solarize(image, *self.threshold)


class RandomSolarize(TensorOperation):
    """:class:`Solarize` with a random range: two integers drawn uniformly from
    ``threshold = (min, max)`` (within [0, 255]), sorted, give the inverted range."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(self, threshold: tuple[float, float] = (0, 255)) -> None:
        if not isinstance(threshold, (list, tuple)):
            raise TypeError(
                f"RandomSolarize: threshold must be (min, max). Received: threshold={threshold!r}"
            )
        low, high = _threshold_pair("RandomSolarize", threshold)
        self.threshold = (int(np.ceil(low)), int(np.floor(high)))
        if self.threshold[0] > self.threshold[1]:
            raise ValueError(
                f"RandomSolarize: threshold holds no integer. Received: threshold={threshold!r}"
            )

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_image("RandomSolarize", image)
        a, b = rng.integers(self.threshold[0], self.threshold[1] + 1, size=2)
        return solarize(image, float(min(a, b)), float(max(a, b)))


# ---------------------------------------------------------------------------------- Equalize


def equalize(image: np.ndarray) -> np.ndarray:
    """Histogram equalization of each channel (OpenCV's equalizeHist)."""
    if image.ndim == 2:
        return cv2.equalizeHist(np.ascontiguousarray(image))
    planes = [cv2.equalizeHist(np.ascontiguousarray(image[..., c])) for c in range(image.shape[2])]
    return np.stack(planes, axis=2) if len(planes) > 1 else planes[0][..., None]


class Equalize(TensorOperation):
    """Equalize the histogram of each channel of a uint8 HW or HWC image."""

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        return equalize(check_uint8("Equalize", image))


class RandomEqualize(TensorOperation):
    """:class:`Equalize` with probability ``prob``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = check_prob("RandomEqualize", prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_uint8("RandomEqualize", image)
        return equalize(image) if rng.random() < self.prob else image


# ------------------------------------------------------------------------------ AutoContrast


def _check_autocontrast(op: str, cutoff: Any, ignore: Any) -> tuple[float, tuple[int, ...]]:
    cutoff = check_number(op, "cutoff", cutoff, 0.0, 50.0)
    if cutoff >= 50:
        raise ValueError(f"{op}: cutoff must be in [0, 50). Received: cutoff={cutoff!r}")
    if ignore is None:
        values: tuple = ()
    elif isinstance(ignore, (list, tuple)):
        values = tuple(ignore)
    else:
        values = (ignore,)
    for v in values:
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{op}: ignore must be an int or ints. Received: ignore={ignore!r}")
        if not 0 <= v <= 255:
            raise ValueError(f"{op}: ignore must be in [0, 255]. Received: ignore={ignore!r}")
    return cutoff, tuple(int(v) for v in values)


def autocontrast(image: np.ndarray, cutoff: float, ignore: tuple[int, ...]) -> np.ndarray:
    """Stretch each channel's range to [0, 255], after cutting ``cutoff`` percent of the
    pixels from each end of its histogram (PIL's rules)."""
    tables = []
    for hist in _histograms(image):
        if ignore:
            hist[list(ignore)] = 0
        if cutoff:
            # remove cutoff% of the pixels from the low end, then from the high end
            cut_total = int(hist.sum() * cutoff // 100)
            for h in (hist, hist[::-1]):
                cut = cut_total
                removed = np.minimum(h, np.maximum(cut - (np.cumsum(h) - h), 0))
                h -= removed
        nonzero = np.flatnonzero(hist)
        if nonzero.size == 0 or nonzero[-1] <= nonzero[0]:
            tables.append(_LEVELS.astype(np.uint8))
            continue
        low, high = int(nonzero[0]), int(nonzero[-1])
        # float32 arithmetic and truncation, as MindSpore (PIL computes in float64: it can
        # give one level more where ``x * scale + offset`` lands just below an integer)
        scale = np.float32(255.0) / np.float32(high - low)
        mapped = np.trunc(_LEVELS.astype(np.float32) * scale + np.float32(-low) * scale)
        tables.append(np.clip(mapped, 0, 255).astype(np.uint8))
    return apply_lut(image, np.stack(tables, axis=1))


class AutoContrast(TensorOperation):
    """Stretch each channel of a uint8 HW/HWC image (1 or 3 channels, as MindSpore 2.10) to
    the full [0, 255] range.

    Args:
        cutoff: percent (in [0, 50)) of the pixels to ignore at each end of a channel's
            histogram (the darkest and the brightest).
        ignore: pixel value(s) left out of the histograms (e.g. a background value).
    """

    def __init__(self, cutoff: float = 0.0, ignore: int | list[int] | None = None) -> None:
        self.cutoff, self.ignore = _check_autocontrast("AutoContrast", cutoff, ignore)

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        check_gray_or_rgb("AutoContrast", image)
        return autocontrast(check_uint8("AutoContrast", image), self.cutoff, self.ignore)


class RandomAutoContrast(TensorOperation):
    """:class:`AutoContrast` with probability ``prob``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    randomized = True

    def __init__(
        self, cutoff: float = 0.0, ignore: int | list[int] | None = None, prob: float = 0.5
    ) -> None:
        self.cutoff, self.ignore = _check_autocontrast("RandomAutoContrast", cutoff, ignore)
        self.prob = check_prob("RandomAutoContrast", prob)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        check_uint8("RandomAutoContrast", check_gray_or_rgb("RandomAutoContrast", image))
        if rng.random() < self.prob:
            return autocontrast(image, self.cutoff, self.ignore)
        return image

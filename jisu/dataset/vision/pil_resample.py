"""Pillow's bicubic resize (``Inter.PILCUBIC``), without Pillow.

OpenCV's ``INTER_CUBIC`` samples a fixed 4x4 neighbourhood, so when it shrinks an image it
skips pixels and aliases. Pillow's resampler (``Image.resize(..., BICUBIC)``, which MindSpore's
``Inter.PILCUBIC`` reproduces) widens the cubic kernel by the shrink factor, so every input
pixel contributes: an antialiased shrink. This module computes the same weights (Keys' cubic
with a = -0.5, support 2 x the scale, normalised per output pixel) and applies them in two
passes, horizontal first, rounding the intermediate to the image's integer range, as Pillow
does. Pillow rounds with fixed-point weights; float weights here agree with it within one
level. The passes are NumPy gathers and products (they release the GIL).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: Keys' cubic convolution parameter Pillow uses for BICUBIC
_A = -0.5


def _cubic(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    near = ((_A + 2.0) * x - (_A + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * _A
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


@lru_cache(maxsize=64)
def resample_taps(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Output pixel i reads input pixels ``index[i]`` with ``weight[i]`` (Pillow's
    ``precompute_coeffs`` for the bicubic filter; rows padded with zero weights)."""
    scale = size_in / size_out
    filter_scale = max(scale, 1.0)
    support = 2.0 * filter_scale
    rows = []
    for i in range(size_out):
        centre = (i + 0.5) * scale
        low = max(int(centre - support + 0.5), 0)
        high = min(int(centre + support + 0.5), size_in)
        taps = _cubic((np.arange(low, high) - centre + 0.5) / filter_scale)
        total = taps.sum()
        rows.append((low, taps / total if total else taps))
    width = max(len(taps) for _, taps in rows)
    index = np.zeros((size_out, width), np.intp)
    weight = np.zeros((size_out, width), np.float32)
    for i, (low, taps) in enumerate(rows):
        index[i] = np.minimum(np.arange(low, low + width), size_in - 1)
        weight[i, : len(taps)] = taps
    index.setflags(write=False)
    weight.setflags(write=False)
    return index, weight


def _resample(planes: np.ndarray, axis: int, size: int, dtype: np.dtype) -> np.ndarray:
    """One pass along ``axis`` (0: rows, 1: columns) of an (H, W, C) float32 array."""
    index, weight = resample_taps(planes.shape[axis], size)
    shape = (-1, 1, 1) if axis == 0 else (1, -1, 1)
    out = np.zeros(
        (size, planes.shape[1], planes.shape[2])
        if axis == 0
        else (planes.shape[0], size, planes.shape[2]),
        np.float32,
    )
    for k in range(index.shape[1]):
        taps = np.take(planes, index[:, k], axis=axis)
        taps *= weight[:, k].reshape(shape)
        out += taps
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        np.floor(out + 0.5, out=out)
        np.clip(out, info.min, info.max, out=out)
    return out


def pil_bicubic_resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """``image`` (HW or HWC, any real dtype) resized to (height, width) as Pillow's bicubic
    resampler does, horizontal pass first (as MindSpore's PILCUBIC; recent Pillow does the
    vertical pass first when the height shrinks and the width grows, which can differ by a few
    levels); integer images are rounded and clipped after each pass."""
    if height < 1 or width < 1:
        raise ValueError(f"PILCUBIC resize: the size must be positive. Received {(height, width)}")
    h, w = image.shape[:2]
    planes = image.reshape(h, w, -1).astype(np.float32)
    if w != width:
        planes = _resample(planes, 1, width, image.dtype)
    if h != height:
        planes = _resample(planes, 0, height, image.dtype)
    return planes.astype(image.dtype).reshape(height, width, *image.shape[2:])

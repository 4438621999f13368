"""MindSpore 2.10's ``AdjustHue`` on uint8 images, bit for bit.

MindSpore converts the image to 8-bit "full range" HSV with OpenCV (hue in 0-255 for a whole
turn), adds ``uint8(hue_factor * 255)`` to the hue with 8-bit wrap-around, and converts back.
The way back is where OpenCV versions differ: MindSpore's bundled OpenCV converts each image row
in blocks of 32 pixels with AVX2 code that *truncates* the 0-255 result (later OpenCV rounds),
and the last ``width % 32`` pixels of a row with scalar code that rounds; both evaluate
``1 - s * h`` as one fused multiply-add (GCC contracts it). :func:`hsv_full_to_rgb` reproduces
both paths (checked against MindSpore on all 2**24 colours, for several hue shifts, in both
paths). The forward conversion (an integer algorithm) is the same in every OpenCV 4, so
OpenCV's own is used.
"""

from __future__ import annotations

import cv2
import numpy as np

_F32 = np.float32
_F64 = np.float64
_INV255 = _F32(1.0) / _F32(255.0)
_HSCALE = _F32(6.0) / _F32(255.0)  # sectors per hue level (full range: 255 levels)
_BLOCK = 32  # pixels per AVX2 block (4 vectors of 8 floats)
#: per sector, the tab entries giving (b, g, r): 0 = v, 1 = v(1-s), 2 = v(1-sh), 3 = v(1-s(1-h))
_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _fused(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to float32 (a fused multiply-add: the product of two floats
    is exact in float64)."""
    return (a.astype(_F64) * b.astype(_F64) + c).astype(_F32)


def _hsv_to_rgb(hsv: np.ndarray, vector_path: bool) -> np.ndarray:
    """(N, 3) uint8 full-range HSV to (N, 3) uint8 RGB by one of OpenCV's two paths."""
    h = hsv[:, 0].astype(_F32) * _HSCALE
    s = hsv[:, 1].astype(_F32) * _INV255
    v = hsv[:, 2].astype(_F32) * _INV255
    if vector_path:  # sector = trunc(h) mod 6 (a full turn wraps to sector 0)
        whole = np.trunc(h)
        sector = whole - np.trunc(whole * _F32(1.0 / 6.0)) * _F32(6.0)
    else:  # h = fmod(h, 6); sector = floor(h)
        h = np.fmod(h, _F32(6.0))
        whole = sector = np.floor(h)
    frac = h - whole
    one = np.ones_like(frac)
    tab = np.stack(
        [
            v,
            v * (one - s),
            v * _fused(-s, frac, one),
            v * _fused(-s, one - frac, one),
        ],
        axis=-1,
    )
    bgr = np.take_along_axis(tab, _SECTORS[sector.astype(np.intp)], axis=-1) * _F32(255.0)
    if not vector_path:  # (s == 0 needs no case of its own: every tab entry is then v)
        bgr = np.rint(bgr)
    out = np.clip(np.trunc(bgr), 0, 255).astype(np.uint8)
    return out[:, ::-1]


def hsv_full_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """An (H, W, 3) uint8 full-range HSV image to RGB as MindSpore 2.10's OpenCV converts it:
    the first ``W // 32 * 32`` pixels of each row truncated, the rest rounded."""
    height, width = hsv.shape[:2]
    split = width // _BLOCK * _BLOCK
    out = np.empty_like(hsv)
    if split:
        block = hsv[:, :split].reshape(-1, 3)
        out[:, :split] = _hsv_to_rgb(block, True).reshape(height, split, 3)
    if split < width:
        tail = hsv[:, split:].reshape(-1, 3)
        out[:, split:] = _hsv_to_rgb(tail, False).reshape(height, width - split, 3)
    return out


def adjust_hue_uint8(image: np.ndarray, factor: float) -> np.ndarray:
    """MindSpore 2.10's ``AdjustHue(factor)`` of an (H, W, 3) uint8 RGB image: the hue in
    256 levels, shifted by ``int(float32(factor) * 255)`` (toward zero; a negative shift wraps
    as a uint8 does), then converted back as :func:`hsv_full_to_rgb` does."""
    hsv = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2HSV_FULL)
    shift = int(_F32(factor) * _F32(255.0)) % 256
    hsv[..., 0] = (hsv[..., 0].astype(np.int32) + shift).astype(np.uint8)
    return hsv_full_to_rgb(hsv)

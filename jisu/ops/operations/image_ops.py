"""MindSpore's image primitives (``mindspore.ops.operations.image_ops``: ``ResizeBilinear``,
``ResizeBilinearV2``, ``ResizeNearestNeighbor``, ``CropAndResize``) on torch.

The resizes follow TensorFlow's coordinate rules, as MindSpore's kernels do: by default a
destination pixel ``i`` samples source ``i * in / out`` (no half-pixel shift; torch has no
such mode), ``align_corners=True`` maps corner to corner, ``half_pixel_centers=True`` samples
``(i + 0.5) * in / out - 0.5``.
"""

from __future__ import annotations

from typing import Any

import torch

from ..primitive import Primitive
from ._detection_ops import bilinear_rows


def _size_arg(owner: str, size: Any) -> tuple[int, int]:
    if isinstance(size, torch.Tensor):
        size = size.tolist()  # host sync: a size sets the output shape
    if (
        not isinstance(size, (tuple, list))
        or len(size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size)
    ):
        raise ValueError(f"{owner}: size must be (height, width) of ints > 0. Received {size!r}")
    return tuple(size)


def _flags(owner: str, align_corners: Any, half_pixel_centers: Any) -> None:
    for name, v in (("align_corners", align_corners), ("half_pixel_centers", half_pixel_centers)):
        if not isinstance(v, bool):
            raise TypeError(f"{owner}: {name} must be a bool. Received {name}={v!r}")
    if align_corners and half_pixel_centers:
        raise ValueError(
            f"{owner}: half_pixel_centers=True needs align_corners=False. "
            "Received align_corners=True"
        )


def _source(n_in: int, n_out: int, align: bool, half: bool, device) -> torch.Tensor:
    """Source coordinates (float32) of the ``n_out`` destination pixels along one axis."""
    i = torch.arange(n_out, dtype=torch.float32, device=device)
    if align:
        return i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    scale = n_in / n_out
    return (i + 0.5) * scale - 0.5 if half else i * scale


def _linear_axis(x: torch.Tensor, dim: int, n_out: int, align: bool, half: bool) -> torch.Tensor:
    n_in = x.shape[dim]
    src = _source(n_in, n_out, align, half, x.device)
    low = src.floor()
    frac = (src - low).to(x.dtype)
    lo = low.long().clamp(0, n_in - 1)
    hi = (low.long() + 1).clamp(0, n_in - 1)
    shape = [1] * x.dim()
    shape[dim] = n_out
    frac = frac.reshape(shape)
    a, b = x.index_select(dim, lo), x.index_select(dim, hi)
    return a + (b - a) * frac


def resize_bilinear(x: torch.Tensor, size: tuple[int, int], align: bool, half: bool):
    """(N, C, H, W) ``x`` resized to ``size`` by TensorFlow's bilinear rule; float outputs
    (integer inputs become float32)."""
    if not x.is_floating_point():
        x = x.float()
    return _linear_axis(_linear_axis(x, 2, size[0], align, half), 3, size[1], align, half)


class ResizeBilinearV2(Primitive):
    """Bilinear resize of (N, C, H, W) ``x``: ``ResizeBilinearV2(align_corners=False,
    half_pixel_centers=False)(x, size)``."""

    def __init__(self, align_corners: bool = False, half_pixel_centers: bool = False) -> None:
        _flags(type(self).__name__, align_corners, half_pixel_centers)
        self.align_corners, self.half_pixel_centers = align_corners, half_pixel_centers

    def __call__(self, x: torch.Tensor, size: Any) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"ResizeBilinearV2: x must be NCHW. Received {tuple(x.shape)}")
        size = _size_arg("ResizeBilinearV2", size)
        return resize_bilinear(x, size, self.align_corners, self.half_pixel_centers)


class ResizeBilinear(ResizeBilinearV2):
    """MindSpore 2.0's bilinear resize with the size fixed at construction:
    ``ResizeBilinear(size, align_corners=False, half_pixel_centers=False)(x)``."""

    def __init__(
        self, size: Any, align_corners: bool = False, half_pixel_centers: bool = False
    ) -> None:
        super().__init__(align_corners, half_pixel_centers)
        self.size = _size_arg("ResizeBilinear", size)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().__call__(x, self.size)


class ResizeNearestNeighbor(Primitive):
    """Nearest-neighbour resize of (N, C, H, W) ``x`` to ``size``:
    ``ResizeNearestNeighbor(size, align_corners=False, half_pixel_centers=False)(x)``;
    source ``floor(i * in / out)`` (``round`` with align_corners, ``floor((i + 0.5) * in /
    out)`` with half_pixel_centers)."""

    def __init__(
        self, size: Any, align_corners: bool = False, half_pixel_centers: bool = False
    ) -> None:
        _flags("ResizeNearestNeighbor", align_corners, half_pixel_centers)
        self.size = _size_arg("ResizeNearestNeighbor", size)
        self.align_corners, self.half_pixel_centers = align_corners, half_pixel_centers

    def _index(self, n_in: int, n_out: int, device) -> torch.Tensor:
        i = torch.arange(n_out, dtype=torch.float32, device=device)
        if self.align_corners:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            src = torch.floor(i * scale + 0.5)  # C's roundf: halves away from zero
        elif self.half_pixel_centers:
            src = torch.floor((i + 0.5) * (n_in / n_out))
        else:
            src = torch.floor(i * (n_in / n_out))
        return src.long().clamp(0, n_in - 1)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"ResizeNearestNeighbor: x must be NCHW. Received {tuple(x.shape)}")
        h, w = self.size
        x = x.index_select(2, self._index(x.shape[2], h, x.device))
        return x.index_select(3, self._index(x.shape[3], w, x.device))


def _pixel_centers(lo: torch.Tensor, hi: torch.Tensor, size: int, count: int) -> torch.Tensor:
    """MindSpore's "bilinear_v2" sample rows: the box truncated to whole pixels (inclusive
    ends), ``count`` cells over it, each sampled at its centre: (K, count)."""
    first, last = torch.trunc(lo * size), torch.trunc(hi * size)
    step = (last - first + 1) / count
    i = torch.arange(count, dtype=torch.float32, device=lo.device)
    return first[:, None] + (i[None, :] + 0.5) * step[:, None] - 0.5


class CropAndResize(Primitive):
    """Crops of NHWC ``image`` boxes resized to ``crop_size``, as TensorFlow's:
    ``CropAndResize(method="bilinear", extrapolation_value=0.0)(image, boxes, box_index,
    crop_size)``; ``boxes`` (K, 4) are normalized (y1, x1, y2, x2), ``box_index`` the image of
    each; gives float32 (K, crop_h, crop_w, C), ``extrapolation_value`` outside the image.
    "bilinear_v2" (MindSpore's variant) samples the centres of ``crop_size`` cells over the
    box cut to whole pixels, clamped to the image's edge."""

    def __init__(self, method: str = "bilinear", extrapolation_value: float = 0.0) -> None:
        if method not in ("bilinear", "nearest", "bilinear_v2"):
            raise ValueError(
                "CropAndResize: method must be 'bilinear', 'nearest' or 'bilinear_v2'. "
                f"Received method={method!r}"
            )
        self.method, self.extrapolation_value = method, float(extrapolation_value)

    def __call__(
        self, image: torch.Tensor, boxes: torch.Tensor, box_index: torch.Tensor, crop_size: Any
    ) -> torch.Tensor:
        if image.dim() != 4:
            raise ValueError(f"CropAndResize: image must be NHWC. Received {tuple(image.shape)}")
        ch, cw = _size_arg("CropAndResize", crop_size)
        n, h, w, c = image.shape
        b = boxes.float()

        def coords(lo, hi, size, count):
            if count == 1:
                return (0.5 * (lo + hi) * (size - 1))[:, None]
            step = (hi - lo) * (size - 1) / (count - 1)
            i = torch.arange(count, dtype=torch.float32, device=b.device)
            return lo[:, None] * (size - 1) + i[None, :] * step[:, None]

        if self.method == "bilinear_v2":
            coords = _pixel_centers
        ys = coords(b[:, 0], b[:, 2], h, ch)[:, :, None].expand(-1, ch, cw)
        xs = coords(b[:, 1], b[:, 3], w, cw)[:, None, :].expand(-1, ch, cw)
        inside = (ys >= 0) & (ys <= h - 1) & (xs >= 0) & (xs <= w - 1)
        if self.method == "bilinear_v2":  # clamps to the edge, never extrapolates
            inside = torch.ones_like(inside)
        table = image.reshape(n * h * w, c).float()
        base = (box_index.long() * h * w)[:, None, None]
        if self.method == "nearest":
            yy, xx = torch.round(ys).clamp(0, h - 1).long(), torch.round(xs).clamp(0, w - 1).long()
            vals = table[base + yy * w + xx]
        else:
            vals = bilinear_rows(table, base, ys.clamp(0, h - 1), xs.clamp(0, w - 1), h, w)
        fill = torch.full_like(vals, self.extrapolation_value)
        return torch.where(inside[..., None], vals, fill)


__all__ = ["CropAndResize", "ResizeBilinear", "ResizeBilinearV2", "ResizeNearestNeighbor"]

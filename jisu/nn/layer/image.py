"""MindSpore's image cells: ``ResizeBilinear`` (MindSpore 2.0's; 2.10 dropped it),
``CentralCrop``, ``SSIM``, ``PSNR``, ``Unfold`` (TensorFlow's ``extract_image_patches``) and
``PixelShuffle``/``PixelUnshuffle``, all on (N, C, H, W) tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..cell import Cell
from ._padding import same_pad
from .conv import Conv2d

__all__ = [
    "PSNR",
    "SSIM",
    "CentralCrop",
    "PixelShuffle",
    "PixelUnshuffle",
    "ResizeBilinear",
    "Unfold",
]


def _source_index(
    size: int, out: int, align_corners: bool, half_pixel: bool, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(lower index, upper index, weight of the upper) of every output position along one
    axis, by the legacy ``ResizeBilinear`` rules (TensorFlow 1's)."""
    dst = torch.arange(out, dtype=torch.float32, device=device)
    if align_corners:
        scale = (size - 1) / (out - 1) if out > 1 else 0.0
        src = dst * scale
    elif half_pixel:
        src = ((dst + 0.5) * (size / out) - 0.5).clamp_min(0.0)
    else:  # "asymmetric": the output's corner meets the input's
        src = dst * (size / out)
    low = src.floor()
    frac = src - low
    low = low.long().clamp(0, size - 1)
    high = (low + 1).clamp(max=size - 1)
    return low, high, frac


class ResizeBilinear(Cell):
    """Bilinear resize of (N, C, H, W), MindSpore 2.0's ``nn.ResizeBilinear`` (removed in
    later MindSpore): called as ``resize(x, size=(h, w))`` or ``resize(x, scale_factor=k)``
    (an int), with ``align_corners`` per call.

    Without ``align_corners`` or ``half_pixel_centers`` an output pixel ``i`` samples the input
    at ``i · in / out`` (the old TensorFlow rule, *not* torch's ``align_corners=False``);
    ``half_pixel_centers=True`` is torch's ``align_corners=False``; ``align_corners=True`` is
    torch's.
    """

    def __init__(self, half_pixel_centers: bool = False) -> None:
        super().__init__()
        if not isinstance(half_pixel_centers, bool):
            raise TypeError(
                "ResizeBilinear: half_pixel_centers must be a bool. "
                f"Received half_pixel_centers={half_pixel_centers!r}"
            )
        self.half_pixel_centers = half_pixel_centers

    def construct(
        self,
        x: torch.Tensor,
        size: Any = None,
        scale_factor: int | None = None,
        align_corners: bool = False,
    ) -> torch.Tensor:
        if not isinstance(align_corners, bool):
            raise TypeError(
                f"ResizeBilinear: align_corners must be a bool. Received {align_corners!r}"
            )
        if (size is None) == (scale_factor is None):
            raise ValueError("ResizeBilinear: give exactly one of size and scale_factor")
        if align_corners and self.half_pixel_centers:
            raise ValueError(
                "ResizeBilinear: align_corners and half_pixel_centers cannot both be True"
            )
        if x.dim() != 4:
            raise ValueError(
                f"ResizeBilinear: the input must be 4-d. Received shape={tuple(x.shape)}"
            )
        if size is not None:
            if not isinstance(size, (tuple, list)) or len(size) != 2 or min(size) < 1:
                raise ValueError(f"ResizeBilinear: size must be (h, w) >= 1. Received {size!r}")
            out_h, out_w = int(size[0]), int(size[1])
        else:
            if (
                isinstance(scale_factor, bool)
                or not isinstance(scale_factor, int)
                or scale_factor < 1
            ):
                raise ValueError(
                    f"ResizeBilinear: scale_factor must be an int >= 1. Received {scale_factor!r}"
                )
            out_h, out_w = x.shape[2] * scale_factor, x.shape[3] * scale_factor
        dtype = x.dtype
        x = x.float()
        rows = _source_index(x.shape[2], out_h, align_corners, self.half_pixel_centers, x.device)
        cols = _source_index(x.shape[3], out_w, align_corners, self.half_pixel_centers, x.device)
        top, bottom = x[:, :, rows[0]], x[:, :, rows[1]]
        x = top + (bottom - top) * rows[2].view(-1, 1)
        left, right = x[..., cols[0]], x[..., cols[1]]
        return (left + (right - left) * cols[2]).to(dtype)


class CentralCrop(Cell):
    """The central ``central_fraction`` (in (0, 1]) of each image of (C, H, W) or (N, C, H, W):
    ``int((h - h·fraction) / 2)`` rows off the top and as many off the bottom (MindSpore's
    rule), likewise the columns."""

    def __init__(self, central_fraction: float) -> None:
        super().__init__()
        if not isinstance(central_fraction, float):
            raise TypeError(
                "CentralCrop: central_fraction must be a float. "
                f"Received central_fraction={central_fraction!r}"
            )
        if not 0.0 < central_fraction <= 1.0:
            raise ValueError(
                f"CentralCrop: central_fraction must be in (0.0, 1.0]. Received {central_fraction}"
            )
        self.central_fraction = central_fraction

    def construct(self, image: torch.Tensor) -> torch.Tensor:
        if image.dim() not in (3, 4):
            raise ValueError(
                f"CentralCrop: the image must be 3-d or 4-d. Received shape={tuple(image.shape)}"
            )
        if self.central_fraction == 1.0:
            return image
        h, w = image.shape[-2:]
        top = int((float(h) - float(h * self.central_fraction)) / 2)
        left = int((float(w) - float(w * self.central_fraction)) / 2)
        return image[..., top : h - top, left : w - left]


def _as_unit_float(img: torch.Tensor) -> tuple[torch.Tensor, float]:
    """``img`` in float32, integers scaled to [0, 1] by their dtype's maximum (MindSpore's
    rule), and that maximum (1.0 for floats)."""
    if img.is_floating_point():
        return img.float(), 1.0
    top = float(torch.iinfo(img.dtype).max)
    return img.float() / top, top


def _check_max_val(owner: str, max_val: Any) -> float:
    if isinstance(max_val, bool) or not isinstance(max_val, (int, float)):
        raise TypeError(f"{owner}: max_val must be a number. Received max_val={max_val!r}")
    if max_val <= 0:
        raise ValueError(f"{owner}: max_val must be > 0. Received max_val={max_val}")
    return max_val


def _gauss_window(size: int, sigma: float) -> np.ndarray:
    """MindSpore's SSIM window: a normalized 2-d Gaussian of ``size`` x ``size``."""
    grid = np.arange(-size // 2 + 1, size // 2 + 1, dtype=np.float32) ** 2
    g = np.exp(-(grid[:, None] + grid[None, :]) / (2 * sigma**2))
    return (g / g.sum()).astype(np.float32)[None, None]


class SSIM(Cell):
    """Structural similarity of two image batches (N, C, H, W): the mean over channels and
    valid (unpadded) windows of a ``filter_size`` Gaussian (``filter_sigma``), one value per
    image, as MindSpore's. The window is the frozen weight of a child ``conv`` (MindSpore's
    parameter ``conv.weight``).

    Args:
        max_val: the images' dynamic range (1.0 or 255 ...). Default 1.0.
        filter_size: the window's side (<= H, W). Default 11.
        filter_sigma: the Gaussian's sigma. Default 1.5.
        k1, k2: SSIM's constants. Defaults 0.01, 0.03.
    """

    def __init__(
        self,
        max_val: float = 1.0,
        filter_size: int = 11,
        filter_sigma: float = 1.5,
        k1: float = 0.01,
        k2: float = 0.03,
    ) -> None:
        super().__init__()
        self.max_val = _check_max_val("SSIM", max_val)
        if isinstance(filter_size, bool) or not isinstance(filter_size, int) or filter_size < 1:
            raise ValueError(f"SSIM: filter_size must be an int >= 1. Received {filter_size!r}")
        if not isinstance(filter_sigma, float) or filter_sigma <= 0:
            raise ValueError(f"SSIM: filter_sigma must be a float > 0. Received {filter_sigma!r}")
        for name, value in (("k1", k1), ("k2", k2)):
            if not isinstance(value, float):
                raise TypeError(f"SSIM: {name} must be a float. Received {name}={value!r}")
        self.filter_size, self.filter_sigma, self.k1, self.k2 = filter_size, filter_sigma, k1, k2
        window = torch.from_numpy(_gauss_window(filter_size, filter_sigma))
        self.conv = Conv2d(1, 1, filter_size, pad_mode="valid", weight_init=window)
        self.conv.weight.requires_grad_(False)

    def construct(self, img1: torch.Tensor, img2: torch.Tensor) -> torch.Tensor:
        if img1.dim() != 4 or img1.shape != img2.shape or img1.dtype != img2.dtype:
            raise ValueError(
                "SSIM: img1 and img2 must be 4-d with the same shape and dtype. Received "
                f"{tuple(img1.shape)} {img1.dtype} and {tuple(img2.shape)} {img2.dtype}"
            )
        if min(img1.shape[-2:]) < self.filter_size:
            raise ValueError(
                f"SSIM: the images' height and width must be >= filter_size={self.filter_size}. "
                f"Received shape={tuple(img1.shape)}"
            )
        x, top = _as_unit_float(img1)
        y, _ = _as_unit_float(img2)
        max_val = self.max_val / top if top > 1 else self.max_val
        c1, c2 = (self.k1 * max_val) ** 2, (self.k2 * max_val) ** 2
        n, c, h, w = x.shape
        weight = self.conv.weight.float()

        def blur(t: torch.Tensor) -> torch.Tensor:
            return F.conv2d(t.reshape(n * c, 1, h, w), weight)

        mu1, mu2 = blur(x), blur(y)
        mu1_sq, mu2_sq, mu12 = mu1 * mu1, mu2 * mu2, mu1 * mu2
        var1, var2, cov = blur(x * x) - mu1_sq, blur(y * y) - mu2_sq, blur(x * y) - mu12
        ssim = (2 * mu12 + c1) * (2 * cov + c2) / ((mu1_sq + mu2_sq + c1) * (var1 + var2 + c2))
        return ssim.reshape(n, c, -1).mean(-1).mean(-1)


class PSNR(Cell):
    """Peak signal-to-noise ratio of two image batches (..., C, H, W) in dB, one value per
    image: ``10 · log10(max_val² / mse)``. Integer images are scaled to [0, 1] by their dtype's
    maximum (and ``max_val`` with them), as MindSpore does."""

    def __init__(self, max_val: float = 1.0) -> None:
        super().__init__()
        self.max_val = _check_max_val("PSNR", max_val)

    def construct(self, img1: torch.Tensor, img2: torch.Tensor) -> torch.Tensor:
        if img1.dim() != 4 or img1.shape != img2.shape or img1.dtype != img2.dtype:
            raise ValueError(
                "PSNR: img1 and img2 must be 4-d with the same shape and dtype. Received "
                f"{tuple(img1.shape)} {img1.dtype} and {tuple(img2.shape)} {img2.dtype}"
            )
        x, top = _as_unit_float(img1)
        y, _ = _as_unit_float(img2)
        max_val = self.max_val / top if top > 1 else self.max_val
        mse = torch.square(x - y).mean(dim=(-3, -2, -1))
        return 10 * torch.log10(max_val**2 / mse)


def _patch_arg(owner: str, name: str, value: Any) -> tuple[int, int]:
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{owner}: {name} must be a tuple or list. Received {name}={value!r}")
    if len(value) != 4 or value[0] != 1 or value[3] != 1:
        raise ValueError(f"{owner}: {name} must be [1, row, col, 1]. Received {name}={value!r}")
    row, col = value[1], value[2]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (row, col)):
        raise ValueError(f"{owner}: {name}'s row and col must be ints >= 1. Received {value!r}")
    return row, col


class Unfold(Cell):
    """Image patches (TensorFlow's ``extract_image_patches``) of (N, C, H, W): each output
    position holds the ``ksize_row x ksize_col`` patch under it, flattened with the channel
    fastest, as (N, ksize_row·ksize_col·C, out_rows, out_cols).

    Args:
        ksizes, strides, rates: ``[1, row, col, 1]`` each: the patch size, the step between
            patches, the gap between a patch's pixels (dilation).
        padding: "valid" (patches inside the image) or "same" (zeros beyond it; out =
            ceil(in / stride)), any case. Default "valid".
    """

    def __init__(self, ksizes: Any, strides: Any, rates: Any, padding: str = "valid") -> None:
        super().__init__()
        self.ksizes = _patch_arg("Unfold", "ksizes", ksizes)
        self.strides = _patch_arg("Unfold", "strides", strides)
        self.rates = _patch_arg("Unfold", "rates", rates)
        if not isinstance(padding, str) or padding.lower() not in ("same", "valid"):
            raise ValueError(f"Unfold: padding must be 'same' or 'valid'. Received {padding!r}")
        self.padding = padding.lower()

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"Unfold: the input must be 4-d. Received shape={tuple(x.shape)}")
        n, c, h, w = x.shape
        if self.padding == "same":
            pads = [same_pad(s, k, st, r) for s, k, st, r in zip(
                (h, w), self.ksizes, self.strides, self.rates)]  # fmt: skip
            x = F.pad(x, [*pads[1], *pads[0]])
        out_h = (x.shape[2] - (self.ksizes[0] - 1) * self.rates[0] - 1) // self.strides[0] + 1
        out_w = (x.shape[3] - (self.ksizes[1] - 1) * self.rates[1] - 1) // self.strides[1] + 1
        cols = F.unfold(x, self.ksizes, dilation=self.rates, stride=self.strides)
        k = self.ksizes[0] * self.ksizes[1]
        return cols.reshape(n, c, k, out_h, out_w).transpose(1, 2).reshape(n, k * c, out_h, out_w)


class PixelShuffle(Cell, torch.nn.PixelShuffle):
    """(..., C·r², H, W) -> (..., C, H·r, W·r) (depth to space), ``r = upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        if isinstance(upscale_factor, bool) or not isinstance(upscale_factor, int):
            raise TypeError(
                f"PixelShuffle: upscale_factor must be an int. Received {upscale_factor!r}"
            )
        torch.nn.PixelShuffle.__init__(self, upscale_factor)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.pixel_shuffle(x, self.upscale_factor)


class PixelUnshuffle(Cell, torch.nn.PixelUnshuffle):
    """(..., C, H·r, W·r) -> (..., C·r², H, W) (space to depth), ``r = downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        if isinstance(downscale_factor, bool) or not isinstance(downscale_factor, int):
            raise TypeError(
                f"PixelUnshuffle: downscale_factor must be an int. Received {downscale_factor!r}"
            )
        torch.nn.PixelUnshuffle.__init__(self, downscale_factor)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.pixel_unshuffle(x, self.downscale_factor)

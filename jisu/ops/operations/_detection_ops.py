"""MindSpore's detection primitives (``IOU``, ``CheckValid``, ``BoundingBoxEncode``,
``BoundingBoxDecode``, ``NMSWithMask``, ``ROIAlign``) on torch.

Boxes are (x1, y1, x2, y2) in pixels with MindSpore's inclusive convention: a box is
``x2 - x1 + 1`` wide, as in its kernels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..primitive import Primitive


def _check_boxes(owner: str, name: str, boxes: torch.Tensor, cols: int = 4) -> None:
    if boxes.dim() != 2 or boxes.shape[1] < cols:
        raise ValueError(
            f"{owner}: {name} must be (N, {cols}). Received shape {tuple(boxes.shape)}"
        )


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` in at least float32: pixel areas overflow float16 (65504) from 256 x 256 up."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _area(b: torch.Tensor) -> torch.Tensor:
    return (b[..., 2] - b[..., 0] + 1) * (b[..., 3] - b[..., 1] + 1)


def _overlap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The (len(a), len(b)) intersection areas (inclusive pixels)."""
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:4], b[None, :, 2:4])
    wh = (rb - lt + 1).clamp_min(0)
    return wh[..., 0] * wh[..., 1]


class IOU(Primitive):
    """Overlap of every ground-truth box with every anchor box, (M, N): ``IOU(mode="iou" |
    "iof")(anchor_boxes (N, 4), gt_boxes (M, 4))``; "iof" divides by the ground truth's
    area."""

    def __init__(self, mode: str = "iou") -> None:
        if mode not in ("iou", "iof"):
            raise KeyError(f"IOU: mode must be 'iou' or 'iof'. Received mode={mode!r}")
        self.mode = mode

    def __call__(self, anchor_boxes: torch.Tensor, gt_boxes: torch.Tensor) -> torch.Tensor:
        _check_boxes("IOU", "anchor_boxes", anchor_boxes)
        _check_boxes("IOU", "gt_boxes", gt_boxes)
        dtype = anchor_boxes.dtype
        anchor_boxes, gt_boxes = _wide(anchor_boxes), _wide(gt_boxes)
        inter = _overlap(gt_boxes, anchor_boxes)
        gt_area = _area(gt_boxes)[:, None]
        if self.mode == "iof":
            return (inter / gt_area).to(dtype)
        return (inter / (gt_area + _area(anchor_boxes)[None, :] - inter)).to(dtype)


class CheckValid(Primitive):
    """Which boxes lie inside the image: ``CheckValid()(bboxes (N, 4), img_metas (height,
    width, ratio))`` is True where ``x1, y1 >= 0``, ``x2 <= width * ratio - 1`` and
    ``y2 <= height * ratio - 1``."""

    def __call__(self, bboxes: torch.Tensor, img_metas: torch.Tensor) -> torch.Tensor:
        _check_boxes("CheckValid", "bboxes", bboxes)
        h = img_metas[0] * img_metas[2] - 1
        w = img_metas[1] * img_metas[2] - 1
        return (bboxes[:, 0] >= 0) & (bboxes[:, 1] >= 0) & (bboxes[:, 2] <= w) & (bboxes[:, 3] <= h)


def _four(owner: str, name: str, value: Any) -> tuple[float, ...]:
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        raise ValueError(f"{owner}: {name} must be a tuple of 4 floats. Received {name}={value!r}")
    return tuple(float(v) for v in value)


def _centers(b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    w = b[:, 2] - b[:, 0] + 1
    h = b[:, 3] - b[:, 1] + 1
    return (b[:, 0] + b[:, 2]) * 0.5, (b[:, 1] + b[:, 3]) * 0.5, w, h


class BoundingBoxEncode(Primitive):
    """Regression targets of ``groundtruth_box`` from ``anchor_box`` (both (N, 4)):
    ``((dx, dy, dw, dh) - means) / stds`` with ``dx = (gx - px) / pw``, ``dw = log(gw / pw)``."""

    def __init__(self, means: Any = (0.0, 0.0, 0.0, 0.0), stds: Any = (1.0, 1.0, 1.0, 1.0)):
        self.means = _four("BoundingBoxEncode", "means", means)
        self.stds = _four("BoundingBoxEncode", "stds", stds)

    def __call__(self, anchor_box: torch.Tensor, groundtruth_box: torch.Tensor) -> torch.Tensor:
        dtype = anchor_box.dtype
        px, py, pw, ph = _centers(_wide(anchor_box))
        gx, gy, gw, gh = _centers(_wide(groundtruth_box))
        deltas = torch.stack(
            [(gx - px) / pw, (gy - py) / ph, torch.log(gw / pw), torch.log(gh / ph)], dim=-1
        )
        means = deltas.new_tensor(self.means)
        return ((deltas - means) / deltas.new_tensor(self.stds)).to(dtype)


class BoundingBoxDecode(Primitive):
    """Boxes from ``anchor_box`` and regression ``deltas`` (both (N, 4)), the inverse of
    :class:`BoundingBoxEncode`; ``dw``/``dh`` clipped to ``|log(wh_ratio_clip)|`` and the
    boxes to ``[0, max_shape[1]] x [0, max_shape[0]]`` (``max_shape`` = (height, width))."""

    def __init__(
        self,
        max_shape: Any,
        means: Any = (0.0, 0.0, 0.0, 0.0),
        stds: Any = (1.0, 1.0, 1.0, 1.0),
        wh_ratio_clip: float = 0.016,
    ) -> None:
        if not isinstance(max_shape, (tuple, list)) or len(max_shape) != 2:
            raise ValueError(
                f"BoundingBoxDecode: max_shape must be (height, width). Received {max_shape!r}"
            )
        self.max_shape = tuple(max_shape)
        self.means = _four("BoundingBoxDecode", "means", means)
        self.stds = _four("BoundingBoxDecode", "stds", stds)
        self.wh_ratio_clip = float(wh_ratio_clip)

    def __call__(self, anchor_box: torch.Tensor, deltas: torch.Tensor) -> torch.Tensor:
        dtype, deltas, anchor_box = anchor_box.dtype, _wide(deltas), _wide(anchor_box)
        d = deltas * deltas.new_tensor(self.stds) + deltas.new_tensor(self.means)
        limit = abs(math.log(self.wh_ratio_clip))
        dw, dh = d[:, 2].clamp(-limit, limit), d[:, 3].clamp(-limit, limit)
        px, py, pw, ph = _centers(anchor_box)
        gx, gy = px + pw * d[:, 0], py + ph * d[:, 1]
        gw, gh = pw * torch.exp(dw), ph * torch.exp(dh)
        height, width = self.max_shape
        x1 = (gx - (gw - 1) * 0.5).clamp(0, width)
        y1 = (gy - (gh - 1) * 0.5).clamp(0, height)
        x2 = (gx + (gw - 1) * 0.5).clamp(0, width)
        y2 = (gy + (gh - 1) * 0.5).clamp(0, height)
        return torch.stack([x1, y1, x2, y2], dim=-1).to(dtype)


class NMSWithMask(Primitive):
    """Greedy non-maximum suppression of (N, 5) boxes (x1, y1, x2, y2, score):
    ``NMSWithMask(iou_threshold=0.5)(bboxes)`` returns ``(output_boxes, output_idx,
    selected_mask)``: the boxes sorted by descending score, the int32 index of each in
    ``bboxes`` and the bool mask of the kept ones (a box is dropped when its IoU with a kept,
    higher-scored box exceeds ``iou_threshold``; here boxes are ``x2 - x1`` wide, as in
    MindSpore's NMS kernel)."""

    def __init__(self, iou_threshold: float = 0.5) -> None:
        if not isinstance(iou_threshold, float):
            raise TypeError(
                f"NMSWithMask: iou_threshold must be a float. Received {iou_threshold!r}"
            )
        self.iou_threshold = iou_threshold

    def __call__(self, bboxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _check_boxes("NMSWithMask", "bboxes", bboxes, 5)
        if bboxes.shape[0] == 0:
            raise ValueError("NMSWithMask: bboxes must hold at least one box")
        order = torch.argsort(bboxes[:, 4], descending=True, stable=True)
        boxes = bboxes[order]
        wide = _wide(boxes)
        # NMS measures boxes as x2 - x1 wide (no inclusive + 1), unlike IOU
        lt = torch.maximum(wide[:, None, :2], wide[None, :, :2])
        rb = torch.minimum(wide[:, None, 2:4], wide[None, :, 2:4])
        wh = (rb - lt).clamp_min(0)
        inter = wh[..., 0] * wh[..., 1]
        area = (wide[:, 2] - wide[:, 0]) * (wide[:, 3] - wide[:, 1])
        over = inter / (area[:, None] + area[None, :] - inter) > self.iou_threshold
        # host sync: the greedy pass is sequential; one N x N bool copy, then NumPy
        over_np = over.cpu().numpy()
        keep = np.ones(len(over_np), dtype=bool)
        for i in range(len(keep)):
            if keep[i]:
                keep[i + 1 :] &= ~over_np[i, i + 1 :]
        mask = torch.from_numpy(keep).to(bboxes.device)
        return boxes, order.to(torch.int32), mask


def bilinear_rows(
    table: torch.Tensor, base: torch.Tensor, y: torch.Tensor, x: torch.Tensor, h: int, w: int
) -> torch.Tensor:
    """Bilinear samples of an image stored as ``table`` ((N * h * w, C) rows) at float
    coordinates (y, x) in [0, h - 1] x [0, w - 1] of images ``base`` (row offsets
    ``n * h * w``): (..., C)."""
    y0, x0 = y.floor(), x.floor()
    ly, lx = (y - y0)[..., None], (x - x0)[..., None]
    y0, x0 = y0.long(), x0.long()
    y1, x1 = (y0 + 1).clamp_max(h - 1), (x0 + 1).clamp_max(w - 1)

    def at(yy: torch.Tensor, xx: torch.Tensor) -> torch.Tensor:
        return table[base + yy * w + xx]

    top = at(y0, x0) * (1 - lx) + at(y0, x1) * lx
    bottom = at(y1, x0) * (1 - lx) + at(y1, x1) * lx
    return top * (1 - ly) + bottom * ly


def _roi_align(
    features: torch.Tensor,
    rois: torch.Tensor,
    size: tuple[int, int],
    scale: float,
    grid: tuple[int, int],
    end: int,
) -> torch.Tensor:
    """ROI Align of every roi with a fixed (gh, gw) sample grid per bin: (K, C, ph, pw)."""
    n, c, h, w = features.shape
    (ph, pw), (gh, gw) = size, grid
    r = rois.to(features.dtype)
    start_x, start_y = r[:, 1] * scale, r[:, 2] * scale
    width = ((r[:, 3] + end) * scale - start_x).clamp_min(1.0)
    height = ((r[:, 4] + end) * scale - start_y).clamp_min(1.0)

    def positions(start, length, bins, g):  # (K, bins * g) sample coordinates
        steps = torch.arange(bins * g, device=r.device, dtype=r.dtype)
        offsets = (steps // g) + ((steps % g) + 0.5) / g
        return start[:, None] + offsets[None, :] * (length / bins)[:, None]

    ys = positions(start_y, height, ph, gh)[:, :, None].expand(-1, -1, pw * gw)
    xs = positions(start_x, width, pw, gw)[:, None, :].expand(-1, ph * gh, -1)
    inside = ((ys >= -1) & (ys <= h) & (xs >= -1) & (xs <= w)).to(features.dtype)
    # bilinear samples by grid_sample (one fused kernel and its backward; gathering the four
    # corners of every sample by indexing took a minute per step for FasterRCNN's 1280 rois):
    # pixel coordinates, clamped to the image, mapped to [-1, 1] with align_corners=True
    gy = ys.clamp(0, h - 1) * (2.0 / (h - 1)) - 1 if h > 1 else torch.zeros_like(ys)
    gx = xs.clamp(0, w - 1) * (2.0 / (w - 1)) - 1 if w > 1 else torch.zeros_like(xs)
    grid_xy = torch.stack([gx, gy], dim=-1).to(features.dtype)  # (K, ph * gh, pw * gw, 2)
    k = grid_xy.shape[0]
    flat = grid_xy.reshape(1, k * ph * gh, pw * gw, 2)
    index = r[:, 0].long()[:, None, None, None]
    vals = None
    for i in range(n):  # every roi sampled in every image, each roi keeping its own
        one = F.grid_sample(features[i : i + 1], flat, "bilinear", "border", align_corners=True)
        one = one.reshape(c, k, ph * gh, pw * gw).permute(1, 0, 2, 3)
        vals = torch.where(index == i, one, 0 if vals is None else vals)
    vals = vals * inside[:, None]  # (K, C, ph * gh, pw * gw)
    return vals.reshape(k, c, ph, gh, pw, gw).mean(dim=(3, 5))


class ROIAlign(Primitive):
    """Region-of-interest pooling by bilinear sampling: ``ROIAlign(pooled_height,
    pooled_width, spatial_scale, sample_num=2, roi_end_mode=1)(features (N, C, H, W), rois
    (K, 5))``, each roi (batch index, x1, y1, x2, y2) in input pixels, gives (K, C,
    pooled_height, pooled_width); each bin averages ``sample_num`` x ``sample_num`` samples
    (``floor(roi size / pooled size)`` of them per roi when ``sample_num <= 0``), and
    ``roi_end_mode=1`` counts the end pixel in."""

    def __init__(
        self,
        pooled_height: int,
        pooled_width: int,
        spatial_scale: float,
        sample_num: int = 2,
        roi_end_mode: int = 1,
    ) -> None:
        for name, v in (("pooled_height", pooled_height), ("pooled_width", pooled_width)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"ROIAlign: {name} must be an int >= 1. Received {name}={v!r}")
        if roi_end_mode not in (0, 1):
            raise ValueError(f"ROIAlign: roi_end_mode must be 0 or 1. Received {roi_end_mode!r}")
        self.pooled_height, self.pooled_width = pooled_height, pooled_width
        self.spatial_scale = float(spatial_scale)
        self.sample_num, self.roi_end_mode = int(sample_num), roi_end_mode

    def __call__(self, features: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
        if features.dim() != 4:
            raise ValueError(f"ROIAlign: features must be NCHW. Received {tuple(features.shape)}")
        _check_boxes("ROIAlign", "rois", rois, 5)
        size = (self.pooled_height, self.pooled_width)
        args = (self.spatial_scale, self.roi_end_mode)
        if self.sample_num > 0:
            g = (self.sample_num, self.sample_num)
            return _roi_align(features, rois, size, args[0], g, args[1])
        # adaptive grids differ per roi: one roi at a time (host sync for the roi sizes)
        outs = []
        for roi in rois:
            s, e = self.spatial_scale, self.roi_end_mode
            rh = max(((roi[4].item() + e) - roi[2].item()) * s, 1.0)
            rw = max(((roi[3].item() + e) - roi[1].item()) * s, 1.0)
            g = (max(int(rh / size[0]), 1), max(int(rw / size[1]), 1))  # floor, as MindSpore
            outs.append(_roi_align(features, roi[None], size, s, g, e))
        return torch.cat(outs) if outs else features.new_zeros(0, features.shape[1], *size)


__all__ = [
    "IOU",
    "BoundingBoxDecode",
    "BoundingBoxEncode",
    "CheckValid",
    "NMSWithMask",
    "ROIAlign",
]

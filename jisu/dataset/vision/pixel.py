"""Per-pixel and layout ops: Rescale, Normalize, HWC2CHW."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..transforms.base import TensorOperation


class Rescale(TensorOperation):
    """``x * rescale + shift`` as float32 (e.g. ``Rescale(1/255, 0)`` maps uint8 to [0, 1])."""

    elementwise = True

    def __init__(self, rescale: float, shift: float) -> None:
        self.rescale = float(rescale)
        self.shift = float(shift)

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        out = np.empty(x.shape, dtype=np.float32)
        self.apply_into(x, out)
        return out

    def apply_into(self, x: np.ndarray, out: np.ndarray, perm=None) -> None:
        np.multiply(x, np.float32(self.rescale), out=out, dtype=np.float32, casting="unsafe")
        if self.shift:
            np.add(out, np.float32(self.shift), out=out)

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float32)


class Normalize(TensorOperation):
    """``(x - mean) / std`` per channel, as float32.

    Args:
        mean, std: one value per channel (std > 0).
        is_hwc: channels are the last axis (True) or the first (False, CHW).
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_hwc: bool = True) -> None:
        mean_a = np.asarray(mean, dtype=np.float32).ravel()
        std_a = np.asarray(std, dtype=np.float32).ravel()
        if mean_a.size == 0 or mean_a.shape != std_a.shape:
            raise ValueError(
                f"Normalize: mean and std must have the same non-zero length. "
                f"Received: mean={mean!r}, std={std!r}"
            )
        if np.any(std_a <= 0):
            raise ValueError(f"Normalize: std must be > 0. Received: std={std!r}")
        self.mean, self.std, self.is_hwc = mean_a, std_a, bool(is_hwc)

    elementwise = True

    def _channel_axis(self, ndim: int) -> int | None:
        if ndim < 2:
            return None
        if self.is_hwc:
            return ndim - 1
        return ndim - 3 if ndim >= 3 else None

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        out = np.empty(x.shape, dtype=np.float32)
        self.apply_into(x, out)
        return out

    def apply_into(self, x: np.ndarray, out: np.ndarray, perm=None) -> None:
        axis = self._channel_axis(x.ndim)
        channels = 1 if axis is None else x.shape[axis if perm is None else perm.index(axis)]
        if x.ndim < 2 or self.mean.size not in (1, channels):
            raise ValueError(
                f"Normalize: {self.mean.size} mean/std values for an image of shape "
                f"{x.shape} ({'HWC' if self.is_hwc else 'CHW'})"
            )
        shape = [1] * x.ndim
        if axis is not None and self.mean.size > 1:
            shape[axis if perm is None else perm.index(axis)] = -1
        np.subtract(x, self.mean.reshape(shape), out=out, dtype=np.float32, casting="unsafe")
        np.divide(out, self.std.reshape(shape), out=out)

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float32)


class HWC2CHW(TensorOperation):
    """Move channels first: HWC -> CHW (NHWC -> NCHW). A view: the copy happens once, when
    the batch is assembled or the row is handed out. HW images pass through unchanged."""

    view_op = True

    def axes(self, ndim: int) -> tuple[int, ...]:
        return {3: (2, 0, 1), 4: (0, 3, 1, 2)}.get(ndim, tuple(range(ndim)))

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        if x.ndim == 3:
            return x.transpose(2, 0, 1)
        if x.ndim == 4:
            return x.transpose(0, 3, 1, 2)
        if x.ndim == 2:
            return x
        raise ValueError(f"HWC2CHW: expected an HW, HWC or NHWC array. Received shape {x.shape}")

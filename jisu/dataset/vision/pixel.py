"""Per-pixel and layout ops: Rescale, Normalize, HWC2CHW, NormalizePad, LinearTransformation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from ..core.error_types import ArgumentError, PipelineValueError
from ..core.operation import TensorOperation
from .utils import CV_DTYPES


def _affine_plane(src: np.ndarray, scale: float, shift: float, dst: np.ndarray) -> None:
    """``dst = src * scale + shift`` for one channel plane, in one pass where OpenCV can."""
    # addWeighted(a, alpha, b, beta, gamma) with beta=0 is a fused multiply-add that converts
    # on the fly and writes into ``dst`` (in place when its type and layout fit).
    if (
        src.ndim == 2
        and src.dtype in CV_DTYPES
        and dst.flags.c_contiguous
        and dst.dtype == np.float32
        and dst.size > 0
        and cv2.addWeighted(src, scale, src, 0.0, shift, dst=dst, dtype=cv2.CV_32F) is dst
    ):
        return
    np.multiply(src, np.float32(scale), out=dst, dtype=np.float32, casting="unsafe")
    np.add(dst, np.float32(shift), out=dst)


_SMALL = 16384  # elements (e.g. 64x64x4): below this the NumPy path measured faster


def affine_per_channel(
    x: np.ndarray, out: np.ndarray, axis: int, scale: np.ndarray, shift: np.ndarray
) -> None:
    """``out = x * scale[c] + shift[c]`` along channel ``axis`` of ``x`` and ``out`` (float32).

    NumPy's broadcasting over a short last axis is slow (~0.5 ms for a 224x224x3 image);
    this runs one fused pass per channel plane instead (OpenCV, GIL released): ~0.08 ms when
    the output planes are contiguous (CHW output: batch slots after HWC2CHW), ~0.13 ms for
    channel-last output.
    """
    if x.size <= _SMALL:  # a few thousand values: per-call overhead dominates, NumPy is faster
        shape = [1] * x.ndim
        shape[axis] = -1
        factors = np.asarray(scale, np.float32).reshape(shape)
        np.multiply(x, factors, out=out, dtype=np.float32, casting="unsafe")
        np.add(out, np.asarray(shift, np.float32).reshape(shape), out=out)
        return
    last = (*range(axis), *range(axis + 1, x.ndim), axis)  # channels last (np.moveaxis, faster)
    xs, outs = x.transpose(last), out.transpose(last)
    channels = xs.shape[-1]
    if (
        outs.ndim == 3
        and channels <= 4
        and outs.flags.c_contiguous
        and xs.flags.c_contiguous
        and xs.dtype in CV_DTYPES
        and outs.size > 0
    ):
        # channel-last output: OpenCV takes per-channel scalars of up to 4 values
        pad = (0.0,) * (4 - channels)
        mul = tuple(float(v) for v in scale) + pad
        add = tuple(float(v) for v in shift) + pad
        if cv2.multiply(xs, mul, dst=outs, dtype=cv2.CV_32F) is outs:
            cv2.add(outs, add, dst=outs)
            return
    if xs.ndim == 3 and xs.flags.c_contiguous and xs.dtype in CV_DTYPES and xs.size > 0:
        planes = cv2.split(xs)  # contiguous planes: faster to read than strided ones
    else:
        planes = [xs[..., c] for c in range(channels)]
    for c in range(channels):
        _affine_plane(planes[c], float(scale[c]), float(shift[c]), outs[..., c])


class Rescale(TensorOperation):
    """``x * rescale + shift`` as float32, element by element.

    The op changes the pixel scale: ``Rescale(1 / 255, 0)`` maps uint8 values 0-255 to
    0.0-1.0, ``Rescale(1 / 127.5, -1)`` to -1.0-1.0. Ops after it see the new scale: a
    :class:`Normalize` after ``Rescale(1 / 255, 0)`` takes 0-1 statistics
    (e.g. ``mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]``).
    """

    elementwise = True

    def __init__(self, rescale: float, shift: float) -> None:
        try:
            self.rescale, self.shift = float(rescale), float(shift)
        except (TypeError, ValueError):  # MindSpore: a TypeError
            raise ArgumentError(
                f"Rescale: rescale and shift must be numbers. Received: rescale={rescale!r}, "
                f"shift={shift!r}"
            ) from None

    def apply(self, x: np.ndarray, rng=None) -> np.ndarray:
        out = np.empty(x.shape, dtype=np.float32)
        self.apply_into(x, out)
        return out

    def apply_into(self, x: np.ndarray, out: np.ndarray, perm=None) -> None:
        # MindSpore's arithmetic, bit for bit: rescale and shift are float32 (its C++ takes
        # floats), the multiply-add runs in float64 and is rounded once to float32; a float32
        # multiply then add rounds twice (1 in 2**24 off on about a third of values)
        scale, shift = np.float64(np.float32(self.rescale)), np.float64(np.float32(self.shift))
        wide = np.multiply(x, scale, dtype=np.float64)
        wide += shift
        np.copyto(out, wide, casting="same_kind")

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float32)


class ChannelAffine(TensorOperation):
    """``x * scale[c] + shift[c]`` per channel, as float32: what Normalize computes, and what
    a run of consecutive Rescale/Normalize ops in one map is fused into (one pass, not one
    per op; see :func:`fuse_affine`).

    Args:
        scale, shift: one value per channel, or one for all.
        is_hwc: channels are the last axis (True) or the first of the last three (False).
        name: the op(s) it stands for, in error messages.
    """

    elementwise = True

    def __init__(self, scale, shift, is_hwc: bool = True, name: str = "ChannelAffine") -> None:
        self.scale, self.shift = np.broadcast_arrays(
            np.asarray(scale, np.float64).ravel(), np.asarray(shift, np.float64).ravel()
        )
        self.is_hwc, self.name = bool(is_hwc), name

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
        if x.ndim < 2 or self.scale.size not in (1, channels):
            raise ValueError(
                f"{self.name}: {self.scale.size} mean/std values for an image of shape "
                f"{x.shape} ({'HWC' if self.is_hwc else 'CHW'})"
            )
        if axis is None or self.scale.size == 1:  # the same factors for every element
            _affine_plane(x, float(self.scale[0]), float(self.shift[0]), out)
        else:
            axis = axis if perm is None else perm.index(axis)
            affine_per_channel(x, out, axis, self.scale, self.shift)

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float32)


class Normalize(ChannelAffine):
    """``(x - mean) / std`` per channel, as float32 (computed as one multiply-add).

    ``mean`` and ``std`` are in the input's units: Normalize does not rescale first. On
    0-255 input (uint8 straight from Decode) give 0-255 statistics, e.g. ImageNet's
    ``mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]``; the 0-1 statistics
    ``mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]`` belong after
    ``Rescale(1 / 255, 0)``. Mixing them up gives values up to ~1100 instead of ~2.6.

    Args:
        mean, std: one value per channel (std > 0), in the input's units.
        is_hwc: channels are the last axis (True: HWC, NHWC) or the first of the last
            three (False: CHW, NCHW), as MindSpore's ``is_hwc``.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_hwc: bool = True) -> None:
        try:
            mean_a = np.asarray(mean, dtype=np.float32).ravel()
            std_a = np.asarray(std, dtype=np.float32).ravel()
        except (TypeError, ValueError):  # MindSpore: a TypeError
            raise ArgumentError(
                f"Normalize: mean and std must be sequences of numbers. Received: mean={mean!r}, "
                f"std={std!r}"
            ) from None
        if mean_a.size == 0 or mean_a.shape != std_a.shape:
            raise ValueError(
                f"Normalize: mean and std must have the same non-zero length. "
                f"Received: mean={mean!r}, std={std!r}"
            )
        if np.any(std_a <= 0):
            raise ValueError(f"Normalize: std must be > 0. Received: std={std!r}")
        self.mean, self.std = mean_a, std_a
        scale = 1.0 / std_a.astype(np.float64)  # the factors computed in float64
        super().__init__(scale, -mean_a.astype(np.float64) * scale, is_hwc, "Normalize")


def _as_affine(op) -> ChannelAffine | None:
    """``op`` as a per-channel affine map, when it is exactly one (not a subclass)."""
    if type(op) is Rescale:
        return ChannelAffine([op.rescale], [op.shift], True, "Rescale")
    if type(op) in (ChannelAffine, Normalize):
        return op
    return None


def _compose(first: ChannelAffine, then: ChannelAffine) -> ChannelAffine | None:
    """``then(first(x))`` as one op; None when their channel layouts disagree."""
    sizes = {first.scale.size, then.scale.size} - {1}
    layouts = {op.is_hwc for op in (first, then) if op.scale.size > 1}
    if len(sizes) > 1 or len(layouts) > 1:
        return None
    # (x * s1 + t1) * s2 + t2 = x * (s1 * s2) + (t1 * s2 + t2)
    return ChannelAffine(
        first.scale * then.scale,
        first.shift * then.scale + then.shift,
        layouts.pop() if layouts else True,
        f"{first.name}+{then.name}",
    )


def fuse_affine(operations: Sequence) -> list[tuple[int, object]]:
    """Fuse runs of consecutive Rescale/Normalize ops into one :class:`ChannelAffine` each.

    Returns ``(index of the run's first op, op)`` pairs, so that the ops after a fused run
    keep their random streams (which are keyed by op position). Results equal the unfused ops
    within float32 rounding (the intermediate float32 rounding is skipped).
    """
    fused: list[tuple[int, object]] = []
    for k, op in enumerate(operations):
        affine = _as_affine(op)
        if affine is not None and fused:
            before = _as_affine(fused[-1][1])
            joined = _compose(before, affine) if before is not None else None
            if joined is not None:
                fused[-1] = (fused[-1][0], joined)
                continue
        fused.append((k, op))
    return fused


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
        raise PipelineValueError(  # MindSpore: a RuntimeError
            f"HWC2CHW: expected an HW, HWC or NHWC array. Received shape {x.shape}"
        )


def _check_stats(name: str, values: Any, low_open: bool) -> np.ndarray:
    """NormalizePad's ``mean`` (in [0, 255]) or ``std`` (in (0, 255]) as float32."""
    if not isinstance(values, (list, tuple)) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise TypeError(
            f"NormalizePad: {name} must be a list or tuple of numbers. Received: {name}={values!r}"
        )
    for k, v in enumerate(values):
        if not (0 < v <= 255 if low_open else 0 <= v <= 255):
            bounds = "(0, 255]" if low_open else "[0, 255]"
            raise ValueError(
                f"NormalizePad: {name}[{k}] must lie in {bounds}. Received: {name}={values!r}"
            )
    return np.asarray(values, np.float32)


class NormalizePad(TensorOperation):
    """``(x - mean) / std`` per channel of an HW/HWC (``is_hwc=True``) or CHW image, in
    float32, then one more channel of zeros after the last (HW counts as one channel), cast to
    ``dtype`` ("float32" or "float16"). One ``mean``/``std`` value serves every channel.

    HWC output keeps every value with its pixel: (H, W, C + 1), the zeros as the last
    channel. MindSpore 2.10's CPU kernel does not: it writes the normalized values in HWC
    order into the first ``H * W * C`` places of the (H, W, C + 1) buffer and the zeros into
    its last ``H * W``, so its pixels and channels no longer match (recorded in
    ``tests/fixtures/vision_missing_ops``); jisu does not copy that (a kept difference, in the
    porting guide). CHW output is the same in both: a zero plane last.

    Args:
        mean: per-channel means in [0, 255].
        std: per-channel standard deviations in (0, 255].
        dtype: the output's dtype name, "float32" or "float16".
        is_hwc: channels last (True) or first (False).

    Raises:
        TypeError: ``mean``/``std`` not a list or tuple of numbers, ``dtype`` not a str,
            ``is_hwc`` not a bool.
        ValueError: a value out of range, lengths that differ, a dtype other than the two.
        PipelineValueError: ``mean`` is empty (MindSpore 2.10: a RuntimeError).
    """

    pil_out = False

    def __init__(
        self,
        mean: Sequence[float],
        std: Sequence[float],
        dtype: str = "float32",
        is_hwc: bool = True,
    ) -> None:
        self.mean = _check_stats("mean", mean, False)
        self.std = _check_stats("std", std, True)
        if self.mean.size != self.std.size:
            raise ValueError(
                f"NormalizePad: mean and std must have the same length. Received: mean={mean!r}, "
                f"std={std!r}"
            )
        if self.mean.size == 0:
            raise PipelineValueError("NormalizePad: mean and std must not be empty")
        if not isinstance(dtype, str):
            raise TypeError(f"NormalizePad: dtype must be a str. Received: dtype={dtype!r}")
        if dtype not in ("float32", "float16"):
            raise ValueError(
                f"NormalizePad: dtype must be 'float32' or 'float16'. Received: dtype={dtype!r}"
            )
        if not isinstance(is_hwc, bool):
            raise TypeError(f"NormalizePad: is_hwc must be a bool. Received: is_hwc={is_hwc!r}")
        self.dtype, self.is_hwc = dtype, is_hwc

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.ndim not in (2, 3) or (image.ndim == 2 and not self.is_hwc):
            raise PipelineValueError(  # MindSpore 2.10: a RuntimeError
                f"NormalizePad: expected an HW, HWC or CHW image. Received shape {image.shape}"
            )
        planes = image[..., None] if image.ndim == 2 else image
        planes = planes if self.is_hwc else np.moveaxis(planes, 0, -1)
        if image.dtype.kind not in "biuf" or self.mean.size not in (1, planes.shape[-1]):
            raise PipelineValueError(
                f"NormalizePad: {self.mean.size} mean/std values for an image of shape "
                f"{image.shape}, dtype {image.dtype}"
            )
        normal = (planes.astype(np.float32) - self.mean) / self.std
        if not self.is_hwc:
            out = np.concatenate([np.moveaxis(normal, -1, 0), np.zeros((1, *normal.shape[:-1]))])
            return np.ascontiguousarray(out, dtype=self.dtype)
        out = np.concatenate([normal, np.zeros((*normal.shape[:-1], 1), np.float32)], axis=-1)
        return out.astype(self.dtype)


class LinearTransformation(TensorOperation):
    """``(x.ravel() - mean_vector) @ transformation_matrix``, reshaped to ``x``'s shape: a
    whitening step (ZCA) on images whose ``C * H * W`` is ``D``. The result's dtype is NumPy's
    promotion of the image's, the matrix's and the vector's (float64 for float64 arguments).

    Args:
        transformation_matrix: a (D, D) NumPy array.
        mean_vector: a (D,) NumPy array.

    Raises:
        TypeError: an argument is not a NumPy array.
        ValueError: the matrix is not square, or the vector's length is not D.
    """

    pil_out = False

    def __init__(self, transformation_matrix: np.ndarray, mean_vector: np.ndarray) -> None:
        for name, value in (
            ("transformation_matrix", transformation_matrix),
            ("mean_vector", mean_vector),
        ):
            if not isinstance(value, np.ndarray):
                raise TypeError(
                    f"LinearTransformation: {name} must be a numpy.ndarray. Received: "
                    f"{name} of type {type(value).__name__}"
                )
        shape = transformation_matrix.shape
        if transformation_matrix.ndim != 2 or shape[0] != shape[1]:
            raise ValueError(
                "LinearTransformation: transformation_matrix must be a square (D, D) array. "
                f"Received shape {shape}"
            )
        if mean_vector.ndim < 1 or mean_vector.shape[0] != shape[0]:
            raise ValueError(
                f"LinearTransformation: mean_vector must have D={shape[0]} values, as the "
                f"matrix has rows. Received shape {mean_vector.shape}"
            )
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        size = self.transformation_matrix.shape[0]
        if image.size != size:
            raise PipelineValueError(  # MindSpore 2.10: a ValueError, RuntimeError in a map
                f"LinearTransformation: the image has {image.size} values (shape "
                f"{image.shape}); the matrix takes D={size}"
            )
        centered = image.reshape(1, -1) - self.mean_vector
        return np.dot(centered, self.transformation_matrix).reshape(image.shape)

"""MindSpore's functional ``ops`` of neural networks, images and random numbers
(``ops.interpolate``, ``ops.pad``, ``ops.grid_sample``, ``ops.cross_entropy``,
``ops.dropout``, ``ops.standard_normal``, ``ops.uniform``, ``ops.normal``, ``ops.randn``,
``ops.multinomial``, ...) on torch.

The random functions draw from torch's default generator (seeded by :func:`jisu.set_seed`)
or, given ``seed``, from a deterministic stream keyed by (function, seed, global seed, call
count), as MindSpore's op-seed table does (see :mod:`.operations._nn_rng`).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ._nn_layer_functions import *  # noqa: F403
from ._nn_layer_functions import __all__ as _layer_functions
from .operations._nn_rng import function_generator, shape_arg
from .operations.image_ops import resize_bilinear


def interpolate(
    input: torch.Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    *,
    roi: Any = None,
    scales: Any = None,
    sizes: Any = None,
    coordinate_transformation_mode: str | None = None,
) -> torch.Tensor:
    """Resizes ``input`` (N, C, ...) to ``size`` or by ``scale_factor``; MindSpore 2's
    ``interpolate`` has torch's modes and coordinate rules.

    MindSpore 1.x's keywords (``sizes``, ``scales`` (one per dimension), ``roi`` (None only),
    ``coordinate_transformation_mode`` "align_corners" (its default), "half_pixel" or
    "asymmetric") are accepted too, as some model-zoo projects still pass them (MindSpore 2
    refuses them).
    """
    if any(v is not None for v in (roi, scales, sizes, coordinate_transformation_mode)):
        return _interpolate_1x(input, roi, scales, sizes, coordinate_transformation_mode, mode)
    return F.interpolate(
        input,
        size=tuple(size) if isinstance(size, list) else size,
        scale_factor=scale_factor,
        mode=mode,
        align_corners=align_corners,
        recompute_scale_factor=recompute_scale_factor,
    )


def _interpolate_1x(
    x: torch.Tensor, roi: Any, scales: Any, sizes: Any, transform: str | None, mode: str
) -> torch.Tensor:
    """MindSpore 1.x's ``interpolate(x, roi, scales, sizes, coordinate_transformation_mode,
    mode)`` on torch."""
    if roi is not None:
        raise NotImplementedError("interpolate: roi ('crop_and_resize') is not provided by jisu")
    if (scales is None) == (sizes is None):
        raise ValueError("interpolate: give exactly one of sizes and scales")
    transform = transform or "align_corners"
    if transform not in ("align_corners", "half_pixel", "asymmetric"):
        raise ValueError(
            "interpolate: coordinate_transformation_mode must be 'align_corners', 'half_pixel' "
            f"or 'asymmetric'. Received {transform!r}"
        )
    spatial = x.shape[2:]
    if sizes is not None:
        size = tuple(int(s) for s in sizes)[-len(spatial) :]
    else:
        size = tuple(int(n * f) for n, f in zip(spatial, tuple(scales)[-len(spatial) :]))
    if mode in ("linear", "bilinear"):
        mode = "bilinear" if x.dim() == 4 else "linear"
    if mode == "nearest":
        return F.interpolate(x, size, mode="nearest-exact" if transform == "half_pixel" else mode)
    if transform == "asymmetric" and mode in ("linear", "bilinear"):  # TensorFlow's legacy rule
        flat = x if x.dim() == 4 else x.unsqueeze(2)
        out = resize_bilinear(
            flat, (flat.shape[2], size[-1]) if x.dim() == 3 else size, False, False
        )
        return out if x.dim() == 4 else out.squeeze(2)
    return F.interpolate(x, size, mode=mode, align_corners=transform == "align_corners")


def pad(
    input_x: torch.Tensor, padding: Any, mode: str = "constant", value: float | None = None
) -> torch.Tensor:
    """Pads ``input_x`` by ``padding`` (pairs from the last dimension backwards, negative
    values crop) with ``mode`` "constant" (``value``, default 0), "reflect", "replicate" or
    "circular"."""
    if isinstance(padding, torch.Tensor):
        padding = padding.tolist()  # host sync: pads set the output shape
    if mode != "constant" and value is not None:
        raise ValueError(f"pad: value is only for mode 'constant'. Received mode={mode!r}")
    return F.pad(input_x, tuple(padding), mode=mode, value=value)


def grid_sample(
    input: torch.Tensor,
    grid: torch.Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> torch.Tensor:
    """Samples ``input`` at the normalized (x, y) locations of ``grid`` (torch's rules)."""
    return F.grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def cross_entropy(
    input: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) against class indices or class
    probabilities ``target``."""
    if not target.is_floating_point():
        target = target.long()
    return F.cross_entropy(
        input,
        target,
        weight,
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def dropout(
    input: torch.Tensor,
    p: float = 0.5,
    training: bool = True,
    seed: int | None = None,
) -> torch.Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``
    (identity when not ``training``)."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1]. Received p={p}")
    if not training or p == 0:
        return input
    gen = function_generator("dropout", seed, input.device)
    keep = torch.rand(input.shape, generator=gen, device=input.device) >= p
    return input * keep.to(input.dtype) / (1 - p)


def _as_tensor(owner: str, name: str, value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(value)
    raise TypeError(f"{owner}: {name} must be a tensor or a number. Received {name}={value!r}")


def standard_normal(shape: Any, seed: int | None = None) -> torch.Tensor:
    """float32 numbers from N(0, 1) of shape ``shape``."""
    size = shape_arg("standard_normal", shape)
    return torch.randn(size, generator=function_generator("standard_normal", seed))


def randn(*size: Any, dtype: torch.dtype | None = None, seed: int | None = None) -> torch.Tensor:
    """Numbers from N(0, 1) of shape ``size`` (ints or one tuple), float32 by default."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Tensor)):
        size = size[0]
    shape = shape_arg("randn", size)
    gen = function_generator("randn", seed)
    return torch.randn(shape, generator=gen, dtype=dtype or torch.float32)


def uniform(
    shape: Any,
    minval: Any,
    maxval: Any,
    seed: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Numbers uniform in [minval, maxval) of the broadcast of ``shape``, ``minval`` and
    ``maxval``: floats, or int32 numbers when ``dtype`` is int32."""
    low = _as_tensor("uniform", "minval", minval)
    high = _as_tensor("uniform", "maxval", maxval)
    size = torch.broadcast_shapes(shape_arg("uniform", shape), low.shape, high.shape)
    gen = function_generator("uniform", seed, low.device)
    draw = torch.rand(size, generator=gen, device=low.device, dtype=torch.float64)
    if dtype in (torch.int32, torch.int64):
        return (low + torch.floor(draw * (high - low).to(torch.float64)).to(low.dtype)).to(dtype)
    return (low + draw.to(dtype) * (high - low)).to(dtype)


def normal(shape: Any, mean: Any, stddev: Any, seed: int | None = None) -> torch.Tensor:
    """Numbers from N(mean, stddev ** 2) of the broadcast of ``shape``, ``mean`` and
    ``stddev``."""
    mean_t = _as_tensor("normal", "mean", mean)
    std_t = _as_tensor("normal", "stddev", stddev)
    size = torch.broadcast_shapes(shape_arg("normal", shape), mean_t.shape, std_t.shape)
    dtype = torch.promote_types(mean_t.dtype, std_t.dtype)
    if not dtype.is_floating_point:
        dtype = torch.float32
    gen = function_generator("normal", seed, mean_t.device)
    draw = torch.randn(size, generator=gen, device=mean_t.device, dtype=dtype)
    return mean_t + draw * std_t


def multinomial(
    input: torch.Tensor,
    num_samples: int,
    replacement: bool = True,
    seed: int | None = None,
) -> torch.Tensor:
    """``num_samples`` int32 category indices per row of (unnormalized) probabilities."""
    gen = function_generator("multinomial", seed, input.device)
    out = torch.multinomial(input.float(), num_samples, replacement, generator=gen)
    return out.to(torch.int32)


def upsample(
    input: torch.Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> torch.Tensor:
    """MindSpore's alias of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def dropout2d(input: torch.Tensor, p: float = 0.5, training: bool = True) -> torch.Tensor:
    """Zeroes whole channels of (N, C, H, W) ``input`` with probability ``p``."""
    return F.dropout2d(input, p, training)


def _size(owner: str, size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Tensor)):
        size = size[0]
    return shape_arg(owner, size)


def rand(*size: Any, dtype: torch.dtype | None = None, seed: int | None = None) -> torch.Tensor:
    """Numbers uniform in [0, 1) of shape ``size``, float32 by default."""
    gen = function_generator("rand", seed)
    return torch.rand(_size("rand", size), generator=gen, dtype=dtype or torch.float32)


def randint(
    low: int, high: int, size: Any, seed: int | None = None, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Integers uniform in [low, high) of shape ``size``, int64 by default."""
    gen = function_generator("randint", seed)
    shape = shape_arg("randint", size)
    return torch.randint(low, high, shape, generator=gen, dtype=dtype or torch.int64)


def rand_like(
    input: torch.Tensor,
    seed: int | None = None,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    gen = function_generator("rand_like", seed, input.device)
    dtype = dtype or input.dtype
    return torch.rand(input.shape, generator=gen, dtype=dtype, device=input.device)


def randn_like(
    input: torch.Tensor,
    seed: int | None = None,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    gen = function_generator("randn_like", seed, input.device)
    dtype = dtype or input.dtype
    return torch.randn(input.shape, generator=gen, dtype=dtype, device=input.device)


def randint_like(
    input: torch.Tensor,
    low: int,
    high: int,
    seed: int | None = None,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Integers uniform in [low, high) shaped like ``input``, in ``dtype`` (default
    ``input``'s, which must then be an integer type, as in MindSpore)."""
    dtype = dtype or input.dtype
    if dtype.is_floating_point or dtype.is_complex:
        raise ValueError(f"randint_like: dtype must be an int type. Received dtype={dtype}")
    gen = function_generator("randint_like", seed, input.device)
    return torch.randint(low, high, input.shape, generator=gen, dtype=dtype, device=input.device)


def bernoulli(
    input: torch.Tensor,
    p: Any = 0.5,
    seed: int | None = None,
) -> torch.Tensor:
    """0/1 draws with probability ``p`` (a float or a tensor), shaped like ``input`` and in
    its dtype."""
    gen = function_generator("bernoulli", seed, input.device)
    probs = torch.as_tensor(p, dtype=torch.float32, device=input.device).expand(input.shape)
    draw = torch.rand(input.shape, generator=gen, device=input.device)
    return (draw < probs).to(input.dtype)


__all__ = [
    *_layer_functions,
    "bernoulli",
    "dropout2d",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn_like",
    "upsample",
    "cross_entropy",
    "dropout",
    "grid_sample",
    "interpolate",
    "multinomial",
    "normal",
    "pad",
    "randn",
    "standard_normal",
    "uniform",
]

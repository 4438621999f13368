"""``mindspore.numpy``'s array creation functions on torch (NumPy's argument names)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._convert import as_tensor, dtype_of

_F32 = torch.float32


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def array(obj: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> torch.Tensor:
    """A tensor from data (Python ints become int32, floats float32)."""
    out = as_tensor(obj, dtype, "array")
    if copy and isinstance(obj, (torch.Tensor, np.ndarray)):
        out = out.clone()
    while out.dim() < ndmin:
        out = out.unsqueeze(0)
    return out


def asarray(a: Any, dtype: Any = None) -> torch.Tensor:
    """A tensor from data, without a copy where none is needed."""
    return as_tensor(a, dtype, "asarray")


def asfarray(a: Any, dtype: Any = _F32) -> torch.Tensor:
    """A floating-point tensor from data (float32 unless ``dtype`` is a float type)."""
    out = as_tensor(a, op="asfarray")
    want = dtype_of(dtype, "asfarray")
    return out.to(want if want.is_floating_point else _F32)


def copy(a: Any) -> torch.Tensor:
    """A copy of the data."""
    return as_tensor(a, op="copy").clone()


def zeros(shape: Any, dtype: Any = _F32) -> torch.Tensor:
    """A tensor of zeros (float32 by default)."""
    return torch.zeros(_shape(shape), dtype=dtype_of(dtype, "zeros"))


def ones(shape: Any, dtype: Any = _F32) -> torch.Tensor:
    """A tensor of ones (float32 by default)."""
    return torch.ones(_shape(shape), dtype=dtype_of(dtype, "ones"))


def empty(shape: Any, dtype: Any = _F32) -> torch.Tensor:
    """A tensor of the shape; its values are zeros, as MindSpore's."""
    return zeros(shape, dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> torch.Tensor:
    """A tensor filled with ``fill_value`` (its dtype from the value unless given)."""
    value = as_tensor(fill_value, dtype, "full")
    return value.expand(_shape(shape)).clone()


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> torch.Tensor:
    """Zeros with ``a``'s shape and dtype (or those given)."""
    return full_like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> torch.Tensor:
    """Ones with ``a``'s shape and dtype (or those given)."""
    return full_like(a, 1, dtype, shape)


def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> torch.Tensor:
    """A tensor like ``a``; its values are zeros, as MindSpore's."""
    return full_like(a, 0, dtype, shape)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> torch.Tensor:
    """``fill_value`` with ``a``'s shape and dtype (or those given)."""
    a = as_tensor(a, op="full_like")
    out_shape = a.shape if shape is None else _shape(shape)
    want = dtype_of(dtype, "full_like") or a.dtype
    return torch.full(out_shape, fill_value, dtype=want, device=a.device)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = _F32) -> torch.Tensor:
    """A 2-D tensor with ones on the ``k``-th diagonal."""
    M = N if M is None else M
    rows = torch.arange(N).unsqueeze(1)
    return (torch.arange(M).unsqueeze(0) - rows == k).to(dtype_of(dtype, "eye"))


def identity(n: int, dtype: Any = _F32) -> torch.Tensor:
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> torch.Tensor:
    """Evenly spaced values in ``[start, stop)``: int32 for int arguments, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    want = dtype_of(dtype, "arange") or (torch.int32 if ints else _F32)
    return torch.arange(start, stop, step, dtype=torch.int64 if ints else torch.float64).to(want)


def linspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (float32 by default)."""
    want = dtype_of(dtype, "linspace") or _F32
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else float("nan")
    values = torch.arange(num, dtype=torch.float64) * step + start
    if endpoint and num > 1:
        values[-1] = stop
    out = values.to(want)
    if axis != 0:
        out = out.movedim(0, axis)
    return (out, step) if retstep else out


def meshgrid(*xi: Any, sparse: bool = False, indexing: str = "xy") -> list[torch.Tensor]:
    """Coordinate matrices from coordinate vectors (NumPy's ``indexing="xy"`` by default)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(
            f"meshgrid: indexing must be 'xy' or 'ij'. Received: indexing={indexing!r}"
        )
    grids = list(torch.meshgrid(*[as_tensor(x, op="meshgrid") for x in xi], indexing=indexing))
    if sparse:
        n = len(grids)
        out = []
        for i, x in enumerate(xi):
            shape = [1] * n
            axis = (1 - i if i < 2 else i) if indexing == "xy" and n > 1 else i
            shape[axis] = -1
            out.append(as_tensor(x, op="meshgrid").reshape(shape))
        return out
    return grids


def diag(v: Any, k: int = 0) -> torch.Tensor:
    """The ``k``-th diagonal of a 2-D tensor, or a 2-D tensor with a 1-D one on it."""
    return torch.diag(as_tensor(v, op="diag"), k)


def tril(m: Any, k: int = 0) -> torch.Tensor:
    """The lower triangle (below the ``k``-th diagonal kept)."""
    return torch.tril(as_tensor(m, op="tril"), k)


def triu(m: Any, k: int = 0) -> torch.Tensor:
    """The upper triangle (above the ``k``-th diagonal kept)."""
    return torch.triu(as_tensor(m, op="triu"), k)


def rand(*shape: Any, dtype: Any = _F32) -> torch.Tensor:
    """Uniform samples in [0, 1) (torch's generator: ``jisu.set_seed`` seeds it)."""
    shape = _shape(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return torch.rand(shape, dtype=dtype_of(dtype, "rand"))


def randn(*shape: Any, dtype: Any = _F32) -> torch.Tensor:
    """Standard normal samples (torch's generator)."""
    shape = _shape(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return torch.randn(shape, dtype=dtype_of(dtype, "randn"))


def randint(
    minval: int, maxval: int | None = None, shape: Any = None, dtype: Any = torch.int32
) -> torch.Tensor:
    """Random integers in ``[minval, maxval)`` (``[0, minval)`` without ``maxval``)."""
    if maxval is None:
        minval, maxval = 0, minval
    size = () if shape is None else _shape(shape)
    return torch.randint(minval, maxval, size, dtype=dtype_of(dtype, "randint"))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


def pad(arr: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> torch.Tensor:
    """Pad each axis by ``pad_width`` (NumPy's forms: an int, ``(before, after)``, or one pair
    per axis); modes "constant", "reflect", "edge" and "wrap"."""
    x = as_tensor(arr, op="pad")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {sorted(_PAD_MODES)}. Received: mode={mode!r}")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.dim(), 2)).tolist()
    if mode == "constant":
        flat = [w for pair in reversed(widths) for w in pair]
        return torch.nn.functional.pad(x, flat, value=constant_values)
    padded = [i for i, pair in enumerate(widths) if any(pair)]
    if not padded:
        return x.clone()
    first = padded[0]
    trailing = x.shape[first:]
    if len(trailing) > 3:
        raise ValueError(f"pad: mode={mode!r} pads at most the last 3 axes of a tensor")
    lead = x.shape[:first]
    y = x.reshape(1, -1, *trailing)
    flat = [w for pair in reversed(widths[first:]) for w in pair]
    floaty = y if y.is_floating_point() else y.to(_F32)
    out = torch.nn.functional.pad(floaty, flat, mode=_PAD_MODES[mode]).to(x.dtype)
    return out.reshape(*lead, *out.shape[2:])

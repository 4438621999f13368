"""MindSpore's ``ops`` for the networks and loops that call them, on torch.

Two forms, as in MindSpore: primitive classes, built with their attributes and called with
tensors (``ops.ReduceMean(keep_dims=True)(x, axis)``, ``ops.Concat(1)((a, b))``), and
functions (``ops.reshape(x, shape)``, ``ops.matmul(a, b)``). Only what MindSpore's classic
model-zoo networks and training loops use is here; each is one torch call (no copies beyond
torch's), so they run under autograd, AMP and ``torch.compile`` like torch code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F


def _axes(axis: Any) -> tuple[int, ...] | None:
    if axis is None or axis == ():
        return None
    return (axis,) if isinstance(axis, int) else tuple(axis)


class Primitive:
    """Base of the primitive classes: built with attributes, called with tensors."""

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({attrs})"


# ---------------------------------------------------------------------- shapes
def reshape(x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    return torch.reshape(x, tuple(shape))


def transpose(x: torch.Tensor, perm: Sequence[int]) -> torch.Tensor:
    return x.permute(*perm)


def squeeze(x: torch.Tensor, axis: Any = None) -> torch.Tensor:
    axes = _axes(axis)
    return x.squeeze() if axes is None else x.squeeze(axes)


def expand_dims(x: torch.Tensor, axis: int) -> torch.Tensor:
    return x.unsqueeze(axis)


def concat(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    return torch.cat(tuple(tensors), dim=axis)


cat = concat


def stack(tensors: Sequence[torch.Tensor], axis: int = 0) -> torch.Tensor:
    return torch.stack(tuple(tensors), dim=axis)


def flatten(x: torch.Tensor, start_dim: int = 1, end_dim: int = -1) -> torch.Tensor:
    return torch.flatten(x, start_dim, end_dim)


def tile(x: torch.Tensor, multiples: Sequence[int]) -> torch.Tensor:
    return x.tile(tuple(multiples))


def shape(x: torch.Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x.to(dtype)


# ---------------------------------------------------------------------- math
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def mean(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.mean() if axes is None and not keep_dims else x.mean(dim=axes, keepdim=keep_dims)


def reduce_sum(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.sum() if axes is None and not keep_dims else x.sum(dim=axes, keepdim=keep_dims)


def reduce_max(x: torch.Tensor, axis: Any = None, keep_dims: bool = False) -> torch.Tensor:
    axes = _axes(axis)
    return x.amax() if axes is None and not keep_dims else x.amax(dim=axes, keepdim=keep_dims)


def softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    return torch.softmax(x, dim=axis)


def log_softmax(x: torch.Tensor, axis: int = -1) -> torch.Tensor:
    return torch.log_softmax(x, dim=axis)


def argmax(x: torch.Tensor, axis: int | None = None, keepdims: bool = False) -> torch.Tensor:
    return torch.argmax(x, dim=axis, keepdim=keepdims)


def one_hot(indices: torch.Tensor, depth: int, on_value: Any = 1, off_value: Any = 0, axis=-1):
    hot = F.one_hot(indices.long(), depth).bool()
    on = torch.as_tensor(on_value)
    off = torch.as_tensor(off_value, dtype=on.dtype)
    out = torch.where(hot, on.to(hot.device), off.to(hot.device))
    return out if axis == -1 else out.movedim(-1, axis)


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)


def tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x)


def clip_by_value(x: torch.Tensor, clip_value_min: Any = None, clip_value_max: Any = None):
    return torch.clamp(x, clip_value_min, clip_value_max)


def zeros(shape: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


def ones(shape: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(shape, dtype=dtype)


# elementwise functions with torch's own names
add, sub, mul, div = torch.add, torch.sub, torch.mul, torch.div
sqrt, exp, log, pow, abs = torch.sqrt, torch.exp, torch.log, torch.pow, torch.abs
maximum, minimum, equal, select = torch.maximum, torch.minimum, torch.eq, torch.where
gather_elements = torch.gather


def gather(params: torch.Tensor, indices: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """MindSpore's ``Gather``: ``params`` indexed by ``indices`` along ``axis``."""
    return torch.index_select(params, axis, indices.reshape(-1)).reshape(
        *params.shape[:axis], *indices.shape, *params.shape[axis + 1 :]
    )


def split(x: torch.Tensor, axis: int = 0, output_num: int = 1) -> tuple[torch.Tensor, ...]:
    if x.shape[axis] % output_num:
        raise ValueError(
            f"Split: axis {axis} of size {x.shape[axis]} is not divisible by {output_num}"
        )
    return torch.split(x, x.shape[axis] // output_num, dim=axis)


# ---------------------------------------------------------------------- primitive classes
class Reshape(Primitive):
    def __call__(self, x: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
        return reshape(x, shape)


class Transpose(Primitive):
    def __call__(self, x: torch.Tensor, perm: Sequence[int]) -> torch.Tensor:
        return transpose(x, perm)


class Squeeze(Primitive):
    def __init__(self, axis: Any = ()) -> None:
        self.axis = axis

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return squeeze(x, self.axis)


class ExpandDims(Primitive):
    def __call__(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        return expand_dims(x, axis)


class Concat(Primitive):
    def __init__(self, axis: int = 0) -> None:
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return concat(tensors, self.axis)


class Stack(Primitive):
    def __init__(self, axis: int = 0) -> None:
        self.axis = axis

    def __call__(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return stack(tensors, self.axis)


class Flatten(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return flatten(x, 1)


class Tile(Primitive):
    def __call__(self, x: torch.Tensor, multiples: Sequence[int]) -> torch.Tensor:
        return tile(x, multiples)


class Shape(Primitive):
    def __call__(self, x: torch.Tensor) -> tuple[int, ...]:
        return shape(x)


class Cast(Primitive):
    def __call__(self, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return cast(x, dtype)


class _Reduce(Primitive):
    _fn: Any = None

    def __init__(self, keep_dims: bool = False) -> None:
        if not isinstance(keep_dims, bool):
            raise TypeError(f"{type(self).__name__}: keep_dims must be a bool")
        self.keep_dims = keep_dims

    def __call__(self, x: torch.Tensor, axis: Any = ()) -> torch.Tensor:
        return type(self)._fn(x, axis, self.keep_dims)


class ReduceMean(_Reduce):
    _fn = staticmethod(mean)


class ReduceSum(_Reduce):
    _fn = staticmethod(reduce_sum)


class ReduceMax(_Reduce):
    _fn = staticmethod(reduce_max)


class Softmax(Primitive):
    def __init__(self, axis: int = -1) -> None:
        self.axis = axis[0] if isinstance(axis, (tuple, list)) else axis

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x, self.axis)


class LogSoftmax(Softmax):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return log_softmax(x, self.axis)


class Argmax(Primitive):
    """Indices of the maxima along ``axis`` as ``output_type`` (MindSpore: int32)."""

    def __init__(self, axis: int = -1, output_type: torch.dtype = torch.int32) -> None:
        self.axis, self.output_type = axis, output_type

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.axis).to(self.output_type)


class MatMul(Primitive):
    def __init__(self, transpose_a: bool = False, transpose_b: bool = False) -> None:
        self.transpose_a, self.transpose_b = transpose_a, transpose_b

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.transpose(-2, -1) if self.transpose_a else a
        b = b.transpose(-2, -1) if self.transpose_b else b
        return torch.matmul(a, b)


BatchMatMul = MatMul


class OneHot(Primitive):
    def __init__(self, axis: int = -1) -> None:
        self.axis = axis

    def __call__(self, indices, depth: int, on_value: Any, off_value: Any) -> torch.Tensor:
        return one_hot(indices, depth, on_value, off_value, self.axis)


class Gather(Primitive):
    def __call__(self, params: torch.Tensor, indices: torch.Tensor, axis: int) -> torch.Tensor:
        return gather(params, indices, axis)


class Split(Primitive):
    def __init__(self, axis: int = 0, output_num: int = 1) -> None:
        self.axis, self.output_num = axis, output_num

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return split(x, self.axis, self.output_num)


def _elementwise(name: str, fn: Any) -> type:
    def call(self: Any, *args: Any) -> torch.Tensor:
        return fn(*args)

    return type(name, (Primitive,), {"__call__": call, "__doc__": f"MindSpore's ``{name}``."})


Add = _elementwise("Add", torch.add)
Sub = _elementwise("Sub", torch.sub)
Mul = _elementwise("Mul", torch.mul)
Div = _elementwise("Div", torch.div)
RealDiv = _elementwise("RealDiv", torch.div)
Sqrt = _elementwise("Sqrt", torch.sqrt)
Exp = _elementwise("Exp", torch.exp)
Log = _elementwise("Log", torch.log)
Pow = _elementwise("Pow", torch.pow)
Abs = _elementwise("Abs", torch.abs)
Maximum = _elementwise("Maximum", torch.maximum)
Minimum = _elementwise("Minimum", torch.minimum)
Equal = _elementwise("Equal", torch.eq)
Select = _elementwise("Select", torch.where)
ReLU = _elementwise("ReLU", torch.relu)
Sigmoid = _elementwise("Sigmoid", torch.sigmoid)
Tanh = _elementwise("Tanh", torch.tanh)


class ZerosLike(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


class OnesLike(Primitive):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(x)


# ---------------------------------------------------------------------- gradients
def value_and_grad(
    fn: Any, grad_position: Any = 0, weights: Any = None, has_aux: bool = False
) -> Any:
    """MindSpore's ``value_and_grad``: a function returning ``(fn(*inputs), grads)``.

    ``grads`` are the gradients of ``fn``'s first output with respect to the inputs at
    ``grad_position`` (an int, a tuple, or None for none) and/or to ``weights`` (a tuple of
    parameters, e.g. ``optimizer.parameters``): one of them alone, or ``(inputs, weights)``
    when both are asked, as MindSpore returns them. ``has_aux``: ``fn`` returns
    ``(loss, *aux)``; only the loss is differentiated. The article's loop::

        grad_fn = jisu.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
        (loss, logits), grads = grad_fn(data, label)
        optimizer(grads)
    """
    positions = (grad_position,) if isinstance(grad_position, int) else grad_position
    params = None if weights is None else tuple(weights)
    if positions is None and params is None:
        raise ValueError("value_and_grad: grad_position and weights cannot both be None")

    def wrapped(*inputs: Any) -> Any:
        inputs = list(inputs)
        for i in positions or ():
            inputs[i] = inputs[i].detach().requires_grad_(True)
        with torch.enable_grad():
            value = fn(*inputs)
            loss = value[0] if has_aux else value
            targets = [inputs[i] for i in positions or ()] + list(params or ())
            grads = torch.autograd.grad(loss, targets, allow_unused=True)
        grads = tuple(torch.zeros_like(t) if g is None else g for g, t in zip(grads, targets))
        n = len(positions or ())
        inputs_grads = grads[:n] if not isinstance(grad_position, int) else grads[0]
        if params is None:
            out = inputs_grads
        elif positions is None:
            out = grads[n:]
        else:
            out = (inputs_grads, grads[n:])
        if has_aux:
            value = tuple(v.detach() if isinstance(v, torch.Tensor) else v for v in value)
        else:
            value = value.detach()
        return value, out

    return wrapped


def grad(fn: Any, grad_position: Any = 0, weights: Any = None, has_aux: bool = False) -> Any:
    """MindSpore's ``grad``: the gradients only (see :func:`value_and_grad`)."""
    both = value_and_grad(fn, grad_position, weights, has_aux)

    def wrapped(*inputs: Any) -> Any:
        value, grads = both(*inputs)
        return (grads, value[1:]) if has_aux else grads

    return wrapped

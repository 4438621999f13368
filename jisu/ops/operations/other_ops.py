"""MindSpore's graph-helper primitives on torch (``mindspore.ops.operations.other_ops`` and
kin): ``DType``, ``Depend``, ``Identity``, ``StopGradient``, ``Assign``/``AssignAdd``/
``AssignSub``, ``Print``, ``ScalarToTensor``, ``TupleToArray``, ``ScalarCast``, ``Size``,
``Partial``, the summary operators (their values kept for :func:`take_summaries`) and
``FusedWeightScaleApplyMomentum``.

Eager, so a graph helper does what MindSpore's graph ends up doing: ``Depend`` returns its
first argument (its second, evaluated as an argument, has already run), the assignments
write in place into the parameter without autograd history.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

import numpy as np
import torch

from ..primitive import Primitive


def ms_dtype_name(dtype: torch.dtype) -> str:
    """MindSpore's name of a dtype (``Float32``, ``Int64``, ``Bool``, ``BFloat16``...)."""
    name = str(dtype).replace("torch.", "")
    special = {"bool": "Bool", "bfloat16": "BFloat16"}
    if name in special:
        return special[name]
    if name.startswith("uint"):
        return "UInt" + name[4:]
    return name[0].upper() + name[1:]


class DType(Primitive):
    """The dtype of a tensor (MindSpore's ``mstype`` is torch's dtype in jisu)."""

    def __call__(self, x: Any) -> torch.dtype:
        if isinstance(x, torch.Tensor):
            return x.dtype
        if isinstance(x, bool):
            return torch.bool
        if isinstance(x, int):
            return torch.int64
        if isinstance(x, float):
            return torch.float32
        raise TypeError(f"DType: x must be a tensor or a number. Received {type(x).__name__}")


class Depend(Primitive):
    """``value``, once ``expr`` has run (it has: it was evaluated as an argument)."""

    def __call__(self, value: Any, expr: Any) -> Any:
        return value


def _map(fn: Any, x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(_map(fn, item) for item in x)
    return fn(x) if isinstance(x, torch.Tensor) else x


class Identity(Primitive):
    """Its input, as it is (tensors, tuples of them, anything)."""

    def __call__(self, x: Any) -> Any:
        return x


class StopGradient(Primitive):
    """Its input without autograd history (``detach``; tuples element by element)."""

    def __call__(self, x: Any) -> Any:
        return _map(torch.Tensor.detach, x)


def _assign_check(owner: str, variable: Any, value: Any) -> torch.Tensor:
    if not isinstance(variable, torch.Tensor):
        raise TypeError(
            f"{owner}: variable must be a Parameter or a tensor. Received {type(variable).__name__}"
        )
    return torch.as_tensor(value, device=variable.device).to(variable.dtype)


class Assign(Primitive):
    """``variable = value`` in place (broadcast, cast to ``variable``'s dtype), with no
    autograd history; returns ``variable``."""

    def __call__(self, variable: torch.Tensor, value: Any) -> torch.Tensor:
        value = _assign_check("Assign", variable, value)
        with torch.no_grad():
            variable.copy_(value)
        return variable


class AssignAdd(Primitive):
    """``variable += value`` in place, with no autograd history; returns ``variable``."""

    def __call__(self, variable: torch.Tensor, value: Any) -> torch.Tensor:
        value = _assign_check("AssignAdd", variable, value)
        with torch.no_grad():
            variable.add_(value)
        return variable


class AssignSub(Primitive):
    """``variable -= value`` in place, with no autograd history; returns ``variable``."""

    def __call__(self, variable: torch.Tensor, value: Any) -> torch.Tensor:
        value = _assign_check("AssignSub", variable, value)
        with torch.no_grad():
            variable.sub_(value)
        return variable


def format_tensor(x: torch.Tensor) -> str:
    """A tensor as MindSpore prints it: ``Tensor(shape=[2], dtype=Float32, value= [...])``."""
    array = x.detach().cpu()
    if array.dtype == torch.bfloat16:
        array = array.float()
    array = array.numpy()
    head = f"Tensor(shape={list(x.shape)}, dtype={ms_dtype_name(x.dtype)}, value="
    if array.ndim == 0:
        return f"{head} {array.item()})"
    fmt = {"float": lambda v: f"{v: .8e}"} if np.issubdtype(array.dtype, np.floating) else None
    body = np.array2string(array, separator=", ", formatter=fmt, threshold=1000)
    return f"{head} {body})" if array.ndim == 1 else f"{head}\n{body})"


class Print(Primitive):
    """Print its inputs, one a line, tensors as MindSpore prints them; returns None."""

    def __call__(self, *inputs: Any) -> None:
        for x in inputs:
            print(format_tensor(x) if isinstance(x, torch.Tensor) else x)


class ScalarToTensor(Primitive):
    """A Python number as a 0-d tensor of ``dtype`` (default float32)."""

    def __call__(self, x: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if isinstance(x, torch.Tensor) or not isinstance(x, (numbers.Number, np.number)):
            raise TypeError(f"ScalarToTensor: x must be a number. Received {type(x).__name__}")
        return torch.tensor(x, dtype=dtype)


class TupleToArray(Primitive):
    """A tuple of numbers as a 1-D tensor: int32 for ints, float32 for floats (MindSpore's
    dtypes)."""

    def __call__(self, x: Any) -> torch.Tensor:
        if isinstance(x, range):  # MindSpore takes a range too (official/cv/YOLOv3's grids)
            x = tuple(x)
        if not isinstance(x, (tuple, list)) or not x:
            raise TypeError(f"TupleToArray: x must be a non-empty tuple of numbers. Received {x!r}")
        if any(isinstance(v, torch.Tensor) for v in x):
            raise TypeError("TupleToArray: x must hold numbers, not tensors")
        out = torch.tensor(x)
        if out.dtype == torch.int64:
            return out.to(torch.int32)
        if out.dtype == torch.float64:
            return out.to(torch.float32)
        return out


class ScalarCast(Primitive):
    """A Python number cast to ``dtype`` (int64 -> int, float64/float32 -> float, bool)."""

    def __call__(self, x: Any, dtype: Any) -> Any:
        if isinstance(x, torch.Tensor):
            x = x.item()  # host synchronisation: MindSpore's scalar is a Python value
        if dtype in (torch.bool, bool):
            return bool(x)
        if dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, int):
            return int(x)
        if dtype in (torch.float16, torch.float32, torch.float64, torch.bfloat16, float):
            return float(x)
        raise TypeError(f"ScalarCast: unsupported dtype {dtype!r}")


class Size(Primitive):
    """The number of elements of a tensor (a Python int)."""

    def __call__(self, x: torch.Tensor) -> int:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"Size: x must be a tensor. Received {type(x).__name__}")
        return x.numel()


class Partial(Primitive):
    """``Partial()(fn, *args)``: ``fn`` with its first arguments bound."""

    def __call__(self, fn: Any, *args: Any) -> Any:
        return functools.partial(fn, *args)


#: the latest value of each summary operator's tag, by MindSpore's plugin name, until taken
_PENDING_SUMMARIES: dict[str, dict[str, torch.Tensor]] = {}


def take_summaries() -> dict[str, dict[str, torch.Tensor]]:
    """The values the summary operators recorded since the last call, as ``{plugin: {tag:
    tensor}}`` (plugins ``scalar``, ``tensor``, ``image``, ``histogram``), and forget them: what
    a summary writer drains at its ``record(step)``."""
    taken = {plugin: dict(values) for plugin, values in _PENDING_SUMMARIES.items()}
    _PENDING_SUMMARIES.clear()
    return taken


class _Summary(Primitive):
    """MindSpore's summary operators: ``Op()(tag, value)`` keeps the latest value of each tag
    (detached, on its device: no synchronisation) for a summary writer to take
    (:func:`take_summaries`); returns None."""

    _plugin = "tensor"

    def __call__(self, name: str, value: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{type(self).__name__}: name must be a non-empty str. Received {name!r}"
            )
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"{type(self).__name__}: value must be a tensor. Received {type(value).__name__}"
            )
        if self._plugin == "scalar" and value.numel() != 1:
            raise ValueError(f"ScalarSummary: the value of {name!r} must have one element")
        _PENDING_SUMMARIES.setdefault(self._plugin, {})[name] = value.detach()


class ScalarSummary(_Summary):
    """MindSpore's ``ScalarSummary`` (a one-element value)."""

    _plugin = "scalar"


class TensorSummary(_Summary):
    """MindSpore's ``TensorSummary``."""

    _plugin = "tensor"


class ImageSummary(_Summary):
    """MindSpore's ``ImageSummary`` (NCHW images)."""

    _plugin = "image"


class HistogramSummary(_Summary):
    """MindSpore's ``HistogramSummary``."""

    _plugin = "histogram"


class FusedWeightScaleApplyMomentum(Primitive):
    """Momentum with weight decay and a gradient scale, in place:
    ``g = variable * weight_decay + gradient * loss_scale``; ``accumulation = momentum *
    accumulation + g``; ``variable -= learning_rate * accumulation``. Returns ``variable``.
    (``loss_scale`` multiplies: MindSpore's optimizers pass the reciprocal of the scale.)"""

    def __call__(self, weight_decay: Any, loss_scale: Any, variable: torch.Tensor,
                 accumulation: torch.Tensor, learning_rate: Any, gradient: torch.Tensor,
                 momentum: Any) -> torch.Tensor:  # fmt: skip
        with torch.no_grad():
            g = variable * weight_decay + gradient.to(variable.dtype) * loss_scale
            accumulation.mul_(momentum).add_(g)
            variable.sub_(accumulation * learning_rate)
        return variable


__all__ = [
    "Assign",
    "AssignAdd",
    "AssignSub",
    "DType",
    "Depend",
    "FusedWeightScaleApplyMomentum",
    "HistogramSummary",
    "Identity",
    "ImageSummary",
    "Partial",
    "Print",
    "ScalarCast",
    "ScalarSummary",
    "ScalarToTensor",
    "Size",
    "StopGradient",
    "TensorSummary",
    "TupleToArray",
]

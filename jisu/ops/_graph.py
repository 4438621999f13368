"""MindSpore's graph helpers in the ``ops`` namespace (``depend``, ``partial``,
``stop_gradient``, ``identity``, ``tuple_to_array``, ``scalar_to_tensor``, ``dtype``,
``assign``, ``assign_add``, ...), eager on torch.

In MindSpore's graph mode they order side effects and fold constants; run eagerly they are
what the graph ends up computing: ``depend(value, expr)`` is ``value`` (``expr`` — an
optimizer call, an assignment — already ran as an argument), ``constexpr`` functions run on
their Python values.
"""

from __future__ import annotations

from typing import Any

import torch

from .composite import add_flags
from .composite.hyper_map import partial
from .operations.other_ops import (
    Assign,
    AssignAdd,
    AssignSub,
    Depend,
    DType,
    Identity,
    ScalarToTensor,
    StopGradient,
    TupleToArray,
)
from .primitive import constexpr

_depend = Depend()
_identity = Identity()
_stop_gradient = StopGradient()
_assign, _assign_add, _assign_sub = Assign(), AssignAdd(), AssignSub()
_dtype = DType()
_scalar_to_tensor = ScalarToTensor()
_tuple_to_array = TupleToArray()


def depend(value: Any, expr: Any) -> Any:
    """``value``, once ``expr`` has run (evaluated as an argument, it has)."""
    return _depend(value, expr)


def identity(x: Any) -> Any:
    """``x`` as it is (tensors, tuples: the no-op gradient reducer of one process)."""
    return _identity(x)


def stop_gradient(x: Any) -> Any:
    """``x`` without autograd history (tuples element by element)."""
    return _stop_gradient(x)


def dtype(x: Any) -> torch.dtype:
    """The dtype of ``x``."""
    return _dtype(x)


def assign(variable: torch.Tensor, value: Any) -> torch.Tensor:
    """``variable = value`` in place, no autograd history; returns ``variable``."""
    return _assign(variable, value)


def assign_add(variable: torch.Tensor, value: Any) -> torch.Tensor:
    """``variable += value`` in place, no autograd history; returns ``variable``."""
    return _assign_add(variable, value)


def assign_sub(variable: torch.Tensor, value: Any) -> torch.Tensor:
    """``variable -= value`` in place, no autograd history; returns ``variable``."""
    return _assign_sub(variable, value)


def scalar_to_tensor(input_x: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A number as a 0-d tensor of ``dtype`` (default float32, as MindSpore)."""
    return _scalar_to_tensor(input_x, dtype)


def tuple_to_array(input_x: Any) -> torch.Tensor:
    """A tuple of numbers as a 1-D tensor (int32 for ints, float32 for floats)."""
    return _tuple_to_array(input_x)


def make_range(start: int, limit: int | None = None, delta: int = 1) -> tuple[int, ...]:
    """MindSpore's ``make_range``: ``tuple(range(start, limit, delta))`` (``make_range(n)``
    is ``range(n)``)."""
    if limit is None:
        start, limit = 0, start
    for name, v in (("start", start), ("limit", limit), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"make_range: {name} must be an int. Received {name}={v!r}")
    if delta == 0:
        raise ValueError("make_range: delta cannot be 0")
    return tuple(range(start, limit, delta))


def tuple_len(x: Any) -> int:
    """The length of a tuple or list."""
    return len(x)


def mixed_precision_cast(dst_type: torch.dtype, x: Any) -> Any:
    """``x`` with every floating tensor (nested in tuples, lists, dicts too) cast to
    ``dst_type``; other values unchanged."""
    if isinstance(x, torch.Tensor):
        return x.to(dst_type) if x.is_floating_point() else x
    if isinstance(x, (tuple, list)):
        return type(x)(mixed_precision_cast(dst_type, v) for v in x)
    if isinstance(x, dict):
        return {k: mixed_precision_cast(dst_type, v) for k, v in x.items()}
    return x


__all__ = [
    "add_flags",
    "assign",
    "assign_add",
    "assign_sub",
    "constexpr",
    "depend",
    "dtype",
    "identity",
    "make_range",
    "mixed_precision_cast",
    "partial",
    "scalar_to_tensor",
    "stop_gradient",
    "tuple_len",
    "tuple_to_array",
]

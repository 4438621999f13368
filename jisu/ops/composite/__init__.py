"""MindSpore's ``mindspore.ops.composite`` (imported ``as C``): ``GradOperation``, ``HyperMap``,
``Map``, ``MultitypeFuncGraph``, ``clip_by_global_norm``, ``clip_by_value``, ``ones_like``,
``zeros_like``, ``add_flags``, on torch autograd, eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .clip import clip_by_global_norm, clip_by_value  # noqa: F401 (C.clip_by_value)
from .grad import GradOperation
from .hyper_map import HyperMap, Map, MultitypeFuncGraph


def _like(x: Any, value: int) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.full_like(x, value)
    if isinstance(x, (tuple, list)):
        return type(x)(_like(item, value) for item in x)
    if isinstance(x, bool):
        return bool(value)
    if isinstance(x, (int, float)):
        return type(x)(value)
    raise TypeError(f"{'ones' if value else 'zeros'}_like: unsupported input {type(x).__name__}")


def ones_like(x: Any) -> Any:
    """Ones shaped and typed as ``x``: a tensor, a number, or a (nested) tuple/list of them."""
    return _like(x, 1)


def zeros_like(x: Any) -> Any:
    """Zeros shaped and typed as ``x``: a tensor, a number, or a (nested) tuple/list of them."""
    return _like(x, 0)


def add_flags(fn: Callable | None = None, **flags: Any) -> Any:
    """MindSpore's ``add_flags``: attach graph-compiler flags (``has_effect=True``, ...) to a
    function or a Cell; they are recorded in ``_mindspore_flags`` and change nothing in jisu.
    Usable as ``@add_flags(has_effect=True)`` or ``add_flags(fn, has_effect=True)``."""

    def deco(f: Any) -> Any:
        try:
            recorded = dict(getattr(f, "_mindspore_flags", {}), **flags)
            object.__setattr__(f, "_mindspore_flags", recorded)
        except (AttributeError, TypeError):  # a builtin that takes no attributes
            pass
        return f

    return deco if fn is None else deco(fn)


def core(fn: Callable | None = None, **flags: Any) -> Any:
    """MindSpore's ``@core`` (a graph-compiler marker): returns the function unchanged."""
    return add_flags(fn, core=True, **flags)


def __getattr__(name: str) -> Any:
    """Every other function of ``jisu.ops`` (MindSpore's ``C`` re-exports many of them:
    ``C.matmul``, ``C.tensor_dot``, ``C.uniform`` ...)."""
    from ... import ops

    if name.startswith("__") or name not in vars(ops):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return vars(ops)[name]


__all__ = [
    "GradOperation",
    "HyperMap",
    "Map",
    "MultitypeFuncGraph",
    "add_flags",
    "clip_by_global_norm",
]

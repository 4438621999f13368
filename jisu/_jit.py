"""MindSpore's ``jit`` (and ``ms_function``, its 2.0 name): compile a function or a
``construct`` where compiling pays, run it eagerly otherwise.

The rule: a call runs through ``torch.compile`` when the context is GRAPH_MODE
(``jisu.set_context(mode=GRAPH_MODE)``) and a tensor argument is on a CUDA device; every other
call runs the Python function eagerly. On the CPU eager execution is usually faster than a
compiled graph (compiling costs seconds and the CPU kernels gain little from fusion, issue
48), and in PYNATIVE_MODE MindSpore itself runs un-jitted code eagerly. The values and
gradients are the same either way. The compiled function is built once, at its first such call;
if ``torch.compile`` fails on it, a warning says why and the function runs eagerly from then
on. MindSpore's options (``input_signature``, ``hash_args``, ``jit_config``, ``capture_mode``,
``jit_level``, ``backend`` ...) are accepted; ``dynamic`` and ``fullgraph`` are passed to
``torch.compile``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import torch

from .context import graph_mode

__all__ = ["jit", "ms_function"]


def _on_cuda(args: tuple, kwargs: dict) -> bool:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return True
        if isinstance(value, torch.nn.Module):  # ``self`` of a jitted construct
            tensor = next(value.parameters(), None)
            if tensor is not None and tensor.is_cuda:
                return True
    return False


def _decorate(fn: Callable, dynamic: Any, fullgraph: bool) -> Callable:
    compiled: list[Callable | None] = []  # [] not built yet; [None] compiling failed

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not (graph_mode() and _on_cuda(args, kwargs)):
            return fn(*args, **kwargs)
        if not compiled:
            compiled.append(torch.compile(fn, dynamic=dynamic, fullgraph=fullgraph))
        if compiled[0] is None:
            return fn(*args, **kwargs)
        try:
            return compiled[0](*args, **kwargs)
        except torch._dynamo.exc.TorchDynamoException as exc:  # compiling, not the function
            warnings.warn(
                f"jit: torch.compile failed on {getattr(fn, '__qualname__', fn)} "
                f"({type(exc).__name__}: {exc}); running it eagerly",
                RuntimeWarning,
                stacklevel=2,
            )
            compiled[0] = None
            return fn(*args, **kwargs)

    wrapped.__jisu_jit__ = True  # type: ignore[attr-defined]
    return wrapped


def jit(
    fn: Callable | None = None,
    input_signature: Any = None,
    hash_args: Any = None,
    jit_config: Any = None,
    *,
    capture_mode: str = "ast",
    jit_level: str = "O0",
    dynamic: Any = 0,
    fullgraph: bool = False,
    backend: str = "",
    **options: Any,
) -> Any:
    """``@jit``, ``@jit(...)`` or ``jit(fn)``: ``fn`` compiled in GRAPH_MODE on CUDA, eager
    otherwise (the module docstring gives the rule). ``dynamic``: MindSpore's 0/1 or torch's
    None/bool (0 is torch's None: recompile with dynamic shapes when shapes change)."""
    if fn is not None and not callable(fn):
        raise TypeError(f"jit: fn must be a function or a Cell method. Received {fn!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"jit: fullgraph must be a bool. Received fullgraph={fullgraph!r}")
    torch_dynamic = (
        {0: None, 1: True}.get(dynamic, dynamic) if not isinstance(dynamic, bool) else dynamic
    )
    if fn is None:
        return functools.partial(_decorate, dynamic=torch_dynamic, fullgraph=fullgraph)
    return _decorate(fn, torch_dynamic, fullgraph)


#: MindSpore 2.0's name for :func:`jit`
ms_function = jit

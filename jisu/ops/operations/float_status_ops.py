"""MindSpore's overflow checks on torch: ``FloatStatus`` and the Ascend status register idiom
(``NPUAllocFloatStatus`` / ``NPUClearFloatStatus`` / ``NPUGetFloatStatus``).

On Ascend the status register records every floating-point overflow on the device; train
cells clear it before the backward pass and read it after::

    init = self.alloc_status()              # NPUAllocFloatStatus: zeros, shape (8,)
    clear = self.clear_status(init)         # NPUClearFloatStatus
    grads = self.grad(self.network, weights)(*inputs, sens)
    self.get_status(init)                   # NPUGetFloatStatus
    flag_sum = self.reduce_sum(init, (0,))  # > 0: an overflow happened

torch has no such register: a status tensor once cleared is *watched*, and every gradient
:class:`jisu.ops.composite.GradOperation` computes while it is watched adds 1 to its first
element when any gradient holds inf or NaN. The idiom therefore gives MindSpore's answer:
non-zero after an overflow of the gradients, zero otherwise (overflows elsewhere in the forward
pass show as inf/NaN gradients too). The checks run on the device; nothing synchronises.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch

from ..primitive import Primitive

_WATCHED: dict[int, weakref.ref] = {}


def _device() -> torch.device:
    from ...context import context_device

    return context_device() or torch.device("cpu")


def nonfinite(tensors: Iterable[Any]) -> torch.Tensor | None:
    """A 0-d float32 tensor: 1.0 when one of ``tensors`` (floating ones) holds inf/NaN, else
    0.0; None when there is none to check."""
    flags = [
        (~torch.isfinite(t)).any()
        for t in tensors
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
    ]
    if not flags:
        return None
    if len(flags) == 1:
        return flags[0].to(torch.float32)
    device = flags[0].device
    return torch.stack([f.to(device) for f in flags]).any().to(torch.float32)


def record_gradients(grads: Iterable[Any]) -> None:
    """Called with the gradients GradOperation computed: mark an overflow in every watched
    status tensor (see the module). Free when nothing is watched."""
    if not _WATCHED:
        return
    flag = None
    for key, ref in list(_WATCHED.items()):
        status = ref()
        if status is None:
            del _WATCHED[key]
            continue
        if flag is None:
            flag = nonfinite(grads)
            if flag is None:
                return
        with torch.no_grad():
            status[0].add_(flag.to(status.device, status.dtype))


class FloatStatus(Primitive):
    """Whether ``x`` holds inf or NaN: a float32 tensor of shape (1,), 1.0 or 0.0."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"FloatStatus: x must be a tensor. Received {type(x).__name__}")
        if not (x.is_floating_point() or x.is_complex()):
            return torch.zeros(1, dtype=torch.float32, device=x.device)
        return (~torch.isfinite(x)).any().to(torch.float32).reshape(1)


class NPUAllocFloatStatus(Primitive):
    """A status tensor: float32 zeros of shape (8,) (on the context's device)."""

    def __call__(self) -> torch.Tensor:
        return torch.zeros(8, dtype=torch.float32, device=_device())


def _check_status(owner: str, status: Any) -> None:
    if not isinstance(status, torch.Tensor) or tuple(status.shape) != (8,):
        shape = tuple(status.shape) if isinstance(status, torch.Tensor) else type(status).__name__
        raise ValueError(
            f"{owner}: the status must be a float32 tensor of shape (8,) from "
            f"NPUAllocFloatStatus. Received {shape}"
        )


class NPUClearFloatStatus(Primitive):
    """Zero the status (in place) and watch it: the gradients computed from now on mark an
    overflow in it. Returns the status."""

    def __call__(self, status: torch.Tensor) -> torch.Tensor:
        _check_status("NPUClearFloatStatus", status)
        with torch.no_grad():
            status.zero_()
        _WATCHED[id(status)] = weakref.ref(status)
        return status


class NPUGetFloatStatus(Primitive):
    """The status (updated in place): its sum is > 0 when a gradient computed since the last
    :class:`NPUClearFloatStatus` held inf or NaN."""

    def __call__(self, status: torch.Tensor) -> torch.Tensor:
        _check_status("NPUGetFloatStatus", status)
        return status


__all__ = ["FloatStatus", "NPUAllocFloatStatus", "NPUClearFloatStatus", "NPUGetFloatStatus"]

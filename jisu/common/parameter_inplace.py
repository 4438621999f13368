"""MindSpore's in-place arithmetic on a parameter inside ``construct`` (``self.updates += 1``).

MindSpore reads ``self.p += x`` in a cell as an assignment to the parameter: the parameter
takes the new value, no gradient flows through the update, and later uses of ``self.p`` see the
new value (mindcv's ``TrainStep.ema_update`` counts steps this way, as do many step counters of
the zoo). Torch refuses an in-place operation on a leaf that requires gradients while gradients
are recorded. :func:`install` gives ``torch.nn.Parameter``'s ``+=``, ``-=``, ``*=``, ``/=``
MindSpore's meaning in exactly that case (the update runs without recording); every form torch
accepts keeps torch's meaning, so nothing torch code relies on changes.
"""

from __future__ import annotations

from typing import Any

import torch

_OPS = ("__iadd__", "__isub__", "__imul__", "__itruediv__")


def _assigning(name: str) -> Any:
    torch_op = getattr(torch.Tensor, name)

    def op(self: torch.Tensor, other: Any) -> torch.Tensor:
        if self.requires_grad and torch.is_grad_enabled():
            with torch.no_grad():  # MindSpore's assignment: not a differentiable operation
                return torch_op(self, other)
        return torch_op(self, other)

    op.__name__ = name
    op._jisu_original = torch_op  # type: ignore[attr-defined]
    return op


def install() -> None:
    """Give ``torch.nn.Parameter`` MindSpore's in-place arithmetic (idempotent)."""
    for name in _OPS:
        if not hasattr(torch.nn.Parameter.__dict__.get(name), "_jisu_original"):
            setattr(torch.nn.Parameter, name, _assigning(name))

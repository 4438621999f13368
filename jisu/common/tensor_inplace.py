"""MindSpore's ``x += y`` inside ``construct``: a new tensor, the old one left as it was.

MindSpore's tensors have no in-place arithmetic: ``x += y`` in a cell's ``construct`` binds
``x`` to ``x + y``, and every other name for the old tensor keeps its value. Torch's ``+=``
writes into the tensor, so a ported ``construct`` that adds a residual to an LSTM's or a
sigmoid's output (research/nlp/gnmt_v2's ``decoder_outputs += residual``) fails in the backward
pass ("modified by an inplace operation"), and one that keeps another name for the tensor reads
the sum there. :func:`install` gives ``torch.Tensor``'s ``+=``, ``-=``, ``*=``, ``/=``
MindSpore's meaning while a :class:`jisu.nn.Cell` runs ``construct`` (:data:`DEPTH`), for a
tensor in the autograd graph (not a leaf, gradients recorded) or a constant that a tensor in the
graph is added into (a cell's zeros used as an accumulator): there the in-place form is what
breaks; everywhere else, torch's meaning stays.
"""

from __future__ import annotations

from typing import Any

import torch

#: how many ``construct`` calls are running (a one-element list: Cell.forward counts)
DEPTH = [0]

_OPS = {
    "__iadd__": torch.Tensor.__add__,
    "__isub__": torch.Tensor.__sub__,
    "__imul__": torch.Tensor.__mul__,
    "__itruediv__": torch.Tensor.__truediv__,
}


def _rebinding(name: str, out_of_place: Any) -> Any:
    torch_op = getattr(torch.Tensor, name)

    def op(self: torch.Tensor, other: Any) -> torch.Tensor:
        if DEPTH[0] and type(self) is torch.Tensor and torch.is_grad_enabled():
            if self.requires_grad and self.grad_fn is not None:
                return out_of_place(self, other)  # MindSpore's x = x + y
            if not self.requires_grad and isinstance(other, torch.Tensor) and other.requires_grad:
                # a constant taking on history (official/cv/FasterRCNN's rpn: loss = self.loss;
                # loss += item): in place, the cell's constant would keep this step's graph
                return out_of_place(self, other)
        return torch_op(self, other)

    op.__name__ = name
    op._jisu_original = torch_op  # type: ignore[attr-defined]
    return op


def install() -> None:
    """Give ``torch.Tensor`` MindSpore's in-place arithmetic inside ``construct`` (idempotent)."""
    for name, out_of_place in _OPS.items():
        if not hasattr(torch.Tensor.__dict__.get(name), "_jisu_original"):
            setattr(torch.Tensor, name, _rebinding(name, out_of_place))

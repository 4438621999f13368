"""MindSpore's ``boost.grad_accumulation``: ``GradientAccumulation(max_accumulation_step,
optimizer)`` adds ``grads / max_accumulation_step`` into its accumulators each call and, every
``max_accumulation_step`` calls, applies the optimizer to them and zeroes them; and the two
per-tensor functions, ``gradient_accumulation_op`` and ``gradient_clear_op``, that model-zoo
subclasses map over the accumulators with ``HyperMap``."""

from __future__ import annotations

from typing import Any

import torch

from ..common.tensor import Parameter
from ..nn.cell import Cell
from ..ops.composite import HyperMap, MultitypeFuncGraph

__all__ = ["GradientAccumulation", "gradient_accumulation_op", "gradient_clear_op"]

gradient_accumulation_op = MultitypeFuncGraph("gradient_accumulation_op")
gradient_clear_op = MultitypeFuncGraph("gradient_clear_op")


@gradient_accumulation_op.register("Number", "Tensor", "Tensor")  # MindSpore: "Int64"
def _cumulative_grad_process(accumulation_step: int, cumulative_grad: torch.Tensor,
                             grad: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """``cumulative_grad += grad / accumulation_step`` (in place)."""
    with torch.no_grad():
        cumulative_grad.add_(grad / accumulation_step)
    return cumulative_grad


@gradient_clear_op.register("Tensor")
def _clear_grad(cumulative_grad: torch.Tensor) -> torch.Tensor:
    """Zero ``cumulative_grad`` (in place)."""
    with torch.no_grad():
        cumulative_grad.zero_()
    return cumulative_grad


class GradientAccumulation(Cell):
    """Accumulates ``max_accumulation_step`` steps of gradients (each divided by that count),
    then lets ``optimizer`` apply them and starts again; ``construct(loss, grads)`` returns
    ``loss``. The accumulators are ``grad_accumulation.<name>`` zeros like the optimizer's
    parameters; ``_accumulation_step`` counts the calls (an int32 parameter, as in
    MindSpore)."""

    def __init__(self, max_accumulation_step: int, optimizer: Any) -> None:
        super().__init__()
        if (
            isinstance(max_accumulation_step, bool)
            or not isinstance(max_accumulation_step, int)
            or max_accumulation_step <= 0
        ):
            raise ValueError(
                "GradientAccumulation: max_accumulation_step must be a positive int. "
                f"Received: {max_accumulation_step!r}"
            )
        self._max_accumulation_step = max_accumulation_step
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.hyper_map = HyperMap()
        self._grad_accumulation = self.weights.clone(prefix="grad_accumulation", init="zeros")
        self._accumulation_step = Parameter(
            torch.tensor(0, dtype=torch.int32), "accumulation_step", requires_grad=False
        )

    def __setattr__(self, name: str, value: Any) -> None:
        # MindSpore code resets the counter with ``self._accumulation_step = 0``
        if name == "_accumulation_step" and not isinstance(value, torch.Tensor):
            with torch.no_grad():
                self._accumulation_step.fill_(value)
            return
        super().__setattr__(name, value)

    def construct(self, loss: torch.Tensor, grads: tuple) -> torch.Tensor:
        step = self._max_accumulation_step
        self.hyper_map(lambda acc, g: gradient_accumulation_op(step, acc, g),
                       self._grad_accumulation, grads)  # fmt: skip
        with torch.no_grad():
            self._accumulation_step += 1
        if int(self._accumulation_step) >= step:  # host sync: the step decides the update
            self.optimizer(self._grad_accumulation)
            self._accumulation_step = 0
        if int(self._accumulation_step) == 0:
            self.hyper_map(gradient_clear_op, self._grad_accumulation)
        return loss

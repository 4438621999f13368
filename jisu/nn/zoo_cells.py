"""MindSpore ``nn`` cells single model-zoo projects use: ``ForwardValueAndGrad``,
``ParameterUpdate``, ``PipelineCell`` and ``MicroBatchInterleaved`` (their micro-batch sums,
on one device); ``GraphCell`` and the ``AdaSum`` wrappers are refused by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._unprovided import refused_class
from .cell import Cell

__all__ = [
    "AdaSumByDeltaWeightWrapCell",
    "AdaSumByGradWrapCell",
    "ForwardValueAndGrad",
    "GraphCell",
    "MicroBatchInterleaved",
    "ParameterUpdate",
    "PipelineCell",
]


class ForwardValueAndGrad(Cell):
    """``(network(*inputs), grads)`` from one forward pass: the gradients ``GradOperation(
    get_all, get_by_list, sens_param)`` gives (of every input, of ``weights``, both as
    ``(inputs, weights)``, or of the first input when neither is asked; an input that is not
    floating point gets zeros); with ``sens_param`` the last input is the output's
    sensitivity, otherwise ones.

    Raises:
        TypeError: ``network`` is not callable, a flag is not a bool, or ``get_by_list``
            without a tuple/list of ``weights``.
    """

    def __init__(self, network: Callable, weights: Any = None, get_all: bool = False,
                 get_by_list: bool = False, sens_param: bool = False) -> None:  # fmt: skip
        super().__init__(auto_prefix=False)
        if not callable(network):
            raise TypeError(
                f"ForwardValueAndGrad: network must be a Cell or a function. Received: "
                f"{type(network).__name__}"
            )
        for name, value in (("get_all", get_all), ("get_by_list", get_by_list),
                            ("sens_param", sens_param)):  # fmt: skip
            if not isinstance(value, bool):
                raise TypeError(f"ForwardValueAndGrad: {name} must be a bool. Received: {value!r}")
        if get_by_list and not isinstance(weights, (tuple, list)):
            raise TypeError(
                "ForwardValueAndGrad: get_by_list=True needs weights, a tuple or list of "
                f"parameters. Received: {type(weights).__name__}"
            )
        self.network = network
        self.weights = weights
        self.get_all, self.get_by_list, self.sens_param = get_all, get_by_list, sens_param

    def construct(self, *inputs: Any) -> tuple[Any, Any]:
        sens = inputs[-1] if self.sens_param else None
        inputs = inputs[:-1] if self.sens_param else inputs
        want_inputs = self.get_all or not self.get_by_list
        positions = range(len(inputs)) if self.get_all else range(min(1, len(inputs)))
        args = list(inputs)
        leaves = {}
        for i in positions if want_inputs else ():
            x = args[i]
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                args[i] = leaves[i] = x.detach().requires_grad_()
        weights = list(self.weights) if self.get_by_list else []
        with torch.enable_grad():
            loss = self.network(*args)
        outputs = list(loss) if isinstance(loss, (tuple, list)) else [loss]
        if sens is None:
            grad_outputs = [torch.ones_like(o) for o in outputs]
        else:
            parts = list(sens) if isinstance(sens, (tuple, list)) else [sens]
            grad_outputs = [torch.as_tensor(g, dtype=o.dtype).expand_as(o)
                            for g, o in zip(parts, outputs, strict=True)]  # fmt: skip
        targets = [*leaves.values(), *(w for w in weights if w.requires_grad)]
        found = torch.autograd.grad(outputs, targets, grad_outputs, allow_unused=True)
        by_id = {id(t): g for t, g in zip(targets, found, strict=True)}

        def grad_of(t: Any) -> torch.Tensor:
            g = by_id.get(id(t))
            return torch.zeros_like(t) if g is None else g

        input_grads = tuple(
            grad_of(leaves[i]) if i in leaves else torch.zeros_like(torch.as_tensor(args[i]))
            for i in positions
        )
        weight_grads = tuple(grad_of(w) for w in weights)
        if self.get_all and self.get_by_list:
            grads: Any = (input_grads, weight_grads)
        elif self.get_by_list:
            grads = weight_grads
        elif self.get_all:
            grads = input_grads
        else:
            grads = input_grads[0]
        return loss, grads


class ParameterUpdate(Cell):
    """Writes its input into ``param`` (in place, outside autograd) and returns the input."""

    def __init__(self, param: torch.nn.Parameter) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(param, torch.nn.Parameter):
            raise TypeError(
                f"ParameterUpdate: param must be a Parameter. Received: {type(param).__name__}"
            )
        self._param = param

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self._param.copy_(x)
        return x


def _micro_batches(where: str, inputs: tuple, parts: int) -> list[tuple]:
    for x in inputs:
        if x.shape[0] % parts:
            raise ValueError(
                f"{where}: the batch axis ({x.shape[0]}) must divide into {parts} micro batches"
            )
    return list(zip(*(torch.chunk(x, parts, dim=0) for x in inputs), strict=True))


class PipelineCell(Cell):
    """The network on ``micro_size`` slices of the batch (axis 0), outputs summed, as
    MindSpore's pipeline wrapper computes; on one device the slices run one after another."""

    def __init__(self, network: Callable, micro_size: int) -> None:
        super().__init__(auto_prefix=False)
        if isinstance(micro_size, bool) or not isinstance(micro_size, int) or micro_size <= 0:
            raise ValueError(
                f"PipelineCell: micro_size must be a positive int. Received: {micro_size!r}"
            )
        self.network, self.micro_size = network, micro_size

    def construct(self, *inputs: torch.Tensor) -> Any:
        outputs = [
            self.network(*part) for part in _micro_batches("PipelineCell", inputs, self.micro_size)
        ]
        return sum(outputs[1:], outputs[0])


class MicroBatchInterleaved(Cell):
    """The network on ``interleave_num`` slices of the batch (axis 0), outputs summed (its
    output must be one tensor), as MindSpore's; on one device the slices run in turn."""

    def __init__(self, network: Callable, interleave_num: int = 2) -> None:
        super().__init__(auto_prefix=False)
        if (
            isinstance(interleave_num, bool)
            or not isinstance(interleave_num, int)
            or interleave_num <= 0
        ):
            raise ValueError(
                f"MicroBatchInterleaved: interleave_num must be a positive int. Received: "
                f"{interleave_num!r}"
            )
        self.network, self.interleave_num = network, interleave_num

    def construct(self, *inputs: torch.Tensor) -> torch.Tensor:
        parts = _micro_batches("MicroBatchInterleaved", inputs, self.interleave_num)
        return sum(self.network(*part) for part in parts)


GraphCell = refused_class(
    "nn.GraphCell",
    "it runs a MindIR graph loaded by mindspore.load, which only MindSpore's runtime executes; "
    "build the network in Python and load its .ckpt",
    base=Cell,
)
_ADASUM = (
    "AdaSum is MindSpore's adaptive-summation gradient reduction across Ascend nodes (hierarchical "
    "communication groups); train data-parallel with an all-reduce (jisu.Model under torchrun)"
)
AdaSumByGradWrapCell = refused_class("nn.AdaSumByGradWrapCell", _ADASUM, base=Cell)
AdaSumByDeltaWeightWrapCell = refused_class("nn.AdaSumByDeltaWeightWrapCell", _ADASUM, base=Cell)

"""MindSpore's loss-scaled training step: ``TrainOneStepWithLossScaleCell`` and its scale
managers ``DynamicLossScaleUpdateCell`` and ``FixedLossScaleUpdateCell``.

The loss is scaled, the gradients unscaled and checked for inf/NaN; an overflowing step updates
nothing (MindSpore's rule). The scale, the overflow flag and the dynamic manager's counters are
tensors on the device: with a ``jisu.nn`` optimizer the skip is decided on the device too
(its ``found_inf``), with no host synchronisation; another ``torch.optim`` optimizer needs
one (marked below).
"""

from __future__ import annotations

from typing import Any

import torch

from ...ops import operations as P
from ...ops.composite import HyperMap, MultitypeFuncGraph
from ...ops.operations.comm_ops import AllReduce
from ...ops.operations.float_status_ops import FloatStatus, NPUAllocFloatStatus, nonfinite
from ..cell import Cell
from .cell_wrapper import TrainOneStepCell


class DynamicLossScaleUpdateCell(Cell):
    """MindSpore's dynamic loss scale: on an overflow the scale is divided by
    ``scale_factor`` (not below 1); after ``scale_window`` steps without one it is multiplied
    by it.

    Args:
        loss_scale_value: the initial scale.
        scale_factor: the factor of each change.
        scale_window: the overflow-free steps before the scale grows.

    Calling it with ``(loss_scale, overflow)`` (0-d tensors) updates ``loss_scale`` in place and
    returns ``overflow``.
    """

    def __init__(self, loss_scale_value: float, scale_factor: float, scale_window: int) -> None:
        super().__init__()
        self.loss_scale_value = loss_scale_value
        self.scale_factor = float(scale_factor)
        self.scale_window = int(scale_window)
        self.register_buffer("cur_iter", torch.ones((), dtype=torch.int32))
        self.register_buffer("last_overflow_iter", torch.zeros((), dtype=torch.int32))

    def get_loss_scale(self) -> float:
        """The initial loss scale."""
        return self.loss_scale_value

    def __setattr__(self, name: str, value: Any) -> None:
        # mindocr restores the counters from a checkpoint: ``manager.cur_iter = Tensor(...)``
        buffers = self.__dict__.get("_buffers", {})
        if name in ("cur_iter", "last_overflow_iter") and name in buffers:
            with torch.no_grad():
                buffers[name].copy_(torch.as_tensor(value).reshape(()))
            return
        super().__setattr__(name, value)

    @torch.no_grad()
    def construct(self, loss_scale: torch.Tensor, overflow: Any) -> torch.Tensor:
        overflow = torch.as_tensor(overflow, device=loss_scale.device).reshape(()).to(torch.bool)
        lowered = torch.clamp(loss_scale / self.scale_factor, min=1.0)
        on_overflow = torch.where(overflow, lowered, loss_scale)
        grow = (self.cur_iter - self.last_overflow_iter) >= self.scale_window
        self.last_overflow_iter.copy_(
            torch.where(overflow | grow, self.cur_iter, self.last_overflow_iter)
        )
        new = torch.where(grow & ~overflow, on_overflow * self.scale_factor, on_overflow)
        loss_scale.copy_(new.reshape(loss_scale.shape))
        self.cur_iter.add_(1)
        return overflow


class FixedLossScaleUpdateCell(Cell):
    """A fixed loss scale: calling it with ``(loss_scale, overflow)`` returns ``overflow``.

    Args:
        loss_scale_value: the scale.
    """

    def __init__(self, loss_scale_value: float) -> None:
        super().__init__()
        self.loss_scale_value = loss_scale_value

    def get_loss_scale(self) -> float:
        """The loss scale."""
        return self.loss_scale_value

    def construct(self, loss_scale: torch.Tensor, overflow: Any) -> Any:
        return overflow


#: MindSpore's module-level helpers of ``nn.wrap.loss_scale`` that the zoo imports:
#: ``grad_scale(scale, grad)`` divides a gradient (or a RowTensor's values) by the scale,
#: ``_grad_overflow(grad)`` is its inf/NaN flag (float32, shape (1,))
grad_scale = MultitypeFuncGraph("grad_scale")
_grad_overflow = MultitypeFuncGraph("_grad_overflow")


@grad_scale.register("Tensor", "Tensor")
def _tensor_grad_scale(scale: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    return grad * torch.reciprocal(scale).to(grad.dtype)


@grad_scale.register("Tensor", "RowTensor")
def _row_tensor_grad_scale(scale: torch.Tensor, grad: Any) -> Any:
    values = grad.values * torch.reciprocal(scale).to(grad.values.dtype)
    return type(grad)(grad.indices, values, grad.dense_shape)


@_grad_overflow.register("Tensor")
def _tensor_grad_overflow(grad: torch.Tensor) -> torch.Tensor:
    return FloatStatus()(grad)


@_grad_overflow.register("RowTensor")
def _row_tensor_grad_overflow(grad: Any) -> torch.Tensor:
    return FloatStatus()(grad.values)


def _overflow_and_unscale(grads: list[torch.Tensor], scale: torch.Tensor) -> torch.Tensor:
    """Divide ``grads`` by ``scale`` in place; a 0-d bool tensor: whether one holds inf/NaN."""
    flags = [(~torch.isfinite(g)).any() for g in grads]
    torch._foreach_mul_(grads, [torch.reciprocal(scale).to(g.dtype) for g in grads])
    if not flags:
        return torch.zeros((), dtype=torch.bool, device=scale.device)
    return torch.stack(flags).any()


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """A training step with loss scaling: the backward pass starts from the scale, the gradients
    are divided by it, and a step whose gradients hold inf or NaN updates nothing.

    Returns ``(loss, overflow, scale)``: the loss before the update, a 0-d bool tensor, and the
    scale this step used (a copy; a dynamic manager may have changed it since).

    Args:
        network: the network with its loss.
        optimizer: a ``jisu.nn`` or any ``torch.optim`` optimizer.
        scale_sense: a :class:`DynamicLossScaleUpdateCell` / :class:`FixedLossScaleUpdateCell`,
            or a tensor of shape ``()`` or ``(1,)`` holding the scale.

    Raises:
        TypeError: ``scale_sense`` is neither a Cell nor a tensor.
        ValueError: a ``scale_sense`` tensor of another shape.
    """

    def __init__(
        self, network: torch.nn.Module, optimizer: torch.optim.Optimizer, scale_sense: Any
    ) -> None:
        super().__init__(network, optimizer, sens=None)
        self.loss_scaling_manager = None
        if isinstance(scale_sense, torch.nn.Module):
            self.loss_scaling_manager = scale_sense
            value = torch.tensor(float(scale_sense.get_loss_scale()), dtype=torch.float32)
        elif isinstance(scale_sense, torch.Tensor):
            if tuple(scale_sense.shape) not in ((), (1,)):
                raise ValueError(
                    "TrainOneStepWithLossScaleCell: scale_sense must have shape () or (1,). "
                    f"Received shape {tuple(scale_sense.shape)}"
                )
            value = scale_sense.detach().to(torch.float32).clone()
        else:
            raise TypeError(
                "TrainOneStepWithLossScaleCell: scale_sense must be a Cell or a tensor. "
                f"Received {type(scale_sense).__name__}"
            )
        self.register_buffer("scale_sense", value)
        # MindSpore's attributes, for subclasses written in its graph style (mindcv, mindocr)
        self.hyper_map = HyperMap()
        self.gpu_target = True  # the overflow is read from the gradients, as on GPU
        self.is_distributed = self.parallel_mode != "stand_alone"
        self.allreduce = AllReduce()
        self.base = torch.tensor(1.0)
        self.base0 = torch.tensor(0, dtype=torch.int32)
        self.reduce_sum = P.ReduceSum(keep_dims=False)
        self.reduce_all = P.ReduceAll(keep_dims=False)
        self.less_equal = P.LessEqual()
        self.equal = P.Equal()
        self.logic_not = P.LogicalNot()

    def start_overflow_check(self, pre_cond: Any, compute_input: Any) -> tuple[Any, Any]:
        """MindSpore's start of the overflow check: ``(status, compute_input)``. jisu reads
        the overflow from the gradients (see :meth:`get_overflow_status`); the status is a
        zero tensor of shape (8,), kept for code that passes it on."""
        return NPUAllocFloatStatus()(), compute_input

    def get_overflow_status(self, status: Any, compute_output: Any) -> torch.Tensor:
        """Whether ``compute_output`` (the gradients, nested tuples allowed) holds inf or NaN,
        on any process of the job: a 0-d bool tensor (no host synchronisation)."""
        leaves: list[torch.Tensor] = []
        stack = [compute_output]
        while stack:
            item = stack.pop()
            if isinstance(item, (tuple, list)):
                stack.extend(item)
            elif isinstance(item, torch.Tensor):
                leaves.append(item)
        flag = nonfinite(leaves)
        if flag is None:
            device = self.scale_sense.device
            return torch.zeros((), dtype=torch.bool, device=device)
        if self.is_distributed:
            flag = self.allreduce(flag)
        return flag > 0

    def set_sense_scale(self, sens: torch.Tensor) -> None:
        """Set the scale (a tensor of the scale's shape)."""
        if not isinstance(sens, torch.Tensor):
            raise TypeError(
                "TrainOneStepWithLossScaleCell: sens must be a tensor. "
                f"Received {type(sens).__name__}"
            )
        self.scale_sense.copy_(sens.reshape(self.scale_sense.shape))

    def process_loss_scale(self, overflow: torch.Tensor) -> torch.Tensor:
        """Let the manager (if any) update the scale; returns the overflow flag."""
        if self.loss_scaling_manager is not None:
            return self.loss_scaling_manager(self.scale_sense, overflow)
        return overflow

    def construct(self, *inputs: Any) -> tuple[Any, torch.Tensor, torch.Tensor]:
        loss = self.network(*inputs)
        scale = self.scale_sense.clone()
        self._backward(loss, scale.to(loss.dtype).reshape(()))
        self._reduce_grads()
        grads = [p.grad for p in self.weights if p.grad is not None]
        with torch.no_grad():
            overflow = _overflow_and_unscale(grads, scale.reshape(()))
            if self.is_distributed:
                overflow = self.allreduce(overflow.to(torch.float32)) > 0
            overflow = self.process_loss_scale(overflow)
        if getattr(self.optimizer, "handles_found_inf", False):
            self.optimizer.found_inf = overflow.to(torch.float32)  # skipped on the device
            try:
                type(self.optimizer).step(self.optimizer)  # its self.step may be a Parameter
            finally:
                self.optimizer.found_inf = None
        elif not bool(overflow):  # host synchronisation: a plain torch optimizer cannot skip
            type(self.optimizer).step(self.optimizer)
        result = self._result(loss.detach())
        return result, overflow, scale

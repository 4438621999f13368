"""MindSpore's wrapper cells for scripts that build their own training step: ``WithLossCell``,
``WithEvalCell`` and ``TrainOneStepCell``, on torch's autograd.

``TrainOneStepCell`` is the whole step in one call (forward, backward, optimizer step), as in
MindSpore; the gradients are torch's ``.grad`` (``loss.backward``), so DistributedDataParallel's
gradient hooks, gradient clipping hooks and any ``torch.optim`` optimizer work with it.

It also carries MindSpore's attributes, for the zoo's train cells that subclass it and write
their own ``construct`` in MindSpore's graph style: ``weights`` (the optimizer's parameters, a
tuple), ``grad`` (``GradOperation(get_by_list=True, sens_param=True)``),
``sens``, ``reducer_flag``, ``grad_reducer`` (``F.identity``, or a
:class:`~jisu.nn.wrap.grad_reducer.DistributedGradReducer` in data-parallel mode),
``parallel_mode``, and with a reducer ``mean`` and ``degree``. Under ``torchrun`` in
data-parallel mode, the step all-reduces the gradients itself (MindSpore's rule), unless the
network is already a ``DistributedDataParallel``.
"""

from __future__ import annotations

from typing import Any

import torch

from ...common.tensor import ParameterTuple
from ...ops.composite import GradOperation
from ...ops.composite.grad import forget_forward, track_forward
from ...ops.functional import identity
from ..cell import Cell, parameter_name
from .grad_reducer import DistributedGradReducer


class WithLossCell(Cell):
    """The network followed by the loss: ``loss_fn(backbone(data), label)``.

    Args:
        backbone: the network (any ``torch.nn.Module``).
        loss_fn: the loss (a module or a callable ``(outputs, label) -> loss``).

    Example:
        >>> net_with_loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(True, "mean"))
        >>> loss = net_with_loss(images, labels)
    """

    def __init__(self, backbone: torch.nn.Module, loss_fn: Any) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data: Any, label: Any) -> torch.Tensor:
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self) -> torch.nn.Module:
        """The network without the loss."""
        return self._backbone


class WithEvalCell(Cell):
    """The network and the loss for evaluation: returns ``(loss, outputs, label)``.

    Args:
        network: the network.
        loss_fn: the loss.
        add_cast_fp32: cast the outputs and a floating label to float32 before the loss (for a
            float16 network). Default False.
    """

    def __init__(self, network: torch.nn.Module, loss_fn: Any, add_cast_fp32: bool = False) -> None:
        super().__init__(auto_prefix=False)
        if not isinstance(add_cast_fp32, bool):
            raise TypeError(
                f"WithEvalCell: add_cast_fp32 must be a bool. Received {add_cast_fp32!r}"
            )
        self._network = network
        self._loss_fn = loss_fn
        self.add_cast_fp32 = add_cast_fp32

    def construct(self, data: Any, label: Any) -> tuple[torch.Tensor, Any, Any]:
        outputs = self._network(data)
        if self.add_cast_fp32:
            if isinstance(label, torch.Tensor) and label.is_floating_point():
                label = label.to(torch.float32)
            outputs = outputs.to(torch.float32)
        return self._loss_fn(outputs, label), outputs, label


def optimizer_params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """The parameters ``optimizer`` updates, in its groups' order."""
    return [p for group in optimizer.param_groups for p in group["params"]]


class TrainOneStepCell(Cell):
    """One training step per call: the loss of ``network(*inputs)``, its gradients with respect
    to the optimizer's parameters, and the optimizer's update.

    Returns the loss computed before the update (detached), as MindSpore does. With ``sens``,
    the backward pass starts from ``sens`` instead of 1, so every gradient is scaled by it.
    The optimizer's parameters' ``.grad`` are cleared before each backward pass. A parameter
    the loss does not reach keeps ``.grad`` None and torch's optimizers leave it as it is
    (MindSpore hands the optimizer a zero gradient for it).

    Args:
        network: the network with its loss (e.g. a :class:`WithLossCell`), returning a tensor.
        optimizer: a ``jisu.nn`` or any ``torch.optim`` optimizer over the network's parameters.
        sens: the backward pass's starting value, a number other than 0; None (MindSpore 2.10's
            default) is 1.0.
        return_grad: also return ``{parameter name: gradient}``. Default False.

    Example:
        >>> step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(params, 0.1, 0.9))
        >>> for x, y in batches:
        ...     loss = step(x, y)
    """

    def __init__(
        self,
        network: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        sens: float | None = None,
        return_grad: bool = False,
    ) -> None:
        super().__init__(auto_prefix=False)
        if sens is not None and (isinstance(sens, bool) or not isinstance(sens, (int, float))):
            raise TypeError(f"{type(self).__name__}: sens must be a number. Received {sens!r}")
        if sens == 0:
            raise ValueError(f"{type(self).__name__}: sens cannot be 0. Received sens=0")
        if not isinstance(return_grad, bool):
            raise TypeError(
                f"{type(self).__name__}: return_grad must be a bool. Received {return_grad!r}"
            )
        self.network = network
        self.optimizer = optimizer
        self.sens = 1.0 if sens is None else float(sens)
        self.return_grad = return_grad
        # MindSpore's optimizer.parameters, a ParameterTuple (official/cv/YOLOX's EMA cell
        # clones it: self.weights.clone("ema", init="same"))
        self.weights = ParameterTuple(optimizer_params(optimizer))
        if hasattr(network, "set_grad"):
            network.set_grad()
        self.grad = GradOperation(get_by_list=True, sens_param=True)
        track_forward(network)  # a subclass's self.grad(network, weights) reuses its forward
        self._init_reducer()

    def _init_reducer(self) -> None:
        """MindSpore's gradient reducer: ``F.identity``, or in data-parallel mode a
        :class:`DistributedGradReducer` (the context's mean, the job's device number)."""
        from ...context import ParallelMode
        from ...parallel._utils import _get_device_num, _get_gradients_mean, _get_parallel_mode

        self.parallel_mode = _get_parallel_mode()
        self.reducer_flag = self.parallel_mode in (
            ParallelMode.DATA_PARALLEL,
            ParallelMode.HYBRID_PARALLEL,
        )
        self.grad_reducer: Any = identity
        if self.reducer_flag:
            self.mean = _get_gradients_mean()
            self.degree = _get_device_num()
            self.grad_reducer = DistributedGradReducer(self.weights, self.mean, self.degree)

    def _reduce_grads(self) -> None:
        """In data-parallel mode under ``torchrun``, all-reduce the ``.grad`` of the weights
        through ``grad_reducer`` (DistributedDataParallel does it already for its module)."""
        if not self.reducer_flag or isinstance(
            self.network, torch.nn.parallel.DistributedDataParallel
        ):
            return
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            return
        reduced = self.grad_reducer(tuple(p.grad for p in self.weights))
        for p, g in zip(self.weights, reduced):
            if g is not None:
                p.grad = g

    def _names(self) -> list[str]:
        by_id = {id(p): n for n, p in self.network.named_parameters()}
        return [
            parameter_name(p) or by_id.get(id(p), f"param{i}") for i, p in enumerate(self.weights)
        ]

    def _backward(self, loss: torch.Tensor, scale: Any) -> None:
        """``.grad`` of the optimizer's parameters: d(loss * scale)/d param, fresh."""
        self.optimizer.zero_grad(set_to_none=True)
        if not isinstance(loss, torch.Tensor) or not loss.requires_grad:
            raise TypeError(
                f"{type(self).__name__}: the network must return a tensor that requires grad "
                f"(the loss). Received {type(loss).__name__}"
            )
        loss.backward(torch.ones_like(loss) * scale)
        forget_forward(self.network)  # its graph is consumed: GradOperation must not reuse it

    def _result(self, loss: torch.Tensor) -> Any:
        if not self.return_grad:
            return loss
        grads = {n: p.grad for n, p in zip(self._names(), self.weights)}
        return loss, grads

    def construct(self, *inputs: Any) -> Any:
        loss = self.network(*inputs)
        self._backward(loss, self.sens)
        self._reduce_grads()
        type(self.optimizer).step(self.optimizer)  # a subclass's own self.step: a Parameter
        return self._result(loss.detach())


class _VirtualDatasetCell(Cell):
    """MindSpore's ``_VirtualDatasetCell`` (the input split of its auto parallel): in jisu's
    data parallelism every process reads its own shard, so it calls the backbone as it is."""

    def __init__(self, backbone: torch.nn.Module) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = backbone

    def construct(self, *inputs: Any) -> Any:
        return self._backbone(*inputs)

"""Train steps with mixed precision and device-side loss scaling.

:class:`TrainStep` is one call per step: forward, backward of the scaled loss, unscale and
inf/NaN check, optional gradient clipping, and the optimizer step, applied or skipped on the
device. :func:`build_train_network` builds one from a network, a loss and an optimizer with
MindSpore's per-level defaults; :func:`make_train_step` wraps a user's ``forward_fn`` (the
article's ``forward_fn`` + ``value_and_grad`` pattern).

Skipping an overflowing step without a host sync: optimizers that take the found-inf flag
themselves (PyTorch's fused SGD/Adam/AdamW: ``fused=True``; jisu.nn's, which declare
``handles_found_inf``) skip inside their step; for any
other optimizer the parameters and optimizer state are saved before the step and restored with
``torch.where(found_inf, saved, new)`` after it (state created by a skipped first step is
zeroed, which is what SGD/Adam start from; a host-side step counter beside device parameters,
such as non-capturable Adam's on CUDA, keeps the skipped step's increment). Either way nothing
is read back to the host.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .casting import LOW_DTYPES
from .levels import (
    MixedPrecisionNetwork,
    O0Precision,
    Precision,
    _new_precision,
    _refuse_converted,
    precision_type,
)
from .loss_scale import FixedLossScaleManager, LossScaleManager


def all_finite(tensors: list[torch.Tensor]) -> torch.Tensor:
    """A 0-d bool tensor on the device: True when no element of ``tensors`` is inf/NaN."""
    flags = [torch.isfinite(t).all() for t in tensors]
    return torch.stack(flags).all() if flags else torch.tensor(True)


def _trainable(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


@torch.no_grad()
def _step_unless(optimizer: torch.optim.Optimizer, found_inf: torch.Tensor) -> None:
    """``optimizer.step()`` that has no effect when ``found_inf`` is set, decided on device."""
    takes_flag = _is_fused(optimizer) or getattr(optimizer, "handles_found_inf", False)
    if getattr(optimizer, "_step_supports_amp_scaling", False) and takes_flag:
        optimizer.grad_scale, optimizer.found_inf = None, found_inf  # gradients are unscaled
        try:
            type(optimizer).step(optimizer)  # a MindSpore subclass's self.step may be data
        finally:
            del optimizer.grad_scale, optimizer.found_inf
        return
    params = _trainable(optimizer)
    saved = [p.detach().clone() for p in params]
    saved_state = [
        {k: v.clone() for k, v in optimizer.state.get(p, {}).items() if torch.is_tensor(v)}
        for p in params
    ]
    type(optimizer).step(optimizer)
    skip = found_inf.reshape(()) > 0
    for p, old in zip(params, saved):
        p.copy_(torch.where(skip, old, p))
    for p, old_state in zip(params, saved_state):
        for key, value in optimizer.state.get(p, {}).items():
            # a host-side counter beside device parameters (Adam's non-capturable "step")
            # cannot be masked without a sync: it keeps the skipped step's increment
            if torch.is_tensor(value) and value.device == skip.device:
                before = old_state.get(key)
                before = torch.zeros_like(value) if before is None else before
                value.copy_(torch.where(skip, before, value))


def _is_fused(optimizer: torch.optim.Optimizer) -> bool:
    return all(group.get("fused") for group in optimizer.param_groups)


class TrainStep:
    """One training step per call; returns ``forward_fn``'s outputs (detached, on device).

    Args:
        forward_fn: ``forward_fn(*inputs)`` returning the loss, or ``(loss, *aux)``.
        optimizer: a torch optimizer over the parameters to train.
        loss_scale_manager: a :class:`LossScaleManager`, or None (fp32, bf16).
        max_grad_norm: clip the (unscaled) gradients to this total 2-norm; None: no clipping.
        precision: the :class:`~jisu.amp.levels.Precision` the network in ``forward_fn`` runs
            at (:func:`build_train_network` passes it), kept as ``step.precision`` for those
            who ask which level trains; None: not known. The step's arithmetic does not
            depend on it: the network carries its level, ``loss_scale_manager`` the scaling
            (``precision.default_loss_scale_manager()`` is the level's default).
    """

    def __init__(
        self,
        forward_fn: Callable[..., Any],
        optimizer: torch.optim.Optimizer,
        loss_scale_manager: LossScaleManager | None = None,
        max_grad_norm: float | None = None,
        precision: Precision | None = None,
    ) -> None:
        if not callable(forward_fn):
            raise TypeError(f"TrainStep: forward_fn must be callable. Received {forward_fn!r}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"TrainStep: optimizer must be a torch.optim.Optimizer. Received {optimizer!r}"
            )
        if loss_scale_manager is not None and not isinstance(loss_scale_manager, LossScaleManager):
            raise TypeError(
                "TrainStep: loss_scale_manager must be a FixedLossScaleManager or "
                f"DynamicLossScaleManager. Received {loss_scale_manager!r}"
            )
        if precision is not None and not isinstance(precision, Precision):
            raise TypeError(
                "TrainStep: precision must be a jisu.amp.Precision (see jisu.amp.precision_for)."
                f" Received {precision!r}"
            )
        self.forward_fn = forward_fn
        self.optimizer = optimizer
        self.loss_scale_manager = loss_scale_manager
        self.max_grad_norm = max_grad_norm
        self.precision = precision

    def __call__(self, *inputs: Any) -> Any:
        outputs = self.device_step(*inputs)
        self.after_device_step()
        return outputs

    def device_step(self, *inputs: Any) -> Any:
        """The step's device work, everything but :meth:`after_device_step`: what a CUDA graph
        captures once and replays per batch (:mod:`jisu.train.capture`), so its Python runs
        once, at the capture."""
        self.optimizer.zero_grad(set_to_none=True)
        outputs = self.forward_fn(*inputs)
        loss = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        if not (torch.is_tensor(loss) and loss.is_floating_point()):
            raise ValueError(
                "TrainStep: forward_fn must return a float loss tensor (or (loss, ...)). "
                f"Received {type(loss).__name__} {getattr(loss, 'shape', '')}"
            )
        manager = self.loss_scale_manager
        # a loss of several values (reduction="none") backpropagates from ones, as MindSpore's
        # TrainOneStepCell fills its sens to the loss's shape: the gradient of their sum
        total = loss if loss.numel() == 1 else loss.sum()
        (manager.scale(total) if manager is not None else total).backward()
        params = _trainable(self.optimizer)
        found_inf = manager.unscale_([p.grad for p in params]) if manager is not None else None
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True)
        if self._optimizer_unscales():  # MindSpore: the optimizer's loss_scale unscales them
            grads = [p.grad for p in params if p.grad is not None]
            torch._foreach_mul_(grads, manager.scale_tensor(grads[0].device))
        if found_inf is None or not manager.drop_overflow_update:
            type(self.optimizer).step(self.optimizer)
        else:
            _step_unless(self.optimizer, found_inf)
        if manager is not None:
            manager.update_on_device_(found_inf)
        if isinstance(outputs, (tuple, list)):
            return type(outputs)(o.detach() if torch.is_tensor(o) else o for o in outputs)
        return outputs.detach()

    def _optimizer_unscales(self) -> bool:
        """Whether the optimizer divides the gradients by its own ``loss_scale`` (a jisu.nn
        optimizer with ``loss_scale != 1`` beside a ``FixedLossScaleManager`` with
        ``drop_overflow_update=False``: MindSpore's pairing, where the step leaves the
        gradients scaled). The step then hands them on scaled, as MindSpore's
        ``TrainOneStepCell(sens=loss_scale)`` does, after its overflow check and clipping on
        the unscaled values."""
        manager = self.loss_scale_manager
        return (
            isinstance(manager, FixedLossScaleManager)
            and not manager.drop_overflow_update
            and getattr(self.optimizer, "loss_scale", 1.0) != 1.0
        )

    def after_device_step(self) -> None:
        """The step's host bookkeeping, after its device work: the loss-scale manager counts
        the step (and checks the overflow streak every ``check_interval`` steps)."""
        if self.loss_scale_manager is not None:
            self.loss_scale_manager.count_step()

    def with_forward(self, forward_fn: Callable[..., Any]) -> TrainStep:
        """This step with ``forward_fn`` as its forward (a compiled one, one over a
        DistributedDataParallel network): a new step sharing the optimizer, the loss scale
        manager and the other attributes (``network``). ``self`` is left as it is, so both
        steps can run: the eager one stays the fallback of a compiled one."""
        step = copy.copy(self)
        step.forward_fn = forward_fn
        return step

    def state_dict(self) -> dict[str, Any]:
        """Optimizer and loss-scale state."""
        state = {"optimizer": self.optimizer.state_dict()}
        if self.loss_scale_manager is not None:
            state["loss_scale_manager"] = self.loss_scale_manager.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if self.loss_scale_manager is not None and "loss_scale_manager" in state:
            self.loss_scale_manager.load_state_dict(state["loss_scale_manager"])


def make_train_step(
    forward_fn: Callable[..., Any],
    optimizer: torch.optim.Optimizer,
    loss_scale_manager: LossScaleManager | None = None,
    max_grad_norm: float | None = None,
) -> TrainStep:
    """The functional helper for custom loops: ``step = make_train_step(forward_fn, opt,
    manager)``, then ``loss, logits = step(data, label)`` does forward, scaled backward,
    unscale, clipping and the applied-or-skipped update in one call (see :class:`TrainStep`)."""
    return TrainStep(forward_fn, optimizer, loss_scale_manager, max_grad_norm)


def loss_forward(
    net: Callable[..., Any], loss_fn: Callable[..., torch.Tensor] | None
) -> Callable[..., Any]:
    """``forward_fn(*data, label) = loss_fn(net(*data), label)``; ``net`` itself without a
    loss function (the network then returns its loss)."""
    if loss_fn is None:
        return net

    def forward_fn(*inputs: Any) -> torch.Tensor:
        *data, label = inputs
        return loss_fn(net(*data), label)

    return forward_fn


def build_train_network(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[..., torch.Tensor] | None = None,
    level: str = "O0",
    loss_scale_manager: LossScaleManager | None = None,
    keep_batchnorm_fp32: bool | None = None,
    cast_model_type: torch.dtype | None = None,
    max_grad_norm: float | None = None,
) -> TrainStep:
    """A :class:`TrainStep` for ``network`` at ``level`` with MindSpore's per-level defaults.

    ``step(*data, label)`` computes ``loss_fn(network(*data), label)`` (or, without
    ``loss_fn``, ``network(*inputs)`` is the loss). Defaults: ``cast_model_type`` fp32 at
    O0/O1 and the low dtype at O2/O3 (fp16 on CUDA, bf16 on CPU); ``keep_batchnorm_fp32``
    True at O2, False at O3; ``loss_scale_manager`` a DynamicLossScaleManager at O2 when the
    dtype is fp16 (bf16 has fp32's range and needs none), otherwise none. The converted
    network is ``step.network``, its precision ``step.precision``. A network that
    :func:`auto_mixed_precision` already converted trains at its own level and dtype when
    ``level`` is "O0" (MindSpore's way to, e.g., O2 in bf16 on a GPU: convert, then
    ``Model(net, ...)``), with that level's default loss scale; at another level it is refused.
    """
    kind = precision_type(level, "build_train_network", "level")
    if cast_model_type not in (None, torch.float32, *LOW_DTYPES):
        raise ValueError(
            "build_train_network: cast_model_type must be torch.float32, torch.float16 or "
            f"torch.bfloat16. Received {cast_model_type}"
        )
    if cast_model_type == torch.float32 and kind.casts_network:
        kind = O0Precision  # MindSpore: an fp32 model type means no cast
    dtype = cast_model_type if cast_model_type in LOW_DTYPES else None
    if isinstance(network, MixedPrecisionNetwork) and kind is O0Precision and dtype is None:
        # MindSpore's way to a level at a dtype of one's choosing: auto_mixed_precision(net,
        # "O2", dtype), then the converted network at O0: it trains at its own level
        precision, net = network.precision, network
    else:
        # as auto_mixed_precision(network, level, dtype, keep_batchnorm_fp32) does, messages
        # and the float16-on-CPU warning's location (this line) included
        _refuse_converted("auto_mixed_precision", network)
        precision = _new_precision(
            kind, network, dtype, keep_batchnorm_fp32, "auto_mixed_precision", stacklevel=3
        )
        net = precision.convert_module(network)
    if loss_scale_manager is None:
        loss_scale_manager = precision.default_loss_scale_manager()

    step = TrainStep(
        loss_forward(net, loss_fn), optimizer, loss_scale_manager, max_grad_norm, precision
    )
    step.network = net
    return step

"""MindSpore's optimizer primitives ``ApplyMomentum``, ``Adam`` and ``AdamWeightDecay`` on
torch: they update their Parameter inputs in place (under ``torch.no_grad``), as MindSpore's
do, and return the updated tensors."""

from __future__ import annotations

from typing import Any

import torch

from ..primitive import Primitive


def _flag(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool. Received {name}={value!r}")
    return value


class ApplyMomentum(Primitive):
    """``accumulation = accumulation * momentum + gradient``; ``variable -= learning_rate *
    accumulation`` (Nesterov: ``learning_rate * (gradient + momentum * accumulation)``), in
    place: ``ApplyMomentum()(variable, accumulation, learning_rate, gradient, momentum)``
    returns ``variable``."""

    def __init__(
        self, use_nesterov: bool = False, use_locking: bool = False, gradient_scale: float = 1.0
    ) -> None:
        self.use_nesterov = _flag("ApplyMomentum", "use_nesterov", use_nesterov)
        self.use_locking = _flag("ApplyMomentum", "use_locking", use_locking)
        if not isinstance(gradient_scale, float):
            raise TypeError(
                f"ApplyMomentum: gradient_scale must be a float. Received {gradient_scale!r}"
            )
        self.gradient_scale = gradient_scale

    @torch.no_grad()
    def __call__(self, variable, accumulation, learning_rate, gradient, momentum) -> torch.Tensor:
        accumulation.mul_(momentum).add_(gradient)
        step = gradient + accumulation * momentum if self.use_nesterov else accumulation
        variable.sub_(step * learning_rate)
        return variable


class Adam(Primitive):
    """One Adam step in place: ``Adam(use_locking=False, use_nesterov=False)(var, m, v,
    beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient)`` returns ``(var, m,
    v)``."""

    def __init__(self, use_locking: bool = False, use_nesterov: bool = False) -> None:
        self.use_locking = _flag("Adam", "use_locking", use_locking)
        self.use_nesterov = _flag("Adam", "use_nesterov", use_nesterov)

    @torch.no_grad()
    def __call__(
        self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        m.mul_(beta1).add_(gradient * (1 - beta1))
        v.mul_(beta2).add_(gradient * gradient * (1 - beta2))
        scale = lr * (1 - beta2_power) ** 0.5 / (1 - beta1_power)
        top = m * beta1 + gradient * (1 - beta1) if self.use_nesterov else m
        var.sub_(scale * top / (v.sqrt() + epsilon))
        return var, m, v


class AdamWeightDecay(Primitive):
    """One AdamW step in place: ``AdamWeightDecay()(var, m, v, lr, beta1, beta2, epsilon,
    decay, gradient)``; ``var -= lr * (m / (sqrt(v) + epsilon) + decay * var)`` (no bias
    correction, as MindSpore's); returns ``(var, m, v)``."""

    def __init__(self, use_locking: bool = False) -> None:
        self.use_locking = _flag("AdamWeightDecay", "use_locking", use_locking)

    @torch.no_grad()
    def __call__(
        self, var, m, v, lr, beta1, beta2, epsilon, decay, gradient
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        m.mul_(beta1).add_(gradient * (1 - beta1))
        v.mul_(beta2).add_(gradient * gradient * (1 - beta2))
        update = m / (v.sqrt() + epsilon) + decay * var
        var.sub_(lr * update)
        return var, m, v


__all__ = ["Adam", "AdamWeightDecay", "ApplyMomentum"]

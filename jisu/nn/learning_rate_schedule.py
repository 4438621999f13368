"""MindSpore's learning-rate schedules: modules that compute the rate of a step on the device.

``schedule(global_step)`` takes the step (an integer tensor, 0-based: the optimizer's
``global_step``) and returns the rate as a 0-d float32 tensor on the same device, so an
optimizer given a schedule (``nn.Momentum(params, learning_rate=CosineDecayLR(...))``) computes
its rate per step without a host synchronisation, in sink mode and under CUDA-graph capture
alike. The formulas and float32 arithmetic are MindSpore's
(``mindspore.nn.learning_rate_schedule``), checked against MindSpore 2.10's values. Write
your own by subclassing :class:`LearningRateSchedule` and defining ``construct(global_step)``
with tensor operations.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import a_bool, a_float, positive_int


class LearningRateSchedule(nn.Module):
    """Base class: ``construct(global_step) -> lr`` (a 0-d float32 tensor), called as
    ``schedule(global_step)``."""

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, global_step: torch.Tensor) -> torch.Tensor:
        return self.construct(global_step)


def _step(global_step: torch.Tensor | int) -> torch.Tensor:
    """The step as a float32 tensor (MindSpore casts it so)."""
    return torch.as_tensor(global_step).to(torch.float32)


class _Decay(LearningRateSchedule):
    """The three decays that share MindSpore's arguments and checks."""

    def __init__(
        self, learning_rate: float, decay_rate: float, decay_steps: int, is_stair: bool = False
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        positive_int(owner, "decay_steps", decay_steps)
        a_float(owner, "learning_rate", learning_rate, 0.0)
        a_float(owner, "decay_rate", decay_rate, 0.0)
        a_bool(owner, "is_stair", is_stair)
        self.learning_rate, self.decay_rate = learning_rate, decay_rate
        self.decay_steps, self.is_stair = decay_steps, is_stair

    def extra_repr(self) -> str:
        return (
            f"learning_rate={self.learning_rate}, decay_rate={self.decay_rate}, "
            f"decay_steps={self.decay_steps}, is_stair={self.is_stair}"
        )


class ExponentialDecayLR(_Decay):
    """``learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored with
    ``is_stair``)."""

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        p = _step(global_step) / self.decay_steps
        if self.is_stair:
            p = torch.floor(p)
        return self.learning_rate * torch.pow(self.decay_rate, p)


class NaturalExpDecayLR(_Decay):
    """``learning_rate * e ** (-decay_rate * step)`` (the step rounded down to a multiple of
    ``decay_steps`` with ``is_stair``)."""

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        p = _step(global_step)
        if self.is_stair:
            p = torch.floor_divide(p, self.decay_steps) * self.decay_steps
        return self.learning_rate * torch.pow(math.e, -self.decay_rate * p)


class InverseDecayLR(_Decay):
    """``learning_rate / (1 + decay_rate * step / decay_steps)`` (the quotient floored with
    ``is_stair``)."""

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        p = _step(global_step) / self.decay_steps
        if self.is_stair:
            p = torch.floor(p)
        return self.learning_rate / (1 + self.decay_rate * p)


class CosineDecayLR(LearningRateSchedule):
    """From ``max_lr`` down to ``min_lr`` along half a cosine over ``decay_steps`` steps,
    then ``min_lr``."""

    def __init__(self, min_lr: float, max_lr: float, decay_steps: int) -> None:
        super().__init__()
        owner = "CosineDecayLR"
        a_float(owner, "min_lr", min_lr, 0.0, strict=False)
        a_float(owner, "max_lr", max_lr, 0.0)
        positive_int(owner, "decay_steps", decay_steps)
        if min_lr >= max_lr:
            raise ValueError(f"{owner}: max_lr ({max_lr}) must be greater than min_lr ({min_lr})")
        self.min_lr, self.max_lr, self.decay_steps = min_lr, max_lr, decay_steps
        self.delta = 0.5 * (max_lr - min_lr)

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        p = torch.clamp(_step(global_step), max=float(self.decay_steps))
        # MindSpore's form: sin(pi * (p + 0.5)) is cos(pi * p)
        return self.min_lr + self.delta * (1.0 + torch.sin(math.pi * (p / self.decay_steps + 0.5)))


class PolynomialDecayLR(LearningRateSchedule):
    """``(learning_rate - end) * (1 - step / decay_steps) ** power + end``; the step stops at
    ``decay_steps``, or with ``update_decay_steps`` the period grows to the next multiple of
    ``decay_steps`` past the step."""

    def __init__(
        self,
        learning_rate: float,
        end_learning_rate: float,
        decay_steps: int,
        power: float,
        update_decay_steps: bool = False,
    ) -> None:
        super().__init__()
        owner = "PolynomialDecayLR"
        a_float(owner, "learning_rate", learning_rate, 0.0)
        a_float(owner, "end_learning_rate", end_learning_rate, 0.0, strict=False)
        positive_int(owner, "decay_steps", decay_steps)
        a_bool(owner, "update_decay_steps", update_decay_steps)
        a_float(owner, "power", power, 0.0)
        self.learning_rate, self.end_learning_rate = learning_rate, end_learning_rate
        self.decay_steps, self.power, self.update_decay_steps = (
            decay_steps,
            power,
            update_decay_steps,
        )

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        step = _step(global_step)
        period: torch.Tensor | int = self.decay_steps
        if self.update_decay_steps:
            period = self.decay_steps * torch.clamp(torch.ceil(step / self.decay_steps), min=1.0)
        else:
            step = torch.clamp(step, max=float(self.decay_steps))
        p = step / period
        diff = self.learning_rate - self.end_learning_rate
        return diff * torch.pow(1.0 - p, self.power) + self.end_learning_rate


class WarmUpLR(LearningRateSchedule):
    """``learning_rate * min(step, warmup_steps) / warmup_steps``: linear from 0."""

    def __init__(self, learning_rate: float, warmup_steps: int) -> None:
        super().__init__()
        a_float("WarmUpLR", "learning_rate", learning_rate, 0.0, strict=False)
        positive_int("WarmUpLR", "warmup_steps", warmup_steps)
        self.learning_rate, self.warmup_steps = learning_rate, warmup_steps

    def construct(self, global_step: torch.Tensor) -> torch.Tensor:
        p = torch.clamp(_step(global_step), max=float(self.warmup_steps)) / self.warmup_steps
        return self.learning_rate * p


__all__ = [
    "CosineDecayLR",
    "ExponentialDecayLR",
    "InverseDecayLR",
    "LearningRateSchedule",
    "NaturalExpDecayLR",
    "PolynomialDecayLR",
    "WarmUpLR",
]

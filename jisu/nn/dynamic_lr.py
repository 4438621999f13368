"""MindSpore's dynamic learning rates as lists: one rate per training step.

Give the list to an optimizer (``nn.Momentum(params, learning_rate=cosine_decay_lr(...))``):
step ``i`` (0-based) of training uses ``rates[i]``, in sink mode too. The formulas are
MindSpore's (``mindspore.nn.dynamic_lr``), checked against MindSpore 2.10's values; the epoch of
step ``i`` is ``i // step_per_epoch``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._checks import a_bool, a_float, positive_int


def _decay_args(
    owner: str, learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch, is_stair
) -> None:
    positive_int(owner, "total_step", total_step)
    positive_int(owner, "step_per_epoch", step_per_epoch)
    positive_int(owner, "decay_epoch", decay_epoch)
    a_float(owner, "learning_rate", learning_rate, 0.0)
    a_float(owner, "decay_rate", decay_rate, 0.0)
    a_bool(owner, "is_stair", is_stair)


def piecewise_constant_lr(milestone: Sequence[int], learning_rates: Sequence[float]) -> list[float]:
    """``learning_rates[i]`` for the steps before ``milestone[i]`` (and from the previous
    milestone): ``piecewise_constant_lr([2, 5], [0.1, 0.05])`` is ``[0.1, 0.1, 0.05, 0.05,
    0.05]``. Milestones are positive, non-decreasing step counts."""
    owner = "piecewise_constant_lr"
    if not isinstance(milestone, (list, tuple)) or not isinstance(learning_rates, (list, tuple)):
        raise TypeError(f"{owner}: milestone and learning_rates must be lists or tuples")
    if len(milestone) != len(learning_rates):
        raise ValueError(
            f"{owner}: milestone and learning_rates must have the same length. Received "
            f"{len(milestone)} and {len(learning_rates)}"
        )
    rates: list[float] = []
    last = 0
    for i, (end, rate) in enumerate(zip(milestone, learning_rates)):
        positive_int(owner, f"milestone[{i}]", end)
        a_float(owner, f"learning_rates[{i}]", rate)
        if end < last:
            raise ValueError(
                f"{owner}: milestone[{i}] ({end}) must not be less than milestone[{i - 1}] ({last})"
            )
        rates += [rate] * (end - last)
        last = end
    return rates


def exponential_decay_lr(
    learning_rate: float,
    decay_rate: float,
    total_step: int,
    step_per_epoch: int,
    decay_epoch: int,
    is_stair: bool = False,
) -> list[float]:
    """``learning_rate * decay_rate ** (epoch / decay_epoch)`` (floored with ``is_stair``)."""
    _decay_args(
        "exponential_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    rates = []
    for i in range(total_step):
        p = (i // step_per_epoch) / decay_epoch
        rates.append(learning_rate * decay_rate ** (math.floor(p) if is_stair else p))
    return rates


def natural_exp_decay_lr(
    learning_rate: float,
    decay_rate: float,
    total_step: int,
    step_per_epoch: int,
    decay_epoch: int,
    is_stair: bool = False,
) -> list[float]:
    """``learning_rate * e ** (-decay_rate * epoch)``; with ``is_stair`` the epoch is rounded
    down to a multiple of ``decay_epoch``."""
    _decay_args(
        "natural_exp_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    rates = []
    for i in range(total_step):
        epoch = i // step_per_epoch
        if is_stair:
            epoch = epoch // decay_epoch * decay_epoch
        rates.append(learning_rate * math.e ** (-decay_rate * epoch))
    return rates


def inverse_decay_lr(
    learning_rate: float,
    decay_rate: float,
    total_step: int,
    step_per_epoch: int,
    decay_epoch: int,
    is_stair: bool = False,
) -> list[float]:
    """``learning_rate / (1 + decay_rate * epoch / decay_epoch)`` (floored with ``is_stair``)."""
    _decay_args(
        "inverse_decay_lr",
        learning_rate,
        decay_rate,
        total_step,
        step_per_epoch,
        decay_epoch,
        is_stair,
    )
    rates = []
    for i in range(total_step):
        epoch = i // step_per_epoch
        if is_stair:
            rates.append(learning_rate / (1 + decay_rate * (epoch // decay_epoch)))
        else:  # MindSpore's order of operations: the same float rounding
            rates.append(learning_rate / (1 + decay_rate * epoch / decay_epoch))
    return rates


def cosine_decay_lr(
    min_lr: float, max_lr: float, total_step: int, step_per_epoch: int, decay_epoch: int
) -> list[float]:
    """From ``max_lr`` down to ``min_lr`` along half a cosine over ``decay_epoch`` epochs,
    then ``min_lr``."""
    owner = "cosine_decay_lr"
    a_float(owner, "min_lr", min_lr, 0.0, strict=False)
    a_float(owner, "max_lr", max_lr, 0.0)
    positive_int(owner, "total_step", total_step)
    positive_int(owner, "step_per_epoch", step_per_epoch)
    positive_int(owner, "decay_epoch", decay_epoch)
    if min_lr >= max_lr:
        raise ValueError(f"{owner}: max_lr ({max_lr}) must be greater than min_lr ({min_lr})")
    half = 0.5 * (max_lr - min_lr)
    rates = []
    for i in range(total_step):
        epoch = min(i // step_per_epoch, decay_epoch)
        rates.append(min_lr + half * (1 + math.cos(math.pi * epoch / decay_epoch)))
    return rates


def polynomial_decay_lr(
    learning_rate: float,
    end_learning_rate: float,
    total_step: int,
    step_per_epoch: int,
    decay_epoch: int,
    power: float,
    update_decay_epoch: bool = False,
) -> list[float]:
    """``(learning_rate - end) * (1 - epoch / decay_epoch) ** power + end``; the epoch stops
    at ``decay_epoch``, or with ``update_decay_epoch`` the decay period grows to the next
    multiple of ``decay_epoch`` past the epoch."""
    owner = "polynomial_decay_lr"
    a_float(owner, "learning_rate", learning_rate, 0.0)
    a_float(owner, "end_learning_rate", end_learning_rate, 0.0, strict=False)
    a_float(owner, "power", power, 0.0)
    positive_int(owner, "total_step", total_step)
    positive_int(owner, "step_per_epoch", step_per_epoch)
    positive_int(owner, "decay_epoch", decay_epoch)
    a_bool(owner, "update_decay_epoch", update_decay_epoch)
    delta = learning_rate - end_learning_rate
    rates = []
    for i in range(total_step):
        epoch = i // step_per_epoch
        if update_decay_epoch:
            period = decay_epoch * max(math.ceil(epoch / decay_epoch), 1)
        else:
            period, epoch = decay_epoch, min(epoch, decay_epoch)
        rates.append(delta * (1 - epoch / period) ** power + end_learning_rate)
    return rates


def warmup_lr(
    learning_rate: float, total_step: int, step_per_epoch: int, warmup_epoch: int
) -> list[float]:
    """``learning_rate * min(epoch, warmup_epoch) / warmup_epoch``: a linear warm-up from 0,
    by epochs (the first epoch's rate is 0, as MindSpore's)."""
    owner = "warmup_lr"
    a_float(owner, "learning_rate", learning_rate, 0.0, strict=False)
    positive_int(owner, "warmup_epoch", warmup_epoch)
    positive_int(owner, "total_step", total_step)
    positive_int(owner, "step_per_epoch", step_per_epoch)
    return [
        learning_rate * min(i // step_per_epoch, warmup_epoch) / warmup_epoch
        for i in range(total_step)
    ]


__all__ = [
    "cosine_decay_lr",
    "exponential_decay_lr",
    "inverse_decay_lr",
    "natural_exp_decay_lr",
    "piecewise_constant_lr",
    "polynomial_decay_lr",
    "warmup_lr",
]

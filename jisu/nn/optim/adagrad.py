"""MindSpore's ``nn.Adagrad`` (its ``ApplyAdagrad`` kernel), checked against MindSpore 2.10."""

from __future__ import annotations

from typing import Any

import torch

from .optimizer import Optimizer, descend, masked_copy_, opt_init_args_register


class Adagrad(Optimizer):
    """Adagrad with MindSpore's formula (no epsilon)::

        accum += grad^2                  # update_slots=True
        param -= lr * grad / sqrt(accum)

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        accum: the accumulators' initial value, a float >= 0. Default 0.1.
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``. Default 0.001.
        update_slots: whether the accumulators grow. Default True.
        loss_scale, weight_decay: as MindSpore's (see the base class).
    """

    @opt_init_args_register
    def __init__(
        self,
        params: Any,
        accum: float = 0.1,
        learning_rate: Any = 0.001,
        update_slots: bool = True,
        loss_scale: float = 1.0,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        if not isinstance(accum, float):
            raise TypeError(f"Adagrad: accum must be a float. Received accum={accum!r}")
        if accum < 0:
            raise ValueError(f"Adagrad: accum must be >= 0. Received accum={accum}")
        if not isinstance(update_slots, bool):
            raise TypeError(f"Adagrad: update_slots must be a bool. Received {update_slots!r}")
        self.accum, self.update_slots = accum, update_slots

    def _update(self, group, params, grads, lr, keep) -> None:
        accums = []
        for p in params:
            state = self.state[p]
            if "accum" not in state:
                state["accum"] = torch.full_like(p, self.accum)
            accums.append(state["accum"])
        if self.update_slots:
            new = torch._foreach_addcmul(accums, grads, grads)
            masked_copy_(accums, new, keep)
            accums = new
        descend(params, torch._foreach_div(grads, torch._foreach_sqrt(accums)), lr, keep)

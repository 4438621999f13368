"""MindSpore's ``nn.FTRL`` (its ``ApplyFtrl`` kernel), checked against MindSpore 2.10."""

from __future__ import annotations

from typing import Any

import torch

from .optimizer import Optimizer, masked_copy_, opt_init_args_register


class FTRL(Optimizer):
    """Follow-the-regularized-leader (McMahan et al.) with MindSpore's formula::

        accum_new = accum + grad^2
        linear += grad - (accum_new^(-lr_power) - accum^(-lr_power)) / lr * param
        param = (sign(linear) * l1 - linear) / (accum_new^(-lr_power) / lr + 2 * l2)
                if |linear| > l1 else 0

    ``weight_decay`` is added to the gradients of *every* parameter (MindSpore's FTRL does not
    spare ``beta``/``gamma``). The rate is a fixed number (no per-step rates, no group rates).

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        initial_accum: the accumulators' start, a float >= 0. Default 0.1.
        learning_rate: a float > 0. Default 0.001.
        lr_power: a float <= 0. Default -0.5.
        l1, l2: the regularization strengths, floats >= 0. Default 0.0.
        use_locking: accepted for MindSpore's signature.
        loss_scale, weight_decay: as MindSpore's (see the base class).
    """

    @opt_init_args_register
    def __init__(
        self,
        params: Any,
        initial_accum: float = 0.1,
        learning_rate: float = 0.001,
        lr_power: float = -0.5,
        l1: float = 0.0,
        l2: float = 0.0,
        use_locking: bool = False,
        loss_scale: float = 1.0,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        if self.dynamic_lr or len({g["lr"] for g in self.param_groups}) > 1:
            raise ValueError("FTRL: per-step and per-group learning rates are not supported")
        for name, value in (("initial_accum", initial_accum), ("l1", l1), ("l2", l2)):
            if not isinstance(value, float) or value < 0:
                raise ValueError(f"FTRL: {name} must be a float >= 0. Received {name}={value!r}")
        if not isinstance(learning_rate, float) or learning_rate <= 0:
            raise ValueError(f"FTRL: learning_rate must be a float > 0. Received {learning_rate!r}")
        if not isinstance(lr_power, float) or lr_power > 0:
            raise ValueError(f"FTRL: lr_power must be a float <= 0. Received {lr_power!r}")
        if not isinstance(use_locking, bool):
            raise TypeError(f"FTRL: use_locking must be a bool. Received {use_locking!r}")
        for group in self.param_groups:  # every parameter decays
            group["decay_flags"] = [group["weight_decay"] > 0] * len(group["params"])
        self.initial_accum, self.lr_power, self.l1, self.l2 = initial_accum, lr_power, l1, l2
        self.use_locking = use_locking

    def _update(self, group, params, grads, lr, keep) -> None:
        power = -self.lr_power
        new_params, new_accums, new_linears = [], [], []
        accums, linears = [], []
        for p, g in zip(params, grads):
            state = self.state[p]
            if "moments" not in state:
                state["moments"] = torch.full_like(p, self.initial_accum)
                state["linear"] = torch.zeros_like(p)
            accum, linear = state["moments"], state["linear"]
            accum_new = accum + g * g
            linear_new = linear + g - (accum_new.pow(power) - accum.pow(power)) / lr * p
            quadratic = accum_new.pow(power) / lr + 2 * self.l2
            value = (torch.sign(linear_new) * self.l1 - linear_new) / quadratic
            new_params.append(torch.where(linear_new.abs() > self.l1, value, 0.0))
            accums.append(accum)
            linears.append(linear)
            new_accums.append(accum_new)
            new_linears.append(linear_new)
        masked_copy_(accums, new_accums, keep)
        masked_copy_(linears, new_linears, keep)
        masked_copy_(params, new_params, keep)

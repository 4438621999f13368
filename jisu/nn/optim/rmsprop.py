"""MindSpore's ``nn.RMSProp``: its update rules (MindSpore's ``ApplyRMSProp`` and
``ApplyCenteredRMSProp`` kernels), checked against MindSpore 2.10.

Unlike ``torch.optim.RMSprop``, MindSpore's mean square starts at ones (not zeros), ``epsilon``
is added inside the square root, and the rate multiplies the step before the momentum
accumulates it.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import _checks
from .optimizer import Optimizer, masked_copy_


class RMSProp(Optimizer):
    """RMSProp with MindSpore's formulas::

        ms = decay * ms + (1 - decay) * grad^2                  # ms starts at ones
        mg = decay * mg + (1 - decay) * grad                    # centered only; starts at zeros
        mom = momentum * mom + lr * grad / sqrt(ms + epsilon)             # centered=False
        mom = momentum * mom + lr * grad / sqrt(ms - mg^2 + epsilon)      # centered=True
        param -= mom

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``. Default 0.1.
        decay: the mean square's decay rate, a float >= 0. Default 0.9.
        momentum: a float >= 0. Default 0.0.
        epsilon: a float > 0. Default 1e-10.
        use_locking: accepted for MindSpore's signature (torch's updates need no lock).
        centered: normalise by the gradient's estimated variance. Default False.
        loss_scale, weight_decay: as MindSpore's (see the base class).

    Example:
        >>> opt = nn.RMSProp(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    """

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 0.1,
        decay: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        loss_scale: float = 1.0,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        _checks.a_float("RMSProp", "decay", decay, low=0.0, strict=False)
        _checks.a_float("RMSProp", "momentum", momentum, low=0.0, strict=False)
        _checks.a_float("RMSProp", "epsilon", epsilon, low=0.0)
        _checks.a_bool("RMSProp", "use_locking", use_locking)
        _checks.a_bool("RMSProp", "centered", centered)
        self.decay, self.momentum, self.epsilon = decay, momentum, epsilon
        self.centered = centered

    def _mean_squares(self, params: list[torch.Tensor]) -> list[torch.Tensor]:
        """Each parameter's mean square, ones at first (MindSpore's initial value)."""
        out = []
        for p in params:
            state = self.state[p]
            if "mean_square" not in state:
                state["mean_square"] = torch.ones_like(p, memory_format=torch.preserve_format)
            out.append(state["mean_square"])
        return out

    def _update(self, group, params, grads, lr, keep) -> None:
        mean_square = self._mean_squares(params)
        new_ms = torch._foreach_mul(mean_square, self.decay)
        torch._foreach_addcmul_(new_ms, grads, grads, value=1.0 - self.decay)
        masked_copy_(mean_square, new_ms, keep)
        if self.centered:
            mean_grad = self._state_buffers(params, "mean_grad")
            new_mg = torch._foreach_mul(mean_grad, self.decay)
            torch._foreach_add_(new_mg, grads, alpha=1.0 - self.decay)
            masked_copy_(mean_grad, new_mg, keep)
            denom = torch._foreach_addcmul(new_ms, new_mg, new_mg, value=-1.0)
        else:
            denom = new_ms
        denom = torch._foreach_add(denom, self.epsilon)
        torch._foreach_sqrt_(denom)
        step = torch._foreach_div(grads, denom)
        step = torch._foreach_mul(step, lr)
        moment = self._state_buffers(params, "moment")
        new_mom = torch._foreach_mul(moment, self.momentum)
        torch._foreach_add_(new_mom, step)
        masked_copy_(moment, new_mom, keep)
        masked_copy_(params, torch._foreach_sub(params, new_mom), keep)

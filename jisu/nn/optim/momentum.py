"""MindSpore's ``nn.Momentum`` and ``nn.SGD``: their update rules, checked against MindSpore
2.10."""

from __future__ import annotations

from typing import Any

import torch

from .optimizer import Optimizer, descend, masked_copy_


def _check_momentum(owner: str, momentum: Any, ints: bool) -> float:
    if ints and isinstance(momentum, int) and not isinstance(momentum, bool):
        momentum = float(momentum)
    if not isinstance(momentum, float):
        raise TypeError(f"{owner}: momentum must be a float. Received {momentum!r}")
    if momentum < 0.0:
        raise ValueError(f"{owner}: momentum must be >= 0.0. Received {momentum}")
    return momentum


class Momentum(Optimizer):
    """Momentum SGD with MindSpore's formulas (``ApplyMomentum``)::

        accum = momentum * accum + grad
        param -= lr * accum                         # use_nesterov=False
        param -= lr * grad + lr * momentum * accum  # use_nesterov=True

    (MindSpore 2.10's CPU kernel ignores ``use_nesterov``: its Nesterov updates equal the plain
    ones. jisu follows MindSpore's documented formula; see the porting guide's differences.)

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``.
        momentum: a float >= 0.
        weight_decay, loss_scale: as MindSpore's (see the base class).
        use_nesterov: Nesterov momentum.
    """

    def __init__(
        self,
        params: Any,
        learning_rate: Any,
        momentum: float,
        weight_decay: float = 0.0,
        loss_scale: float = 1.0,
        use_nesterov: bool = False,
    ) -> None:
        momentum = _check_momentum("Momentum", momentum, ints=False)
        if not isinstance(use_nesterov, bool):
            raise TypeError(f"Momentum: use_nesterov must be a bool. Received {use_nesterov!r}")
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum, self.use_nesterov = momentum, use_nesterov

    def _update(self, group, params, grads, lr, keep) -> None:
        moments = self._state_buffers(params, "moments")
        accum = torch._foreach_mul(moments, self.momentum)
        torch._foreach_add_(accum, grads)
        masked_copy_(moments, accum, keep)
        step = torch._foreach_add(grads, accum, alpha=self.momentum) if self.use_nesterov else accum
        descend(params, step, lr, keep)


class SGD(Optimizer):
    """Stochastic gradient descent with MindSpore's momentum, dampening and Nesterov rules::

        accum = grad                                          # the first step
        accum = momentum * accum + (1 - dampening) * grad     # the steps after
        param -= lr * (grad + momentum * accum)  if nesterov  else  lr * accum

    (``momentum=0``: ``param -= lr * grad``.) ``nesterov`` needs ``momentum > 0`` and
    ``dampening == 0``.
    """

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 0.1,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        loss_scale: float = 1.0,
    ) -> None:
        momentum = _check_momentum("SGD", momentum, ints=True)
        if isinstance(dampening, int) and not isinstance(dampening, bool):
            dampening = float(dampening)
        if not isinstance(dampening, float):
            raise TypeError(f"SGD: dampening must be a float. Received {dampening!r}")
        if dampening < 0.0:
            raise ValueError(f"SGD: dampening must be >= 0.0. Received {dampening}")
        if not isinstance(nesterov, bool):
            raise TypeError(f"SGD: nesterov must be a bool. Received {nesterov!r}")
        if nesterov and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError(
                "SGD: nesterov needs momentum > 0 and dampening == 0. Received "
                f"momentum={momentum}, dampening={dampening}"
            )
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum, self.dampening, self.nesterov = momentum, dampening, nesterov

    def _update(self, group, params, grads, lr, keep) -> None:
        if self.momentum == 0.0:
            descend(params, grads, lr, keep)
            return
        accums = self._state_buffers(params, "accum")
        # 1.0 once a parameter's accumulator holds a step (a float: loading a state dict casts
        # state to the parameter's dtype)
        started = [
            self.state[p].setdefault("started", torch.zeros((), dtype=p.dtype, device=p.device))
            for p in params
        ]
        new = torch._foreach_mul(accums, self.momentum)
        torch._foreach_add_(new, grads, alpha=1.0 - self.dampening)
        # the first step takes the gradient itself (MindSpore's and torch's rule)
        new = [torch.where(s > 0, n, g) for s, n, g in zip(started, new, grads)]
        masked_copy_(accums, new, keep)
        masked_copy_(started, [torch.ones_like(s) for s in started], keep)
        step = torch._foreach_add(grads, new, alpha=self.momentum) if self.nesterov else new
        descend(params, step, lr, keep)

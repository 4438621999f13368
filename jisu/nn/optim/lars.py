"""MindSpore's ``nn.LARS``: layer-wise adaptive rate scaling around another jisu.nn optimizer
(MindSpore's documented formula; its LARSUpdate kernel runs on Ascend/GPU only, so jisu's is
checked against the formula, not a recorded run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .optimizer import Optimizer, opt_init_args_register


def _default_filter(param: torch.Tensor) -> bool:
    name = getattr(param, "name", None) or ""
    return "LayerNorm" not in name and "bias" not in name


class LARS(Optimizer):
    """Scales each gradient by a local rate before ``optimizer`` applies it::

        local = coefficient * ||w|| / (||g|| + weight_decay * ||w|| + epsilon)
                (1 where ||w|| or ||g|| is 0; with use_clip: min(local / lr, 1))
        g' = local * (g + weight_decay * w)

    for the parameters ``lars_filter`` selects (default: names without "LayerNorm"/"bias");
    the others pass unchanged. The decay is the wrapped optimizer's (its decay rule: which
    parameters, their groups' values), moved here: the wrapped optimizer no longer decays.
    ``LARS`` shares the wrapped optimizer's parameter groups and state.

    Args:
        optimizer: a jisu.nn optimizer (``Momentum`` in MindSpore's examples).
        epsilon: a float. Default 1e-5.
        coefficient: the trust coefficient, a float. Default 0.001.
        use_clip: clip the local rate as above. Default False.
        lars_filter: a function of a parameter, True where LARS applies.
    """

    @opt_init_args_register
    def __init__(
        self,
        optimizer: Optimizer,
        epsilon: float = 1e-05,
        coefficient: float = 0.001,
        use_clip: bool = False,
        lars_filter: Callable[[torch.Tensor], bool] = _default_filter,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LARS: optimizer must be a jisu.nn Optimizer. Received {optimizer!r}")
        for name, value in (("epsilon", epsilon), ("coefficient", coefficient)):
            if not isinstance(value, float):
                raise TypeError(f"LARS: {name} must be a float. Received {name}={value!r}")
        if not isinstance(use_clip, bool):
            raise TypeError(f"LARS: use_clip must be a bool. Received use_clip={use_clip!r}")
        self.opt = optimizer
        self._owner = "LARS"
        self.epsilon, self.coefficient, self.use_clip = epsilon, coefficient, use_clip
        # the decay moves here (MindSpore turns the wrapped optimizer's off)
        self._decays = []
        for group in optimizer.param_groups:
            flags = [f and group["weight_decay"] > 0 for f in group["decay_flags"]]
            self._decays.append([group["weight_decay"] if f else 0.0 for f in flags])
            group["decay_flags"] = [False] * len(flags)
        self._lars = [[bool(lars_filter(p)) for p in g["params"]] for g in optimizer.param_groups]
        torch.optim.Optimizer.__init__(self, optimizer.param_groups, dict(optimizer.defaults))
        self.state = optimizer.state
        self.loss_scale = optimizer.loss_scale

    @property
    def global_step(self) -> torch.Tensor | None:
        """The wrapped optimizer's step count."""
        return self.opt.global_step

    def get_lr(self) -> Any:
        return self.opt.get_lr()

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for i, group in enumerate(self.opt.param_groups):
            lr = self.opt._rate(i, group) if self.use_clip else None
            for p, decay, apply in zip(group["params"], self._decays[i], self._lars[i]):
                if p.grad is None or not apply:
                    continue
                g = p.grad / self.loss_scale
                w_norm, g_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(g)
                local = self.coefficient * w_norm / (g_norm + decay * w_norm + self.epsilon)
                local = torch.where((w_norm > 0) & (g_norm > 0), local, 1.0)
                if self.use_clip:
                    local = torch.clamp(local / lr, max=1.0)
                p.grad = (local * (g + decay * p)) * self.loss_scale
        self.opt.step()
        return loss

    def state_dict(self) -> dict[str, Any]:
        return self.opt.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.opt.load_state_dict(state_dict)

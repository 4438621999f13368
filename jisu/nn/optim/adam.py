"""MindSpore's ``nn.Adam`` and ``nn.AdamWeightDecay``: their update rules (MindSpore's ``Adam``,
``ApplyAdamWithAmsgradV2`` and ``AdamWeightDecay`` kernels), checked against MindSpore 2.10.

Two ways they differ from ``torch.optim.Adam``/``AdamW``, both MindSpore's:

- ``Adam`` folds the bias corrections into the rate, ``lr_t = lr * sqrt(1 - beta2^t) /
  (1 - beta1^t)``, and adds ``eps`` to the uncorrected ``sqrt(v)``;
- ``AdamWeightDecay`` has no bias correction at all, and its decay is ``lr * weight_decay *
  param`` (torch's ``AdamW`` has the same decoupled form, with bias correction).

The step ``t`` is the optimizer's ``global_step + 1``: one for all parameters, as MindSpore's
single ``beta1_power``, and an overflow skipped by jisu's loss scaling does not advance it.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import _checks
from .optimizer import Optimizer, descend, masked_copy_


def _check_betas(owner: str, beta1: Any, beta2: Any, eps: Any) -> None:
    """MindSpore's checks: floats, ``0 < beta < 1``, ``eps > 0``."""
    for name, beta in (("beta1", beta1), ("beta2", beta2)):
        _checks.a_float(owner, name, beta)
        if not 0.0 < beta < 1.0:
            raise ValueError(f"{owner}: {name} must be in (0.0, 1.0). Received {beta}")
    _checks.a_float(owner, "eps", eps, low=0.0)


def _moments(
    opt: Optimizer,
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    beta1: float,
    beta2: float,
    keep: torch.Tensor | None,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The new first and second moments (``m = beta1 m + (1 - beta1) g``, ``v = beta2 v +
    (1 - beta2) g^2``), stored (unless ``keep`` is False) and returned."""
    m, v = opt._state_buffers(params, "moment1"), opt._state_buffers(params, "moment2")
    new_m = torch._foreach_mul(m, beta1)
    torch._foreach_add_(new_m, grads, alpha=1.0 - beta1)
    new_v = torch._foreach_mul(v, beta2)
    torch._foreach_addcmul_(new_v, grads, grads, value=1.0 - beta2)
    masked_copy_(m, new_m, keep)
    masked_copy_(v, new_v, keep)
    return new_m, new_v


class Adam(Optimizer):
    """Adam with MindSpore's formulas (its ``Adam`` kernel; ``ApplyAdamWithAmsgradV2`` with
    ``use_amsgrad``)::

        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad^2
        lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
        param -= lr_t * m / (sqrt(v) + eps)                                   # plain
        param -= lr_t * (beta1 * m + (1 - beta1) * grad) / (sqrt(v) + eps)    # use_nesterov
        vhat = max(vhat, v);  param -= lr_t * m / (sqrt(vhat) + eps)          # use_amsgrad

    ``weight_decay`` is added to the gradients (MindSpore's L2 decay, not AdamW's). With
    ``use_amsgrad``, ``use_nesterov`` has no effect (MindSpore's AMSGrad kernel has none).

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``. Default 1e-3.
        beta1, beta2: the moments' decay rates, floats in (0, 1). Default 0.9, 0.999.
        eps: added to the denominator, a float > 0. Default 1e-8.
        use_locking: accepted for MindSpore's signature (torch's updates need no lock).
        use_nesterov: Nesterov's momentum on the first moment. Default False.
        weight_decay, loss_scale: as MindSpore's (see the base class).
        use_amsgrad: AMSGrad (the running maximum of ``v``). Default False.
        **kwargs: MindSpore's ``use_lazy`` and ``use_offload``: with torch's dense gradients
            both update as plain Adam (MindSpore's do too, for dense gradients).

    Example:
        >>> opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    """

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        use_locking: bool = False,
        use_nesterov: bool = False,
        weight_decay: float = 0.0,
        loss_scale: float = 1.0,
        use_amsgrad: bool = False,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - {"use_lazy", "use_offload"})
        if unknown:
            raise KeyError(
                f"Adam: unknown keyword argument(s) {unknown}; known: 'use_lazy', 'use_offload'"
            )
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        _check_betas("Adam", beta1, beta2, eps)
        flags = {
            "use_locking": use_locking,
            "use_nesterov": use_nesterov,
            "use_amsgrad": use_amsgrad,
            "use_lazy": kwargs.get("use_lazy", False),
            "use_offload": kwargs.get("use_offload", False),
        }
        for name, value in flags.items():
            _checks.a_bool("Adam", name, value)
        if flags["use_lazy"] and flags["use_offload"]:
            raise ValueError("Adam: use_lazy and use_offload cannot both be True")
        if use_amsgrad and (flags["use_lazy"] or flags["use_offload"]):
            raise ValueError("Adam: use_amsgrad cannot be combined with use_lazy or use_offload")
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.use_nesterov, self.use_amsgrad = use_nesterov, use_amsgrad

    def _betas(self, device: torch.device) -> torch.Tensor:
        """``[beta1, beta2]`` as float32 on ``device``, made once (no copy per step, so a
        captured step replays)."""
        cached = getattr(self, "_beta_tensor", None)
        if cached is None or cached.device != device:
            cached = torch.tensor([self.beta1, self.beta2], dtype=torch.float32, device=device)
            self._beta_tensor = cached
        return cached

    def _update(self, group, params, grads, lr, keep) -> None:
        m, v = _moments(self, params, grads, self.beta1, self.beta2, keep)
        # float32 powers of the step on the device (MindSpore keeps float32 beta powers)
        t = self._step_tensor() + 1
        power1, power2 = torch.pow(self._betas(t.device), t).unbind()
        lr_t = lr * torch.sqrt(1.0 - power2) / (1.0 - power1)
        if self.use_amsgrad:
            vhat = self._state_buffers(params, "vhat")
            new_vhat = torch._foreach_maximum(vhat, v)
            masked_copy_(vhat, new_vhat, keep)
            v = new_vhat
        if self.use_nesterov and not self.use_amsgrad:
            m = torch._foreach_mul(m, self.beta1)
            torch._foreach_add_(m, grads, alpha=1.0 - self.beta1)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, self.eps)
        descend(params, torch._foreach_div(m, denom), lr_t, keep)


class AdamWeightDecay(Optimizer):
    """Adam with decoupled weight decay and MindSpore's formulas (its ``AdamWeightDecay``
    kernel; no bias correction)::

        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad^2
        update = m / (sqrt(v) + eps) + weight_decay * param   # the decay: decaying params only
        param -= lr * update

    The decay acts on the weights, not through the gradients; which parameters decay follows
    MindSpore's rule (not ``beta``/``gamma``; a group's own ``weight_decay``). There is no
    ``loss_scale`` (MindSpore's has none either).

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``. Default 1e-3.
        beta1, beta2: the moments' decay rates, floats in (0, 1). Default 0.9, 0.999.
        eps: added to the denominator, a float > 0. Default 1e-6 (MindSpore's).
        weight_decay: a float >= 0. Default 0.0.

    Example:
        >>> opt = nn.AdamWeightDecay(net.trainable_params(), 1e-3, weight_decay=0.01)
    """

    _decay_in_gradient = False  # it decays the weights itself, decoupled

    def __init__(
        self,
        params: Any,
        learning_rate: Any = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, params, weight_decay)
        _check_betas("AdamWeightDecay", beta1, beta2, eps)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def _update(self, group, params, grads, lr, keep) -> None:
        m, v = _moments(self, params, grads, self.beta1, self.beta2, keep)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, self.eps)
        update = torch._foreach_div(m, denom)
        decay = group["weight_decay"]
        if decay > 0:
            flags = dict(zip(map(id, group["params"]), group["decay_flags"]))
            update = [u.add(p, alpha=decay) if flags[id(p)] else u for u, p in zip(update, params)]
        descend(params, update, lr, keep)

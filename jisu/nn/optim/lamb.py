"""MindSpore's ``nn.Lamb``: Adam's moments with bias correction and a layer-wise trust ratio
(MindSpore's documented formula; its Lamb kernel runs on Ascend/GPU only, so jisu's is checked
against the formula, not a recorded run)."""

from __future__ import annotations

from typing import Any

import torch

from .adam import _check_betas, _moments
from .optimizer import Optimizer, descend, opt_init_args_register


class Lamb(Optimizer):
    """LAMB (layer-wise adaptive moments for large batches)::

        m = beta1 * m + (1 - beta1) * grad;   v = beta2 * v + (1 - beta2) * grad^2
        r = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * w
        w -= lr * (||w|| / ||r||) * r      # the ratio is 1 where either norm is 0

    The decay is part of the update (decoupled), on the parameters MindSpore's rule picks (not
    ``beta``/``gamma``; a group's own ``weight_decay``). Each parameter is one "layer".

    Args:
        params: parameters or group dicts (see :class:`~jisu.nn.optim.Optimizer`).
        learning_rate: a number, a per-step list or a ``LearningRateSchedule``.
        beta1, beta2: the moments' decay rates, floats in (0, 1). Default 0.9, 0.999.
        eps: added to the denominator, a float > 0. Default 1e-6.
        weight_decay: a float >= 0. Default 0.0.
    """

    _decay_in_gradient = False

    @opt_init_args_register
    def __init__(
        self,
        params: Any,
        learning_rate: Any,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(learning_rate, params, weight_decay)
        _check_betas("Lamb", beta1, beta2, eps)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def _update(self, group, params, grads, lr, keep) -> None:
        m, v = _moments(self, params, grads, self.beta1, self.beta2, keep)
        t = (self._step_tensor() + 1).to(torch.float32)
        correct1, correct2 = 1.0 - self.beta1**t, 1.0 - self.beta2**t
        decay = group["weight_decay"]
        flags = dict(zip(map(id, group["params"]), group["decay_flags"]))
        steps = []
        for p, m_, v_ in zip(params, m, v):
            r = (m_ / correct1) / (torch.sqrt(v_ / correct2) + self.eps)
            if decay > 0 and flags[id(p)]:
                r = r + decay * p
            w_norm, r_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(r)
            ratio = torch.where((w_norm > 0) & (r_norm > 0), w_norm / r_norm, 1.0)
            steps.append(r * ratio)
        descend(params, steps, lr, keep)

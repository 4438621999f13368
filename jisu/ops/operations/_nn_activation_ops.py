"""MindSpore's activation, normalization and dropout primitives (``Softplus``, ``GeLU``,
``FastGeLU``, ``Elu``, ``HSwish``, ``HSigmoid``, ``PReLU``, ``ReLU6``, ``L2Normalize``,
``Dropout``, ``DropoutGenMask``/``DropoutDoMask``) on torch."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ..primitive import Primitive
from ._nn_rng import SeededStream, shape_arg


class Softplus(Primitive):
    """``log(1 + exp(x))``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x)


class GeLU(Primitive):
    """``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x ** 3)))``, the tanh form MindSpore
    computes."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


class FastGeLU(Primitive):
    """MindSpore's fast GeLU: ``x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|))``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        a = x.abs()
        return x / (1 + torch.exp(-1.702 * a)) * torch.exp(0.851 * (x - a))


class Elu(Primitive):
    """``x`` where positive, ``exp(x) - 1`` elsewhere (MindSpore computes ``alpha=1.0``
    only)."""

    def __init__(self, alpha: float = 1.0) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            raise TypeError(f"Elu: alpha must be a float. Received alpha={alpha!r}")
        if alpha != 1.0:
            raise ValueError(f"Elu: alpha must be 1.0 (as in MindSpore). Received alpha={alpha}")
        self.alpha = float(alpha)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, self.alpha)


class HSwish(Primitive):
    """``x * relu6(x + 3) / 6``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


class HSigmoid(Primitive):
    """``relu6(x + 3) / 6``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardsigmoid(x)


class ReLU6(Primitive):
    """``min(max(x, 0), 6)``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(x)


class PReLU(Primitive):
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` (C,) or (1,) along axis 1:
    ``PReLU()(x, weight)``."""

    def __call__(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.prelu(x, weight)


class L2Normalize(Primitive):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``: ``L2Normalize(axis=0,
    epsilon=1e-4)(x)``."""

    def __init__(self, axis: Any = 0, epsilon: float = 1e-4) -> None:
        if isinstance(axis, (tuple, list)):
            axis = tuple(axis)
        elif isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"L2Normalize: axis must be an int or a tuple. Received axis={axis!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"L2Normalize: epsilon must be a float. Received epsilon={epsilon!r}")
        self.axis, self.epsilon = axis, float(epsilon)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        square = (x * x).sum(dim=self.axis, keepdim=True)
        return x * torch.rsqrt(square.clamp_min(self.epsilon))


def _keep_prob(owner: str, keep_prob: Any) -> float:
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)):
        raise TypeError(f"{owner}: keep_prob must be a float. Received keep_prob={keep_prob!r}")
    if not 0 < keep_prob <= 1:
        raise ValueError(f"{owner}: keep_prob must be in (0, 1]. Received keep_prob={keep_prob}")
    return float(keep_prob)


class Dropout(Primitive):
    """Zeroes each element with probability ``1 - keep_prob`` and scales the rest by
    ``1 / keep_prob``: ``Dropout(keep_prob=0.5, Seed0=0, Seed1=0)(x)`` returns
    ``(output, mask)``, the mask of kept elements in ``x``'s dtype. ``p`` (drop probability,
    ``1 - keep_prob``) is accepted too, as some zoo projects pass it (MindSpore refuses it)."""

    def __init__(
        self, keep_prob: float = 0.5, Seed0: int = 0, Seed1: int = 0, *, p: float | None = None
    ) -> None:
        if p is not None:  # jisu's extension: 5 zoo projects pass nn.Dropout's p here
            keep_prob = 1 - p if isinstance(p, (int, float)) and not isinstance(p, bool) else p
        self.keep_prob = _keep_prob("Dropout", keep_prob)
        self.Seed0, self.Seed1 = Seed0, Seed1
        self._stream = SeededStream("Dropout", Seed0, Seed1)

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        gen = self._stream.generator(x.device)
        keep = torch.rand(x.shape, generator=gen, device=x.device) < self.keep_prob
        mask = keep.to(x.dtype)
        return x * mask / self.keep_prob, mask


class DropoutGenMask(Primitive):
    """A dropout mask packed into bits: ``DropoutGenMask(Seed0, Seed1)(shape, keep_prob)``
    gives a uint8 tensor of ``ceil(n / 128) * 16`` bytes (n = prod(shape)), each bit a kept
    element, for :class:`DropoutDoMask`. The bit layout is jisu's own (least significant bit
    first): a mask is only meant for the matching ``DropoutDoMask``."""

    def __init__(self, Seed0: int = 0, Seed1: int = 0) -> None:
        self.Seed0, self.Seed1 = Seed0, Seed1
        self._stream = SeededStream("DropoutGenMask", Seed0, Seed1)

    def __call__(self, shape: Any, keep_prob: Any) -> torch.Tensor:
        n = math.prod(shape_arg("DropoutGenMask", shape))
        bits = math.ceil(n / 128) * 128
        device = keep_prob.device if isinstance(keep_prob, torch.Tensor) else None
        draw = torch.rand(bits, generator=self._stream.generator(device), device=device)
        keep = (draw < keep_prob).reshape(-1, 8).to(torch.uint8)
        weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8, device=keep.device)
        return (keep * weights).sum(dim=1, dtype=torch.uint8)


class DropoutDoMask(Primitive):
    """Applies a :class:`DropoutGenMask` mask: ``DropoutDoMask()(x, mask, keep_prob)`` is
    ``x`` where the mask's bit is set, scaled by ``1 / keep_prob``, and 0 elsewhere."""

    def __call__(self, x: torch.Tensor, mask: torch.Tensor, keep_prob: Any) -> torch.Tensor:
        if mask.dtype != torch.uint8 or mask.numel() * 8 < x.numel():
            raise ValueError(
                "DropoutDoMask: mask must be DropoutGenMask's uint8 mask of at least "
                f"{math.ceil(x.numel() / 8)} bytes. Received {mask.dtype} of {mask.numel()}"
            )
        mask = mask.to(x.device)
        shifts = torch.arange(8, dtype=torch.uint8, device=x.device)
        keep = ((mask[:, None] >> shifts) & 1).reshape(-1)[: x.numel()].reshape(x.shape)
        return x * keep.to(x.dtype) / keep_prob


__all__ = [
    "Dropout",
    "DropoutDoMask",
    "DropoutGenMask",
    "Elu",
    "FastGeLU",
    "GeLU",
    "HSigmoid",
    "HSwish",
    "L2Normalize",
    "PReLU",
    "ReLU6",
    "Softplus",
]

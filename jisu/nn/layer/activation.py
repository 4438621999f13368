"""MindSpore's activation cells, each a subclass of the torch activation it computes."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..cell import MINDSPORE_NAMES, Cell

__all__ = [
    "ELU",
    "GELU",
    "HSigmoid",
    "HSwish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "SeLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softsign",
    "Tanh",
    "get_activation",
]


def _axis(owner: str, axis: object) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{owner}: axis must be an int. Received axis={axis!r}")
    return axis


class ReLU(Cell, nn.ReLU):
    """max(x, 0)."""

    def __init__(self) -> None:
        nn.ReLU.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x)


class ReLU6(Cell, nn.ReLU6):
    """min(max(x, 0), 6)."""

    def __init__(self) -> None:
        nn.ReLU6.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(x)


class Sigmoid(Cell, nn.Sigmoid):
    """1 / (1 + exp(-x))."""

    def __init__(self) -> None:
        nn.Sigmoid.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


class Tanh(Cell, nn.Tanh):
    """tanh(x)."""

    def __init__(self) -> None:
        nn.Tanh.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


class GELU(Cell, nn.GELU):
    """GELU; ``approximate=True`` (MindSpore's default) is the tanh approximation, False the
    exact erf form."""

    def __init__(self, approximate: bool = True) -> None:
        if not isinstance(approximate, bool):
            raise TypeError(
                f"GELU: approximate must be a bool. Received approximate={approximate!r}"
            )
        nn.GELU.__init__(self, approximate="tanh" if approximate else "none")

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate=self.approximate)


class LeakyReLU(Cell, nn.LeakyReLU):
    """max(alpha·x, x) for alpha <= 1, min(alpha·x, x) above (MindSpore's rule). Default
    ``alpha=0.2``."""

    def __init__(self, alpha: float = 0.2) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            raise TypeError(f"LeakyReLU: alpha must be a number. Received alpha={alpha!r}")
        nn.LeakyReLU.__init__(self, negative_slope=float(alpha))
        self.alpha = alpha

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if self.alpha <= 1:
            return F.leaky_relu(x, self.negative_slope)
        return torch.minimum(x * self.alpha, x)


class Softmax(Cell, nn.Softmax):
    """softmax along ``axis`` (default -1)."""

    def __init__(self, axis: int = -1) -> None:
        nn.Softmax.__init__(self, dim=_axis("Softmax", axis))
        self.axis = axis

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(x, self.dim)


class LogSoftmax(Cell, nn.LogSoftmax):
    """log(softmax) along ``axis`` (default -1)."""

    def __init__(self, axis: int = -1) -> None:
        nn.LogSoftmax.__init__(self, dim=_axis("LogSoftmax", axis))
        self.axis = axis

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(x, self.dim)


class ELU(Cell, nn.ELU):
    """x for x > 0, alpha·(exp(x) − 1) below. Default ``alpha=1.0``."""

    def __init__(self, alpha: float = 1.0) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
            raise TypeError(f"ELU: alpha must be a float. Received alpha={alpha!r}")
        nn.ELU.__init__(self, alpha=float(alpha))

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, self.alpha)


class HSwish(Cell, nn.Hardswish):
    """x · relu6(x + 3) / 6 (hard swish, MobileNetV3)."""

    def __init__(self) -> None:
        nn.Hardswish.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


class HSigmoid(Cell, nn.Hardsigmoid):
    """relu6(x + 3) / 6 (hard sigmoid)."""

    def __init__(self) -> None:
        nn.Hardsigmoid.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardsigmoid(x)


class SiLU(Cell, nn.SiLU):
    """x · sigmoid(x)."""

    def __init__(self) -> None:
        nn.SiLU.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


class LogSigmoid(Cell, nn.LogSigmoid):
    """log(sigmoid(x)), computed stably."""

    def __init__(self) -> None:
        nn.LogSigmoid.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.logsigmoid(x)


class SeLU(Cell, nn.SELU):
    """scale · elu(x, alpha) with SELU's fixed constants."""

    def __init__(self) -> None:
        nn.SELU.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.selu(x)


class Softsign(Cell, nn.Softsign):
    """``x / (1 + abs(x))``."""

    def __init__(self) -> None:
        nn.Softsign.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.softsign(x)


class Mish(Cell, nn.Mish):
    """x · tanh(softplus(x))."""

    def __init__(self) -> None:
        nn.Mish.__init__(self)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(x)


class Hardtanh(Cell, nn.Hardtanh):
    """x clipped to [min_val, max_val] (defaults −1, 1)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        for name, value in (("min_val", min_val), ("max_val", max_val)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"Hardtanh: {name} must be a number. Received {name}={value!r}")
        if min_val >= max_val:
            raise ValueError(
                f"Hardtanh: min_val must be < max_val. Received min_val={min_val}, "
                f"max_val={max_val}"
            )
        nn.Hardtanh.__init__(self, float(min_val), float(max_val))

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)


class PReLU(Cell, nn.PReLU):
    """max(0, x) + w · min(0, x) with a learned slope ``w`` per channel (axis 1), or one
    shared slope (``channel=1``). MindSpore names the parameter ``a`` (attribute ``w``).

    Args:
        channel: the number of slopes (1, or the input's channels). Default 1.
        w: the initial slope: a float (default 0.25), a list of ``channel`` floats, or a
            ``(channel,)`` float tensor.
    """

    def __init__(self, channel: int = 1, w: Any = 0.25) -> None:
        if isinstance(channel, bool) or not isinstance(channel, int) or channel < 1:
            raise ValueError(f"PReLU: channel must be a positive int. Received channel={channel!r}")
        if isinstance(w, (float, np.floating)):
            value = torch.full((channel,), float(w))
        elif isinstance(w, list):
            if len(w) != channel or not all(isinstance(v, (float, np.floating)) for v in w):
                raise ValueError(
                    f"PReLU: a list w must hold channel={channel} floats. Received w={w!r}"
                )
            value = torch.tensor([float(v) for v in w], dtype=torch.float32)
        elif isinstance(w, torch.Tensor):
            if not w.is_floating_point() or tuple(w.shape) != (channel,):
                raise ValueError(
                    f"PReLU: a tensor w must be float with shape ({channel},). "
                    f"Received dtype={w.dtype}, shape={tuple(w.shape)}"
                )
            value = w.detach().float()
        else:
            raise TypeError(f"PReLU: w must be a float, a list or a tensor. Received {w!r}")
        nn.PReLU.__init__(self, num_parameters=channel)
        with torch.no_grad():
            self.weight.copy_(value)
        self.channel = channel

    @property
    def w(self) -> torch.Tensor:
        """The slopes (MindSpore's attribute name)."""
        return self.weight

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.prelu(x, self.weight.to(x.dtype))


MINDSPORE_NAMES.append((nn.PReLU, {"weight": "w"}))

_ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": ReLU,
    "relu6": ReLU6,
    "sigmoid": Sigmoid,
    "tanh": Tanh,
    "gelu": GELU,
    "leakyrelu": LeakyReLU,
    "softmax": Softmax,
    "logsoftmax": LogSoftmax,
    "elu": ELU,
    "hswish": HSwish,
    "hsigmoid": HSigmoid,
    "silu": SiLU,
    "logsigmoid": LogSigmoid,
    "hardtanh": Hardtanh,
    "softsign": Softsign,
    "mish": Mish,
    "prelu": PReLU,
}


def get_activation(name: str | None, prim_name: str | None = None) -> nn.Module | None:
    """A new activation cell by MindSpore's name ("relu", "gelu", "softmax", ...); None for
    None, as MindSpore's (a layer built with ``activation=None`` has none)."""
    if name is None:
        return None
    owner = prim_name or "get_activation"
    kind = _ACTIVATIONS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"{owner}: unknown activation {name!r}. Known: {sorted(_ACTIVATIONS)}")
    return kind()

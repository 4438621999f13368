"""MindSpore's activation cells, each a subclass of the torch activation it computes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..cell import Cell

__all__ = [
    "GELU",
    "LeakyReLU",
    "LogSoftmax",
    "ReLU",
    "ReLU6",
    "Sigmoid",
    "Softmax",
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


_ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": ReLU,
    "relu6": ReLU6,
    "sigmoid": Sigmoid,
    "tanh": Tanh,
    "gelu": GELU,
    "leakyrelu": LeakyReLU,
    "softmax": Softmax,
    "logsoftmax": LogSoftmax,
}


def get_activation(name: str, prim_name: str | None = None) -> nn.Module:
    """A new activation cell by MindSpore's name ("relu", "gelu", "softmax", ...)."""
    owner = prim_name or "get_activation"
    kind = _ACTIVATIONS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"{owner}: unknown activation {name!r}. Known: {sorted(_ACTIVATIONS)}")
    return kind()

"""MindSpore's basic layers: ``Dense``, ``Flatten``, ``Dropout``, ``Identity`` as subclasses
of torch's ``Linear``, ``Flatten``, ``Dropout``, ``Identity``."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ...common.initializer import HeUniform, Uniform, initializer
from .. import _checks
from ..cell import Cell
from .activation import get_activation

__all__ = ["Dense", "Dropout", "Flatten", "Identity", "Pad"]


def init_parameter(param: torch.Tensor, init: Any, owner: str, name: str, default: Any) -> None:
    """Overwrite ``param`` in place with MindSpore's ``init`` (``default`` when None); a
    tensor/array ``init`` must have the parameter's shape."""
    try:
        value = initializer(default if init is None else init, tuple(param.shape), param.dtype)
    except ValueError as err:
        raise ValueError(f"{owner}: bad {name}: {err}") from None
    with torch.no_grad():
        param.copy_(value)


def resolve_activation(owner: str, activation: Any) -> nn.Module | None:
    """MindSpore's ``activation`` argument: None, a name, or a cell (any torch module)."""
    if activation is None or isinstance(activation, nn.Module):
        return activation
    if isinstance(activation, str):
        return get_activation(activation, owner)
    raise TypeError(
        f"{owner}: activation must be a str or a Cell. Received activation={activation!r}"
    )


class Dense(Cell, nn.Linear):
    """Fully connected layer ``activation(x @ weight.T + bias)`` (torch's ``Linear``).

    Args:
        in_channels: input features.
        out_channels: output features.
        weight_init: MindSpore initializer for the (out, in) weight. Default
            ``HeUniform(sqrt(5))`` (torch's default Linear init).
        bias_init: initializer for the bias. Default ``Uniform(1 / sqrt(in_channels))``.
        has_bias: whether there is a bias. Default True.
        activation: a name ("relu", ...) or a cell applied to the output. Default None.
        dtype: parameter dtype. Default float32.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        activation: Any = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _checks.positive_int("Dense", "in_channels", in_channels)
        _checks.positive_int("Dense", "out_channels", out_channels)
        _checks.a_bool("Dense", "has_bias", has_bias)
        nn.Linear.__init__(self, in_channels, out_channels, bias=has_bias, dtype=dtype)
        self._auto_prefix = True
        self.in_channels, self.out_channels, self.has_bias = in_channels, out_channels, has_bias
        init_parameter(self.weight, weight_init, "Dense", "weight_init", HeUniform(math.sqrt(5)))
        if has_bias:
            bound = 1 / math.sqrt(in_channels)
            init_parameter(self.bias, bias_init, "Dense", "bias_init", Uniform(bound))
        self.activation = resolve_activation("Dense", activation)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        x = F.linear(x, self.weight, self.bias)
        return x if self.activation is None else self.activation(x)

    def extra_repr(self) -> str:
        return (
            f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
            f"has_bias={self.has_bias}"
        )


class Flatten(Cell, nn.Flatten):
    """Flatten dims ``start_dim`` .. ``end_dim`` (MindSpore 2.10's signature, defaults 1 and
    -1: keep the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        for name, value in (("start_dim", start_dim), ("end_dim", end_dim)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Flatten: {name} must be an int. Received {name}={value!r}")
        nn.Flatten.__init__(self, start_dim, end_dim)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        ndim = max(x.dim(), 1)
        for name, axis in (("start_dim", self.start_dim), ("end_dim", self.end_dim)):
            if not -ndim <= axis < ndim:
                raise ValueError(
                    f"Flatten: {name} out of range for a {x.dim()}-d input. Received {name}={axis}"
                )
        return torch.flatten(x, self.start_dim, self.end_dim)


class Dropout(Cell, nn.Dropout):
    """Zero elements with probability ``p`` in training, scaling the rest by 1/(1-p); the
    identity in eval mode.

    Args:
        keep_prob: the probability of keeping an element (MindSpore's older argument), a
            float in (0, 1]; used only when ``p`` is None. Default 0.5.
        p: the probability of dropping, in [0, 1); wins over ``keep_prob`` when given.
    """

    def __init__(self, keep_prob: float = 0.5, p: float | None = None, dtype: Any = None) -> None:
        if p is None:
            if not isinstance(keep_prob, float):
                raise TypeError(
                    f"Dropout: keep_prob must be a float. Received keep_prob={keep_prob!r}"
                )
            if not 0 < keep_prob <= 1:
                raise ValueError(
                    f"Dropout: keep_prob must be in (0, 1]. Received keep_prob={keep_prob}"
                )
            drop = 1.0 - keep_prob
        else:
            if isinstance(p, bool) or not isinstance(p, (int, float)):
                raise TypeError(f"Dropout: p must be a float. Received p={p!r}")
            if not 0 <= p < 1:
                raise ValueError(f"Dropout: p must be in [0, 1). Received p={p}")
            drop = float(p)
        nn.Dropout.__init__(self, drop)
        self.keep_prob = keep_prob

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.p, self.training)


class Identity(Cell, nn.Identity):
    """Returns its input; any arguments are accepted and ignored (as MindSpore's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.Identity.__init__(self)

    def construct(self, x: Any) -> Any:
        return x


_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _mirror_index(size: int, before: int, after: int, mode: str) -> torch.Tensor:
    """Source index of every output position along one dim: REFLECT mirrors about the edge
    element (``3 2 | 1 2 3 | 2 1``), SYMMETRIC repeats it (``2 1 | 1 2 3 | 3 2``)."""
    i = torch.arange(-before, size + after)
    if mode == "REFLECT":
        period = 2 * (size - 1)
        j = torch.remainder(i, period) if period else torch.zeros_like(i)
        return torch.where(j >= size, period - j, j)
    j = torch.remainder(i, 2 * size)
    return torch.where(j >= size, 2 * size - 1 - j, j)


class Pad(Cell):
    """Pad every dim of the input: ``paddings[d] = (before, after)`` for dim ``d``, as
    MindSpore's ``nn.Pad``. ``mode`` "CONSTANT" fills zeros, "REFLECT" mirrors without the
    edge element (each padding < the dim), "SYMMETRIC" mirrors with it (each padding <= the
    dim); the model zoo's ResNet-18 stem pads (0, 0), (0, 0), (1, 1), (1, 1) before a pool.
    """

    def __init__(self, paddings: tuple, mode: str = "CONSTANT") -> None:
        super().__init__()
        if mode not in _PAD_MODES:
            raise ValueError(f"Pad: mode must be one of {list(_PAD_MODES)}. Received mode={mode!r}")
        if not isinstance(paddings, tuple):
            kind = type(paddings).__name__
            raise TypeError(f"Pad: paddings must be a tuple. Received paddings of type {kind}")
        pairs = []
        for item in paddings:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ValueError(f"Pad: paddings must have the shape (n, 2). Received {paddings}")
            for value in item:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(
                        f"Pad: paddings must hold non-negative ints. Received {paddings}"
                    )
            pairs.append((int(item[0]), int(item[1])))
        if len(pairs) > 4:
            raise ValueError(f"Pad: paddings up to 4 dims are supported. Received {len(pairs)}")
        self.paddings, self.mode = tuple(pairs), mode

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != len(self.paddings):
            raise ValueError(
                f"Pad: paddings has {len(self.paddings)} pairs for a {x.dim()}-d input; give "
                "one (before, after) pair per dim"
            )
        if self.mode == "CONSTANT":
            flat = [v for before, after in reversed(self.paddings) for v in (before, after)]
            return F.pad(x, flat)
        for dim, (before, after) in enumerate(self.paddings):
            if before == after == 0:
                continue
            size = x.shape[dim]
            limit = size - 1 if self.mode == "REFLECT" else size
            if max(before, after) > limit:
                raise ValueError(
                    f"Pad: {self.mode} padding of dim {dim} must be <= {limit} for its size "
                    f"{size}. Received ({before}, {after})"
                )
            index = _mirror_index(size, before, after, self.mode).to(x.device)
            x = x.index_select(dim, index)
        return x

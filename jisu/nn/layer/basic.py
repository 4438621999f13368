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

__all__ = [
    "BiDense",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "Dense",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "Flatten",
    "Identity",
    "Linear",
    "OneHot",
    "Pad",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ZeroPad2d",
]


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


class Linear(Dense):
    """MindSpore 2.10's ``Linear``: :class:`Dense` with torch's argument names
    (``in_features``, ``out_features``, ``bias``); the same initializers."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        weight_init: Any = None,
        bias_init: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        Dense.__init__(
            self, in_features, out_features, weight_init, bias_init, bias,
            dtype=dtype or torch.float32,
        )  # fmt: skip
        self.in_features, self.out_features = in_features, out_features


def _drop_p(owner: str, p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{owner}: p must be a float. Received p={p!r}")
    if not 0 <= p <= 1:
        raise ValueError(f"{owner}: p must be in [0, 1]. Received p={p}")
    return float(p)


class Dropout1d(Cell, nn.Dropout1d):
    """Zero whole channels of (N, C, L) with probability ``p`` in training (the rest scaled
    by 1/(1-p)); the identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        nn.Dropout1d.__init__(self, _drop_p("Dropout1d", p))

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout1d(x, self.p, self.training)


class Dropout2d(Cell, nn.Dropout2d):
    """Zero whole channels of (N, C, H, W) with probability ``p`` in training (the rest
    scaled by 1/(1-p)); the identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        nn.Dropout2d.__init__(self, _drop_p("Dropout2d", p))

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"Dropout2d: the input must be 4-d. Received shape={tuple(x.shape)}")
        return F.dropout2d(x, self.p, self.training)


class Dropout3d(Cell, nn.Dropout3d):
    """Zero whole channels of (N, C, D, H, W) with probability ``p`` in training (the rest
    scaled by 1/(1-p)); the identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        nn.Dropout3d.__init__(self, _drop_p("Dropout3d", p))

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 5:
            raise ValueError(f"Dropout3d: the input must be 5-d. Received shape={tuple(x.shape)}")
        return F.dropout3d(x, self.p, self.training)


def _padding(owner: str, padding: Any, n: int) -> tuple[int, ...]:
    """An int or a tuple of 2·n ints (last dim first: left, right, top, bottom, ...)."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * n)
    if (
        isinstance(padding, (tuple, list))
        and len(padding) == 2 * n
        and all(isinstance(p, int) and not isinstance(p, bool) for p in padding)
    ):
        return tuple(padding)
    raise TypeError(
        f"{owner}: padding must be an int or a tuple of {2 * n} ints. Received padding={padding!r}"
    )


class _TorchPad(Cell):
    """MindSpore's ``*Pad*d`` cells: torch's ``F.pad`` arguments (negative pads crop)."""

    _n = 2
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        owner = type(self).__name__
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{owner}: value must be a number. Received value={value!r}")
        self.padding, self.value = _padding(owner, padding, self._n), value

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if self._mode == "constant":
            return F.pad(x, self.padding, value=self.value)
        return F.pad(x, self.padding, mode=self._mode)


class ConstantPad1d(_TorchPad):
    """Pad the last dim with ``value``: ``padding`` an int or (left, right)."""

    _n = 1


class ConstantPad2d(_TorchPad):
    """Pad the last two dims with ``value``: ``padding`` an int or (left, right, top,
    bottom)."""


class ConstantPad3d(_TorchPad):
    """Pad the last three dims with ``value``: ``padding`` an int or a 6-tuple (last dim
    first)."""

    _n = 3


class ZeroPad2d(_TorchPad):
    """Pad the last two dims with zeros: ``padding`` an int or (left, right, top, bottom)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_TorchPad):
    """Mirror-pad the last dim (without the edge element): ``padding`` an int or (left,
    right)."""

    _n, _mode = 1, "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__(padding)


class ReflectionPad2d(_TorchPad):
    """Mirror-pad the last two dims (without the edge element): ``padding`` an int or
    (left, right, top, bottom)."""

    _mode = "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__(padding)


class OneHot(Cell):
    """One-hot vectors of integer ``indices``: a new axis ``axis`` of length ``depth`` holding
    ``on_value`` at the index and ``off_value`` elsewhere (an index outside [0, depth) gives
    an all-``off_value`` vector).

    Args:
        axis: where the new axis goes (-1: last). Default -1.
        depth: the number of classes. Default 1.
        on_value, off_value: the fill values. Defaults 1.0, 0.0.
        dtype: the output dtype. Default float32.
    """

    def __init__(
        self,
        axis: int = -1,
        depth: int = 1,
        on_value: float = 1.0,
        off_value: float = 0.0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"OneHot: axis must be an int. Received axis={axis!r}")
        _checks.positive_int("OneHot", "depth", depth)
        self.axis, self.depth, self.on_value, self.off_value, self.dtype = (
            axis, depth, on_value, off_value, dtype,
        )  # fmt: skip

    def construct(self, indices: torch.Tensor) -> torch.Tensor:
        if indices.is_floating_point():
            raise TypeError(f"OneHot: indices must be integers. Received dtype={indices.dtype}")
        hot = indices.long().unsqueeze(-1) == torch.arange(self.depth, device=indices.device)
        on = torch.tensor(self.on_value, dtype=self.dtype, device=indices.device)
        out = torch.where(hot, on, torch.tensor(self.off_value, dtype=self.dtype, device=on.device))
        axis = self.axis if self.axis >= 0 else out.dim() + self.axis
        return out.movedim(-1, axis)


class BiDense(Cell, nn.Bilinear):
    """Bilinear layer ``y[o] = x1 · weight[o] · x2 + bias[o]`` (torch's ``Bilinear``) over the
    last axis of two inputs of the same leading shape.

    Args:
        in1_channels, in2_channels, out_channels: the sizes; the weight is (out, in1, in2).
        weight_init, bias_init: initializers; default ``Uniform(1 / sqrt(in1_channels))`` both.
        has_bias: default True.
    """

    def __init__(
        self,
        in1_channels: int,
        in2_channels: int,
        out_channels: int,
        weight_init: Any = None,
        bias_init: Any = None,
        has_bias: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        for name, value in (
            ("in1_channels", in1_channels),
            ("in2_channels", in2_channels),
            ("out_channels", out_channels),
        ):
            _checks.positive_int("BiDense", name, value)
        _checks.a_bool("BiDense", "has_bias", has_bias)
        nn.Bilinear.__init__(
            self, in1_channels, in2_channels, out_channels, bias=has_bias, dtype=dtype
        )
        self.in1_channels, self.in2_channels, self.out_channels = (
            in1_channels, in2_channels, out_channels,
        )  # fmt: skip
        self.has_bias = has_bias
        bound = Uniform(1 / math.sqrt(in1_channels))
        init_parameter(self.weight, weight_init, "BiDense", "weight_init", bound)
        if has_bias:
            init_parameter(self.bias, bias_init, "BiDense", "bias_init", bound)

    def construct(self, input1: torch.Tensor, input2: torch.Tensor) -> torch.Tensor:
        if input1.shape[:-1] != input2.shape[:-1]:
            raise ValueError(
                "BiDense: input1 and input2 must have the same leading shape. Received "
                f"{tuple(input1.shape)} and {tuple(input2.shape)}"
            )
        return F.bilinear(input1, input2, self.weight, self.bias)

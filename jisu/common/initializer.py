"""MindSpore's weight initializers (``mindspore.common.initializer``) on torch tensors.

An :class:`Initializer` fills a tensor in place with MindSpore 2.10's distribution (same
formulas, same fan-in/fan-out rule); :func:`initializer` builds a new tensor from a name
("normal", "zeros", "he_uniform" ...), an Initializer, a number or an array. Random draws use
torch's generator, so ``torch.manual_seed`` makes them reproducible (the values differ from
MindSpore's, which draws from its own generator; the distributions are the same).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import torch

__all__ = [
    "Constant",
    "HeNormal",
    "HeUniform",
    "Initializer",
    "Normal",
    "One",
    "TruncatedNormal",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zero",
    "initializer",
]


def _fan_in_and_fan_out(shape: tuple[int, ...]) -> tuple[int, int]:
    """MindSpore's rule: a 2-d shape is (out, in); a larger one is (out, in, *receptive field),
    the receptive field multiplying both fans."""
    if len(shape) < 2:
        raise ValueError(
            "fan_in and fan_out can not be computed for a tensor with fewer than 2 dimensions. "
            f"Received shape={tuple(shape)}"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(owner: str, shape: tuple[int, ...], mode: str) -> int:
    if not isinstance(mode, str) or mode.lower() not in ("fan_in", "fan_out"):
        raise ValueError(f"{owner}: mode must be 'fan_in' or 'fan_out'. Received mode={mode!r}")
    fan_in, fan_out = _fan_in_and_fan_out(shape)
    return fan_in if mode.lower() == "fan_in" else fan_out


def _gain(owner: str, nonlinearity: str, negative_slope: Any) -> float:
    """The gain MindSpore (and torch) give a nonlinearity."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d")
    if nonlinearity in (*linear, "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if negative_slope is None:
            negative_slope = 0.01
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
            raise ValueError(
                f"{owner}: negative_slope must be an int or a float. "
                f"Received negative_slope={negative_slope!r}"
            )
        return math.sqrt(2.0 / (1 + negative_slope**2))
    raise ValueError(
        f"{owner}: nonlinearity must be one of 'sigmoid', 'tanh', 'relu', 'leaky_relu' or a "
        f"linear one. Received nonlinearity={nonlinearity!r}"
    )


class Initializer:
    """Base class: ``init(tensor)`` fills ``tensor`` in place (without recording gradients)
    and returns it. Subclasses define :meth:`_initialize`: jisu's own on the tensor, a user's
    (the zoo's KaimingUniform ...) on a NumPy array, filled in place as in MindSpore."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def _initialize(self, tensor: torch.Tensor) -> None:
        raise NotImplementedError(f"{type(self).__name__}: define _initialize(tensor)")

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            if type(self)._initialize.__module__.startswith("jisu."):
                self._initialize(tensor)
            else:  # a user's subclass fills a NumPy array in place, as MindSpore hands it one
                low = torch.float32 if tensor.dtype == torch.bfloat16 else tensor.dtype
                arr = tensor.detach().to("cpu", low).numpy().copy()
                self._initialize(arr)
                tensor.copy_(torch.from_numpy(arr))
        return tensor

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"


class Zero(Initializer):
    """All zeros (alias "zeros")."""

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.zero_()


class One(Initializer):
    """All ones (alias "ones")."""

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.fill_(1)


class Constant(Initializer):
    """Every element ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__(value=value)
        self.value = value

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.fill_(self.value)


class Uniform(Initializer):
    """U(-scale, scale). Default ``scale=0.07``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.uniform_(-self.scale, self.scale)


class Normal(Initializer):
    """N(mean, sigma²). Defaults ``sigma=0.01, mean=0.0``."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0) -> None:
        super().__init__(sigma=sigma, mean=mean)
        if sigma < 0:
            raise ValueError(f"Normal: sigma must be >= 0. Received sigma={sigma}")
        self.sigma, self.mean = sigma, mean

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.normal_(self.mean, self.sigma)


class TruncatedNormal(Initializer):
    """N(mean, sigma²) restricted to [a, b] (absolute bounds, as MindSpore's). Defaults
    ``sigma=0.01, mean=0.0, a=-2.0, b=2.0``."""

    def __init__(
        self, sigma: float = 0.01, mean: float = 0.0, a: float = -2.0, b: float = 2.0
    ) -> None:
        super().__init__(sigma=sigma, mean=mean, a=a, b=b)
        if sigma < 0:
            raise ValueError(f"TruncatedNormal: sigma must be >= 0. Received sigma={sigma}")
        self.sigma, self.mean, self.a, self.b = sigma, mean, a, b

    def _initialize(self, tensor: torch.Tensor) -> None:
        torch.nn.init.trunc_normal_(tensor, self.mean, self.sigma, self.a, self.b)


class XavierUniform(Initializer):
    """U(-bound, bound), bound = gain·sqrt(6 / (fan_in + fan_out)) (alias "xavier_uniform")."""

    def __init__(self, gain: float = 1) -> None:
        super().__init__(gain=gain)
        self.gain = gain

    def _initialize(self, tensor: torch.Tensor) -> None:
        fan_in, fan_out = _fan_in_and_fan_out(tuple(tensor.shape))
        bound = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        tensor.uniform_(-bound, bound)


class XavierNormal(Initializer):
    """N(0, sigma²), sigma = gain·sqrt(2 / (fan_in + fan_out)) (alias "xavier_normal")."""

    def __init__(self, gain: float = 1) -> None:
        super().__init__(gain=gain)
        self.gain = gain

    def _initialize(self, tensor: torch.Tensor) -> None:
        fan_in, fan_out = _fan_in_and_fan_out(tuple(tensor.shape))
        tensor.normal_(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)))


class HeUniform(Initializer):
    """U(-bound, bound), bound = sqrt(3)·gain/sqrt(fan) (alias "he_uniform"); the gain of
    ``nonlinearity`` with ``negative_slope`` (leaky_relu: sqrt(2 / (1 + slope²))).
    Defaults ``negative_slope=0, mode="fan_in", nonlinearity="leaky_relu"``."""

    def __init__(
        self, negative_slope: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
    ) -> None:
        super().__init__(negative_slope=negative_slope, mode=mode, nonlinearity=nonlinearity)
        self.negative_slope, self.mode, self.nonlinearity = negative_slope, mode, nonlinearity

    def _std(self, shape: tuple[int, ...]) -> float:
        owner = type(self).__name__
        fan = _fan(owner, shape, self.mode)
        return _gain(owner, self.nonlinearity, self.negative_slope) / math.sqrt(fan)

    def _initialize(self, tensor: torch.Tensor) -> None:
        bound = math.sqrt(3.0) * self._std(tuple(tensor.shape))
        tensor.uniform_(-bound, bound)


class HeNormal(HeUniform):
    """N(0, sigma²), sigma = gain/sqrt(fan) (alias "he_normal"); arguments as HeUniform's."""

    def _initialize(self, tensor: torch.Tensor) -> None:
        tensor.normal_(0.0, self._std(tuple(tensor.shape)))


#: MindSpore's names for its initializers (lower case; a class's own lower-cased name too)
_ALIASES: dict[str, type[Initializer]] = {
    "zeros": Zero,
    "zero": Zero,
    "ones": One,
    "one": One,
    "normal": Normal,
    "truncatednormal": TruncatedNormal,
    "uniform": Uniform,
    "xavier_uniform": XavierUniform,
    "xavieruniform": XavierUniform,
    "xavier_normal": XavierNormal,
    "xaviernormal": XavierNormal,
    "he_uniform": HeUniform,
    "heuniform": HeUniform,
    "he_normal": HeNormal,
    "henormal": HeNormal,
}


def _register(*aliases: str) -> Any:
    """MindSpore's ``@_register("alias", ...)``: a class decorator that makes an
    :class:`Initializer` subclass known to ``initializer(name, ...)`` by its lower-cased class
    name and the aliases (names already known keep their class, as in MindSpore)."""

    def alias_reg(cls: type[Initializer]) -> type[Initializer]:
        for name in (cls.__name__.lower(), *aliases):
            _ALIASES.setdefault(name, cls)
        return cls

    return alias_reg


def _shape(shape: Any) -> tuple[int, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    shape = tuple(shape)
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise ValueError(f"initializer: shape must hold positive ints. Received shape={shape}")
    return shape


def initializer(
    init: Initializer | str | float | torch.Tensor | np.ndarray,
    shape: int | tuple[int, ...] | list[int] | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """A new tensor of ``shape`` and ``dtype`` initialized by ``init``.

    Args:
        init: an :class:`Initializer`; its name ("normal", "zeros", "ones", "xavier_uniform",
            "he_uniform", "truncatednormal" ..., any case); a number (:class:`Constant`); or a
            tensor/array, returned as a tensor of ``dtype`` (its shape must equal ``shape``).
        shape: the shape (an int is a 1-d shape); may be None only for a tensor ``init``.
        dtype: the torch dtype. Default float32.

    Returns:
        A ``torch.Tensor`` (not a Parameter).

    Raises:
        TypeError: ``init`` is of another type.
        ValueError: an unknown name, a bad shape, or a tensor of another shape.

    Example:
        >>> w = initializer("he_uniform", (64, 3, 3, 3))
    """
    if isinstance(init, (torch.Tensor, np.ndarray)):
        tensor = torch.as_tensor(init).detach().clone().to(dtype)
        wanted = _shape(shape)
        if wanted is not None and tuple(tensor.shape) != wanted:
            raise ValueError(
                "initializer: the shape of init must equal shape. "
                f"Received init.shape={tuple(tensor.shape)}, shape={wanted}"
            )
        return tensor
    if isinstance(init, str):
        kind = _ALIASES.get(init.lower())
        if kind is None:
            raise ValueError(
                f"initializer: unknown initializer name {init!r}. Known: {sorted(_ALIASES)}"
            )
        init = kind()
    elif isinstance(init, numbers.Number) and not isinstance(init, bool):
        init = Constant(init)
    elif not isinstance(init, Initializer):
        raise TypeError(
            "initializer: init must be a tensor, a number, a name or an Initializer. "
            f"Received init={init!r}"
        )
    wanted = _shape(shape)
    if wanted is None:
        raise ValueError(f"initializer: shape is required for init={init!r}")
    return init(torch.empty(wanted, dtype=dtype))


# MindSpore's private helpers, imported by name by model-zoo scripts (same meaning)
def _calculate_fan_in_and_fan_out(shape: Any) -> tuple[int, int]:
    """MindSpore's ``_calculate_fan_in_and_fan_out(shape)``: ``(fan_in, fan_out)``."""
    return _fan_in_and_fan_out(tuple(int(d) for d in shape))


def _calculate_correct_fan(shape: Any, mode: str) -> int:
    """MindSpore's ``_calculate_correct_fan(shape, mode)``: fan_in or fan_out by ``mode``."""
    return _fan("_calculate_correct_fan", tuple(int(d) for d in shape), mode)


def _calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """MindSpore's ``_calculate_gain(nonlinearity, param)``: the gain of a nonlinearity
    (``param`` is leaky_relu's negative slope, 0.01 when None)."""
    return _gain("_calculate_gain", nonlinearity, param)


def _assignment(arr: np.ndarray, num: Any) -> np.ndarray:
    """MindSpore's ``_assignment(arr, num)``: fill the NumPy array ``arr`` in place with
    ``num`` (a number, or an array of its shape) and return it."""
    arr[...] = num
    return arr

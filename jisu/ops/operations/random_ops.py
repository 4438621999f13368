"""MindSpore's random primitives (``mindspore.ops.operations.random_ops``) on torch.

Values are MindSpore's distributions, not its bits: each primitive draws from a deterministic
stream made from its ``seed``/``seed2`` and jisu's global seed (see :mod:`._nn_rng`), on the
default device (shape inputs) or the input's device.
"""

from __future__ import annotations

from typing import Any

import torch

from ..primitive import Primitive
from ._nn_rng import SeededStream, check_seed, shape_arg


class _RandomPrimitive(Primitive):
    def __init__(self, seed: int = 0, seed2: int = 0) -> None:
        self.seed, self.seed2 = seed, seed2
        self._stream = SeededStream(type(self).__name__, seed, seed2)


class UniformReal(_RandomPrimitive):
    """float32 numbers uniform in [0, 1) of shape ``shape``: ``UniformReal(seed, seed2)(shape)``."""

    def __call__(self, shape: Any) -> torch.Tensor:
        size = shape_arg("UniformReal", shape)
        return torch.rand(size, generator=self._stream.generator())


class StandardNormal(_RandomPrimitive):
    """float32 numbers from N(0, 1) of shape ``shape``."""

    def __call__(self, shape: Any) -> torch.Tensor:
        size = shape_arg("StandardNormal", shape)
        return torch.randn(size, generator=self._stream.generator())


def _int_scalar(owner: str, name: str, value: Any) -> int:
    if isinstance(value, torch.Tensor):
        if value.dtype != torch.int32 or value.numel() != 1:
            raise TypeError(
                f"{owner}: {name} must be an int32 tensor of one element. "
                f"Received {name} of dtype {value.dtype} and shape {tuple(value.shape)}"
            )
        return int(value.item())  # host sync: the bounds set the draw
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int32 tensor. Received {name}={value!r}")
    return value


class UniformInt(_RandomPrimitive):
    """int32 numbers uniform in [minval, maxval): ``UniformInt()(shape, minval, maxval)``."""

    def __call__(self, shape: Any, minval: Any, maxval: Any) -> torch.Tensor:
        size = shape_arg("UniformInt", shape)
        low = _int_scalar("UniformInt", "minval", minval)
        high = _int_scalar("UniformInt", "maxval", maxval)
        if low >= high:
            raise ValueError(
                f"UniformInt: minval must be < maxval. Received minval={low}, maxval={high}"
            )
        gen = self._stream.generator()
        return torch.randint(low, high, size, generator=gen, dtype=torch.int32)


class RandomChoiceWithMask(_RandomPrimitive):
    """``count`` random positions of the True elements of a bool tensor.

    Returns ``(index, mask)``: int32 ``(count, rank)`` coordinates in random order and a bool
    ``(count,)`` mask, False (with zero coordinates) past the number of True elements.
    """

    def __init__(self, count: int = 256, seed: int = 0, seed2: int = 0) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            raise ValueError(
                f"RandomChoiceWithMask: count must be an int > 0. Received count={count!r}"
            )
        super().__init__(seed, seed2)
        self.count = count

    def __call__(self, input_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if input_x.dtype != torch.bool:
            raise TypeError(
                f"RandomChoiceWithMask: input_x must be a bool tensor. Received {input_x.dtype}"
            )
        if not 1 <= input_x.dim() <= 5:
            raise ValueError(
                "RandomChoiceWithMask: input_x must have 1 to 5 dimensions. "
                f"Received shape {tuple(input_x.shape)}"
            )
        flat = input_x.reshape(-1)
        # random keys for the True elements, -1 for the False ones: the top `count` keys are
        # a uniform random choice of True positions, in random order (no host sync)
        keys = torch.rand(
            flat.shape, generator=self._stream.generator(flat.device), device=flat.device
        )
        keys = torch.where(flat, keys, torch.full_like(keys, -1.0))
        k = min(self.count, flat.numel())
        top, pos = torch.topk(keys, k)
        mask = top >= 0
        coords = torch.stack(torch.unravel_index(pos, input_x.shape), dim=-1)
        coords = torch.where(mask[:, None], coords, torch.zeros_like(coords)).to(torch.int32)
        if k < self.count:
            coords = torch.cat([coords, coords.new_zeros(self.count - k, input_x.dim())])
            mask = torch.cat([mask, mask.new_zeros(self.count - k)])
        return coords, mask


class Multinomial(_RandomPrimitive):
    """``num_samples`` category indices per row of (unnormalized) probabilities, with
    replacement: ``Multinomial(seed, seed2, dtype=int32)(x, num_samples)``."""

    def __init__(self, seed: int = 0, seed2: int = 0, dtype: torch.dtype = torch.int32) -> None:
        if dtype not in (torch.int32, torch.int64):
            raise TypeError(f"Multinomial: dtype must be int32 or int64. Received dtype={dtype}")
        super().__init__(seed, seed2)
        self.dtype = dtype

    def __call__(self, x: torch.Tensor, num_samples: int) -> torch.Tensor:
        num_samples = check_seed("Multinomial", "num_samples", num_samples)
        if x.dim() not in (1, 2):
            raise ValueError(f"Multinomial: x must be 1-d or 2-d. Received shape {tuple(x.shape)}")
        gen = self._stream.generator(x.device)
        out = torch.multinomial(x.float(), num_samples, replacement=True, generator=gen)
        return out.to(self.dtype)


__all__ = [
    "Multinomial",
    "RandomChoiceWithMask",
    "StandardNormal",
    "UniformInt",
    "UniformReal",
]

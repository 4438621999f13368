"""Where jisu's random primitives and functions draw from: deterministic streams made from
MindSpore's ``seed``/``seed2`` and jisu's global seed (:func:`jisu.set_seed`).

MindSpore's own random values cannot be reproduced bit for bit; what is kept is its contract.
A primitive built with ``seed == seed2 == 0`` draws from torch's default generator of the
device (seeded by ``set_seed``); otherwise it owns a ``torch.Generator`` per device, seeded from
(seed, seed2, global seed), whose stream advances from call to call, so two runs with the same
seeds draw the same numbers. A function called with ``seed`` draws from a fresh generator keyed
by (function, seed, global seed, how many times that pair was used), as MindSpore's op-seed
table does: repeated calls differ, runs repeat.
"""

from __future__ import annotations

import zlib
from typing import Any

import torch

from ...common.seed import get_seed

_MASK = (1 << 63) - 1
_CALLS: dict[tuple[str, int], int] = {}


def _mix(*parts: int) -> int:
    """A 63-bit seed from a few ints (splitmix64-style mixing, so nearby seeds differ)."""
    h = 0x9E3779B97F4A7C15
    for p in parts:
        h = (h ^ (p & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
    return h & _MASK


def check_seed(owner: str, name: str, value: Any) -> int:
    """A seed argument as an int >= 0 (MindSpore's check), naming the op."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int. Received {name}={value!r}")
    if value < 0:
        raise ValueError(f"{owner}: {name} must be >= 0. Received {name}={value}")
    return value


class SeededStream:
    """The stream one random primitive draws from (see the module docstring)."""

    def __init__(self, owner: str, seed: Any = 0, seed2: Any = 0) -> None:
        self.seed = check_seed(owner, "seed", seed)
        self.seed2 = check_seed(owner, "seed2", seed2)
        self._gens: dict[torch.device, tuple[int | None, torch.Generator]] = {}

    def generator(self, device: torch.device | str | None = None) -> torch.Generator | None:
        """The generator for ``device`` (None: torch's default one, when both seeds are 0)."""
        if self.seed == 0 and self.seed2 == 0:
            return None
        device = torch.device(device if device is not None else torch.get_default_device())
        glob = get_seed()
        held = self._gens.get(device)
        if held is not None and held[0] == glob:
            return held[1]
        # first use, or a new global seed since: (re)start the stream, as MindSpore's
        # set_seed resets its op seeds (the same seed set again is not seen: no restart)
        gen = torch.Generator(device)
        gen.manual_seed(_mix(self.seed, self.seed2, -1 if glob is None else glob))
        self._gens[device] = (glob, gen)
        return gen

    def __getstate__(self) -> dict:
        # generators do not pickle; a copied primitive restarts its stream
        return {"seed": self.seed, "seed2": self.seed2, "_gens": {}}


def function_generator(
    owner: str, seed: Any, device: torch.device | str | None = None
) -> torch.Generator | None:
    """The generator a random function called with ``seed`` draws from (None: torch's
    default generator, for ``seed=None``)."""
    if seed is None:
        return None
    seed = check_seed(owner, "seed", seed)
    count = _CALLS.get((owner, seed), 0)
    _CALLS[(owner, seed)] = count + 1
    device = torch.device(device if device is not None else torch.get_default_device())
    gen = torch.Generator(device)
    glob = get_seed()
    gen.manual_seed(_mix(seed, count, -1 if glob is None else glob, zlib.crc32(owner.encode())))
    return gen


def shape_arg(owner: str, shape: Any) -> tuple[int, ...]:
    """A shape argument (tuple/list of ints, or a 1-d integer tensor) as a tuple of ints."""
    if isinstance(shape, torch.Tensor):
        shape = shape.tolist()  # host sync: a shape must be known on the host
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
    ):
        raise TypeError(f"{owner}: shape must be a tuple of ints >= 0. Received shape={shape!r}")
    return tuple(shape)

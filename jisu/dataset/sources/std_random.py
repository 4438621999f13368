"""MindSpore's C++ random draws, reproduced: ``std::mt19937`` with libstdc++'s
``uniform_int_distribution`` and ``std::shuffle``, as MindSpore 2.10's engine (built with
GCC 9) draws them. Samplers whose output MindSpore's tests pin for a seed (``PKSampler``) use
this to give MindSpore's very rows.

The generator is NumPy's legacy ``RandomState``: seeded with an int it runs the same
``init_genrand`` and tempering as ``std::mt19937``, so its raw 32-bit outputs are the same
sequence. The rules below are libstdc++'s algorithms, rewritten from their description:

- ``uniform(lo, hi)``: with ``n = hi - lo + 1`` values, ``scaling = (2**32 - 1) // n``;
  outputs at or above ``n * scaling`` are rejected, the value is ``lo + output // scaling``
  (GCC 9's division method; GCC 11 switched to Lemire's multiplication).
- ``shuffle``: Fisher-Yates from the front, two swap positions per draw while ``n * n`` fits
  in 32 bits (one ``uniform(0, r * (r + 1) - 1)`` split into ``x // (r + 1)`` and
  ``x % (r + 1)``), after one ``uniform(0, 1)`` swap first when ``n`` is even.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_URNG_RANGE = 0xFFFFFFFF  # mt19937's max - min
_CHUNK = 256  # raw outputs fetched from NumPy at a time (consumed strictly in order)


class StdMt19937:
    """``std::mt19937(seed)``: call it for the next raw 32-bit output (not thread-safe; one
    per draw sequence)."""

    def __init__(self, seed: int) -> None:
        self._state = np.random.RandomState(seed & 0xFFFFFFFF)
        self._buffer: list[int] = []
        self._next = 0

    def __call__(self) -> int:
        if self._next == len(self._buffer):
            # full-range uint32 draws are the generator's raw outputs, in order
            raw = self._state.randint(0, 1 << 32, size=_CHUNK, dtype=np.uint32)
            self._buffer, self._next = raw.tolist(), 0
        value = self._buffer[self._next]
        self._next += 1
        return value

    def uniform(self, lo: int, hi: int) -> int:
        """``std::uniform_int_distribution<int64_t>(lo, hi)(gen)`` (``lo <= hi``)."""
        span = hi - lo
        if span == _URNG_RANGE:
            return lo + self()
        if span > _URNG_RANGE:  # never needed by the samplers (wider than 32 bits)
            raise ValueError(f"uniform: a range of {span + 1} values is wider than 32 bits")
        count = span + 1
        scaling = _URNG_RANGE // count
        past = count * scaling
        while True:
            value = self()
            if value < past:
                return lo + value // scaling

    def shuffle(self, items: Sequence[Any]) -> list[Any]:
        """``std::shuffle(items, gen)``: a new list in libstdc++'s order."""
        out = list(items)
        n = len(out)
        if n < 2:
            return out
        if _URNG_RANGE // n >= n:  # two swap positions from one draw
            i = 1
            if n % 2 == 0:
                j = self.uniform(0, 1)
                out[i], out[j] = out[j], out[i]
                i += 1
            while i < n:
                span = i + 1
                both = self.uniform(0, span * (span + 1) - 1)
                first, second = divmod(both, span + 1)
                out[i], out[first] = out[first], out[i]
                out[i + 1], out[second] = out[second], out[i + 1]
                i += 2
            return out
        for i in range(1, n):
            j = self.uniform(0, i)
            out[i], out[j] = out[j], out[i]
        return out

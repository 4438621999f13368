"""Counter-based random streams: one generator per (seed, epoch, sample, op).

Every random decision of a pipeline is drawn from a generator keyed by where it is used, never
from shared state, so the output does not depend on the number of workers or on timing.
Philox is a counter-based bit generator: the key selects the stream, the counter the position.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

_MASK = (1 << 64) - 1


_local = threading.local()


def sample_rng(seed: int, epoch: int, index: int, op_key: int) -> np.random.Generator:
    """Generator for one op applied to one sample (``index``) in one epoch.

    Called once per random op and sample, so it must be cheap: a new ``Philox(key=...)``
    draws OS entropy for a seed it then ignores (~9 us, ~20 us under thread contention).
    Each thread re-keys one bit generator instead (~4 us), unless a generator made from it
    earlier is still alive, in which case a new one is made.
    """
    key = (seed & _MASK, op_key & _MASK)
    counter = (0, index & _MASK, epoch & _MASK, 1)
    bits = getattr(_local, "bits", None)
    # references: _local's attribute, ``bits``, getrefcount's argument; more = still in use
    if bits is None or sys.getrefcount(bits) > 3:
        bits = _local.bits = np.random.Philox(0)
    state = bits.state
    state["state"]["counter"][:] = counter
    state["state"]["key"][:] = key
    state["buffer_pos"], state["has_uint32"], state["uinteger"] = 4, 0, 0
    bits.state = state
    return np.random.Generator(bits)


def epoch_rng(seed: int, epoch: int, op_key: int) -> np.random.Generator:
    """Generator for a whole-epoch decision of one node (a permutation, a buffer shuffle)."""
    key = [seed & _MASK, op_key & _MASK]
    counter = [0, 0, epoch & _MASK, 2]
    return np.random.Generator(np.random.Philox(key=key, counter=counter))


def epoch_rng_origin(rng: np.random.Generator) -> tuple[int, int] | None:
    """``(seed, epoch)`` of a generator made by :func:`epoch_rng`, or None for any other.

    For samplers that must reproduce MindSpore's own seeded C++ stream (a ``std::mt19937``
    seeded with the pipeline seed plus the epoch), where a draw from ``rng`` cannot.
    """
    bits = rng.bit_generator
    if not isinstance(bits, np.random.Philox):
        return None
    state = bits.state["state"]
    if int(state["counter"][3]) != 2:  # epoch_rng's tag (sample_rng's is 1)
        return None
    return int(state["key"][0]), int(state["counter"][2])

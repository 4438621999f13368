"""Counter-based random streams: one generator per (seed, epoch, sample, op).

Every random decision of a pipeline is drawn from a generator keyed by where it is used, never
from shared state, so the output does not depend on the number of workers or on timing.
Philox is a counter-based bit generator: the key selects the stream, the counter the position.
"""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


def sample_rng(seed: int, epoch: int, index: int, op_key: int) -> np.random.Generator:
    """Generator for one op applied to one sample (``index``) in one epoch."""
    key = [seed & _MASK, op_key & _MASK]
    counter = [0, index & _MASK, epoch & _MASK, 1]
    return np.random.Generator(np.random.Philox(key=key, counter=counter))


def epoch_rng(seed: int, epoch: int, op_key: int) -> np.random.Generator:
    """Generator for a whole-epoch decision of one node (a permutation, a buffer shuffle)."""
    key = [seed & _MASK, op_key & _MASK]
    counter = [0, 0, epoch & _MASK, 2]
    return np.random.Generator(np.random.Philox(key=key, counter=counter))

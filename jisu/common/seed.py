"""MindSpore's ``set_seed``: one seed for every generator a training run draws from."""

from __future__ import annotations

import random

import numpy as np
import torch

_seed: int | None = None
#: MindSpore's per-(kernel, op seed) counters behind ``_get_graph_seed``
_kernel_seeds: dict[tuple[str, int], int] = {}
_DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_SEED_STEP = 3528531795 ^ 3449720151  # MindSpore's keyConstant[0] ^ keyConstant[2]


def set_seed(seed: int) -> None:
    """Seed torch (CPU and CUDA), NumPy's and Python's global generators and jisu's pipelines
    (``jisu.dataset.config.set_seed``), as MindSpore's ``set_seed`` seeds its own."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"set_seed: seed must be an int in [0, 2**32). Received {seed!r}")
    global _seed
    _seed = seed
    from ..dataset import config

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # all devices
    config.set_seed(seed)
    for kernel, op_seed in _kernel_seeds:  # MindSpore restarts every op's counter
        _kernel_seeds[kernel, op_seed] = op_seed


def get_seed() -> int | None:
    """The seed :func:`set_seed` set last (None before)."""
    return _seed


def _get_graph_seed(op_seed: int | None, kernel_name: str) -> tuple[int, int]:
    """MindSpore's ``_get_graph_seed``: the (graph seed, op seed) pair a random op of
    ``kernel_name`` is given, as MindSpore computes it (the zoo passes them to its own random
    ops). (0, 0) when neither seed is set ("choose at random"); the global seed 0 stands for
    87654321; each call with a seed advances that (kernel, op seed)'s counter, which
    :func:`set_seed` restarts."""
    global_seed = 0 if _seed is None else (_seed or _DEFAULT_GRAPH_SEED)
    op_seed = op_seed or 0
    if global_seed == 0 and op_seed == 0:
        return 0, 0
    if isinstance(op_seed, bool) or not isinstance(op_seed, int) or op_seed < 0:
        raise ValueError(f"{kernel_name}: seed must be an int >= 0. Received seed={op_seed!r}")
    current = _kernel_seeds.setdefault((kernel_name, op_seed), op_seed)
    _kernel_seeds[kernel_name, op_seed] = current + _SEED_STEP
    return global_seed % _MAXINT32, current % _MAXINT32

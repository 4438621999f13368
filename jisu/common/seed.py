"""MindSpore's ``set_seed``: one seed for every generator a training run draws from."""

from __future__ import annotations

import random

import numpy as np
import torch

_seed: int | None = None


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


def get_seed() -> int | None:
    """The seed :func:`set_seed` set last (None before)."""
    return _seed

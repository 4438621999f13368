"""MindSpore's ``nn.optim.thor`` (``from mindspore.nn.optim import thor``): THOR, its
second-order optimizer, is not provided; calling ``thor(...)`` raises, naming why and what to
use instead (as ``jisu.train.train_thor.ConvertModelUtils`` does)."""

from __future__ import annotations

from ..._unprovided import refused_function

__all__ = ["thor"]

thor = refused_function(
    "nn.thor",
    "THOR, MindSpore's second-order optimizer, is built on its own graph-mode matrix ops and "
    "sink-mode model; train with a first-order optimizer (jisu.nn.Momentum, jisu.nn.Adam ...)",
)

"""MindSpore's ``mindspore.mint.optim``: torch's optimizers (same names and arguments);
``FusedAdamW`` is ``torch.optim.AdamW``."""

from __future__ import annotations

from torch.optim import SGD, Adam, AdamW

FusedAdamW = AdamW

__all__ = ["SGD", "Adam", "AdamW", "FusedAdamW"]

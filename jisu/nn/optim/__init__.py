"""MindSpore's optimizers on ``torch.optim``: the base class and the update rules."""

from .momentum import SGD, Momentum
from .optimizer import Optimizer

__all__ = ["SGD", "Momentum", "Optimizer"]

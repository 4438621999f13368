"""MindSpore's optimizers on ``torch.optim``: the base class and the update rules."""

from .adam import Adam, AdamWeightDecay
from .momentum import SGD, Momentum
from .optimizer import Optimizer
from .rmsprop import RMSProp

__all__ = ["SGD", "Adam", "AdamWeightDecay", "Momentum", "Optimizer", "RMSProp"]

"""MindSpore's ``nn`` names on PyTorch, so that MindSpore code ports by swapping its imports.

Networks stay plain ``torch.nn.Module`` s. Here so far: the optimizers with MindSpore's
arguments and per-step (dynamic) learning rates (:mod:`jisu.nn.optim`), the dynamic-rate list
helpers (:mod:`jisu.nn.dynamic_lr`) and the on-device schedules
(:mod:`jisu.nn.learning_rate_schedule`).
"""

from .dynamic_lr import (
    cosine_decay_lr,
    exponential_decay_lr,
    inverse_decay_lr,
    natural_exp_decay_lr,
    piecewise_constant_lr,
    polynomial_decay_lr,
    warmup_lr,
)
from .learning_rate_schedule import (
    CosineDecayLR,
    ExponentialDecayLR,
    InverseDecayLR,
    LearningRateSchedule,
    NaturalExpDecayLR,
    PolynomialDecayLR,
    WarmUpLR,
)
from .optim import SGD, Momentum, Optimizer

__all__ = [
    "SGD",
    "CosineDecayLR",
    "ExponentialDecayLR",
    "InverseDecayLR",
    "LearningRateSchedule",
    "Momentum",
    "NaturalExpDecayLR",
    "Optimizer",
    "PolynomialDecayLR",
    "WarmUpLR",
    "cosine_decay_lr",
    "exponential_decay_lr",
    "inverse_decay_lr",
    "natural_exp_decay_lr",
    "piecewise_constant_lr",
    "polynomial_decay_lr",
    "warmup_lr",
]

"""MindSpore's losses with MindSpore's arguments, as torch modules."""

from .loss import (
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    LossBase,
    MSELoss,
    SoftmaxCrossEntropyWithLogits,
)

__all__ = [
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "L1Loss",
    "LossBase",
    "MSELoss",
    "SoftmaxCrossEntropyWithLogits",
]

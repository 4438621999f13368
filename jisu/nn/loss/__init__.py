"""MindSpore's losses with MindSpore's arguments, as torch modules."""

from .classification import (
    BCELoss,
    CosineEmbeddingLoss,
    CTCLoss,
    FocalLoss,
    KLDivLoss,
    NLLLoss,
    SoftMarginLoss,
)
from .loss import (
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    LossBase,
    MSELoss,
    SoftmaxCrossEntropyWithLogits,
)
from .regression import DiceLoss, MAELoss, MultiClassDiceLoss, RMSELoss, SmoothL1Loss

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "DiceLoss",
    "FocalLoss",
    "KLDivLoss",
    "L1Loss",
    "LossBase",
    "MAELoss",
    "MSELoss",
    "MultiClassDiceLoss",
    "NLLLoss",
    "RMSELoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "SoftmaxCrossEntropyWithLogits",
]

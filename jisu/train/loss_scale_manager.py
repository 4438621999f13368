"""MindSpore's ``mindspore.train.loss_scale_manager`` path (the managers live in
:mod:`jisu.amp`)."""

from ..amp import DynamicLossScaleManager, FixedLossScaleManager, LossScaleManager

__all__ = ["DynamicLossScaleManager", "FixedLossScaleManager", "LossScaleManager"]

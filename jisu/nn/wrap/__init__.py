"""MindSpore's wrapper cells for scripts that build their own step: WithLossCell,
WithEvalCell, TrainOneStepCell and the loss-scaled TrainOneStepWithLossScaleCell with its
scale managers."""

from .cell_wrapper import TrainOneStepCell, WithEvalCell, WithLossCell
from .loss_scale import (
    DynamicLossScaleUpdateCell,
    FixedLossScaleUpdateCell,
    TrainOneStepWithLossScaleCell,
)

__all__ = [
    "DynamicLossScaleUpdateCell",
    "FixedLossScaleUpdateCell",
    "TrainOneStepCell",
    "TrainOneStepWithLossScaleCell",
    "WithEvalCell",
    "WithLossCell",
]

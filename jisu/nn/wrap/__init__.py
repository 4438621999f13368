"""MindSpore's wrapper cells for scripts that build their own step: WithLossCell,
WithEvalCell, TrainOneStepCell and the loss-scaled TrainOneStepWithLossScaleCell with its
scale managers, and DistributedGradReducer for the data-parallel gradient reduction."""

from .cell_wrapper import TrainOneStepCell, WithEvalCell, WithLossCell
from .grad_reducer import DistributedGradReducer
from .loss_scale import (
    DynamicLossScaleUpdateCell,
    FixedLossScaleUpdateCell,
    TrainOneStepWithLossScaleCell,
)

__all__ = [
    "DistributedGradReducer",
    "DynamicLossScaleUpdateCell",
    "FixedLossScaleUpdateCell",
    "TrainOneStepCell",
    "TrainOneStepWithLossScaleCell",
    "WithEvalCell",
    "WithLossCell",
]

"""Training: ``Model`` (train/eval/predict/fit, sink mode, graph mode), callbacks, metrics
and checkpoints, with MindSpore's API on PyTorch modules."""

from . import callback
from .callback import (
    Callback,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    LossMonitor,
    ProgressBar,
    ReduceLROnPlateau,
    RunContext,
    ThroughputMonitor,
    TimeMonitor,
)
from .checkpoint import CheckpointConfig, ModelCheckpoint, load_checkpoint, save_checkpoint
from .metrics import (
    MAE,
    MSE,
    Accuracy,
    Loss,
    Metric,
    Top1CategoricalAccuracy,
    Top5CategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from .model import Model
from .state import TrainState

__all__ = [
    "MAE",
    "MSE",
    "Accuracy",
    "Callback",
    "CheckpointConfig",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "Loss",
    "LossMonitor",
    "Metric",
    "Model",
    "ModelCheckpoint",
    "ProgressBar",
    "ReduceLROnPlateau",
    "RunContext",
    "ThroughputMonitor",
    "TimeMonitor",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "TrainState",
    "callback",
    "load_checkpoint",
    "save_checkpoint",
]

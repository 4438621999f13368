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
    ReduceLROnPlateau,
    RunContext,
    ThroughputMonitor,
    TimeMonitor,
)
from .checkpoint import load_checkpoint, save_checkpoint
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
from .model_checkpoint import CheckpointConfig, ModelCheckpoint, latest_checkpoint
from .progress import ProgressBar
from .state import TrainState
from .summary import CSVLogger, SummaryCollector

__all__ = [
    "MAE",
    "MSE",
    "Accuracy",
    "CSVLogger",
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
    "SummaryCollector",
    "ThroughputMonitor",
    "TimeMonitor",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "TrainState",
    "callback",
    "latest_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]

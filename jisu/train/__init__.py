"""Training: ``Model`` (train/eval/predict/fit, sink mode, graph mode), callbacks, metrics
and checkpoints, with MindSpore's API on PyTorch modules."""

from . import (
    amp_choice,
    callback,
    callbacks,
    capture,
    graph_policy,
    loss_scale_manager,
    memory_format,
    serialization,
)
from ._data_sink import data_sink
from .callbacks import (
    Callback,
    CheckpointConfig,
    CSVLogger,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    LossMonitor,
    ModelCheckpoint,
    ProgressBar,
    ReduceLROnPlateau,
    RunContext,
    SummaryCollector,
    ThroughputMonitor,
    TimeMonitor,
    latest_checkpoint,
)
from .checkpoint import load_checkpoint, save_checkpoint
from .exporting import export
from .loss_scale_manager import (
    DynamicLossScaleManager,
    FixedLossScaleManager,
    LossScaleManager,
)
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
from .safetensors_convert import ckpt_to_safetensors, safetensors_to_ckpt
from .serialization import load_param_into_net
from .state import TrainState
from .summary_record import SummaryRecord

__all__ = [
    "MAE",
    "MSE",
    "Accuracy",
    "CSVLogger",
    "Callback",
    "CheckpointConfig",
    "DynamicLossScaleManager",
    "EarlyStopping",
    "FixedLossScaleManager",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "Loss",
    "LossMonitor",
    "LossScaleManager",
    "Metric",
    "Model",
    "ModelCheckpoint",
    "ProgressBar",
    "ReduceLROnPlateau",
    "RunContext",
    "SummaryCollector",
    "SummaryRecord",
    "ThroughputMonitor",
    "TimeMonitor",
    "Top1CategoricalAccuracy",
    "Top5CategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "TrainState",
    "amp_choice",
    "callback",
    "callbacks",
    "capture",
    "ckpt_to_safetensors",
    "data_sink",
    "export",
    "graph_policy",
    "latest_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "loss_scale_manager",
    "memory_format",
    "safetensors_to_ckpt",
    "save_checkpoint",
    "serialization",
]

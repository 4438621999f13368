"""MindSpore's ``mindspore.train.callback`` path: ``from jisu.train.callback import
LossMonitor, ModelCheckpoint, CheckpointConfig`` works as in a MindSpore script.

The callbacks live one per module in :mod:`jisu.train.callbacks`; this module only names
them (and the machinery: ``Callback``, ``RunContext``, ``CallbackList``, ``loss_value``,
``report``), with MindSpore's private names the zoo imports to drive callbacks by hand:
``_InternalCallbackParam``, ``_CallbackManager``, ``_set_cur_net`` and the ``_callback``
module. jisu's progress bar is not a MindSpore callback: import ``ProgressBar`` from
:mod:`jisu.train`.
"""

from ..callbacks.base import (
    HOOKS,
    JISU_HOOKS,
    OLD_NAMES,
    Callback,
    CallbackList,
    CallbackParams,
    RunContext,
    loss_value,
    report,
)
from ..callbacks.checkpoint_config import CheckpointConfig
from ..callbacks.csv_logger import CSVLogger
from ..callbacks.early_stopping import EarlyStopping
from ..callbacks.history import History
from ..callbacks.lambda_callback import LambdaCallback
from ..callbacks.learning_rate_scheduler import LearningRateScheduler
from ..callbacks.loss_monitor import LossMonitor
from ..callbacks.model_checkpoint import ModelCheckpoint
from ..callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from ..callbacks.summary_collector import SummaryCollector
from ..callbacks.throughput_monitor import ThroughputMonitor
from ..callbacks.time_monitor import TimeMonitor
from . import _callback as _callback  # MindSpore's module path
from ._callback import _CallbackManager as _CallbackManager
from ._callback import _InternalCallbackParam as _InternalCallbackParam
from ._callback import _set_cur_net as _set_cur_net

__all__ = [
    "HOOKS",
    "JISU_HOOKS",
    "OLD_NAMES",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "CallbackParams",
    "CheckpointConfig",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "LossMonitor",
    "ModelCheckpoint",
    "ReduceLROnPlateau",
    "RunContext",
    "SummaryCollector",
    "ThroughputMonitor",
    "TimeMonitor",
    "loss_value",
    "report",
]

"""The callbacks of ``Model.train``/``eval``/``fit``, one per module (as Keras has them).

:mod:`.base` is the machinery every callback and loop uses (``Callback``, ``RunContext``,
``CallbackList``, ``loss_value``, ``report``); each built-in callback, or a tight family, is a
module of its own: ``loss_monitor``, ``time_monitor``, ``throughput_monitor``, ``history``,
``lambda_callback``, ``learning_rate_scheduler``, ``early_stopping`` and
``reduce_lr_on_plateau`` (with ``plateau``, what they share), ``progress_bar``,
``model_checkpoint`` (with ``checkpoint_config`` and ``checkpoint_files``),
``summary_collector`` and ``csv_logger`` (with ``epoch_meter``). Modules here import
:mod:`.base` and their own helpers, never each other's callbacks, and nothing of
:mod:`jisu.train` but its leaves (``rates``, ``checkpoint``).

Import them from :mod:`jisu.train` (or MindSpore's path, :mod:`jisu.train.callback`).
"""

from .base import (
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
from .checkpoint_config import CheckpointConfig
from .checkpoint_files import latest_checkpoint
from .csv_logger import CSVLogger
from .early_stopping import EarlyStopping
from .history import History
from .lambda_callback import LambdaCallback
from .learning_rate_scheduler import LearningRateScheduler
from .loss_monitor import LossMonitor
from .model_checkpoint import ModelCheckpoint
from .progress_bar import ProgressBar
from .reduce_lr_on_plateau import ReduceLROnPlateau
from .summary_collector import SummaryCollector
from .throughput_monitor import ThroughputMonitor
from .time_monitor import TimeMonitor

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
    "ProgressBar",
    "ReduceLROnPlateau",
    "RunContext",
    "SummaryCollector",
    "ThroughputMonitor",
    "TimeMonitor",
    "latest_checkpoint",
    "loss_value",
    "report",
]

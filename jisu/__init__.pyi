"""The names of the ``jisu`` package, imported when first used (:mod:`jisu._lazy`)."""

from . import (
    _checkparam as _checkparam,
)
from . import (
    amp,
    common,
    communication,
    compat,
    context,
    dataset,
    device_context,
    log,
    mindrecord,
    mint,
    nn,
    numpy,  # jisu.numpy (mindspore.numpy); jisu's modules import NumPy absolutely
    ops,
    parallel,
    profiler,
    train,
)
from . import (
    runtime as runtime,
)
from . import (
    version as version,
)
from ._jit import jit, ms_function
from ._toplevel import connect_network_with_dataset, from_numpy, load, tensor
from ._version import __version__
from .amp import (
    DynamicLossScaleManager,
    FixedLossScaleManager,
    LossScaleManager,
    build_train_network,
)
from .common import dtype
from .common.api import JitConfig, mutable
from .common.dtype import string
from .common.row_tensor import RowTensor
from .common.seed import get_seed, set_seed
from .common.tensor import Parameter, ParameterTuple, Tensor
from .context import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    ParallelMode,
    get_auto_parallel_context,
    get_context,
    get_ps_context,
    reset_auto_parallel_context,
    set_auto_parallel_context,
    set_context,
    set_device,
    set_ps_context,
    set_recursion_limit,
)
from .dtypes import (
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from .ops import grad, value_and_grad
from .profiler import Profiler
from .train import Model, latest_checkpoint, load_checkpoint, save_checkpoint
from .train._data_sink import data_sink
from .train._serialization_gaps import (
    build_searched_strategy,
    load_distributed_checkpoint,
    merge_sliced_parameter,
)
from .train.callbacks import (  # MindSpore 2.x's top-level names (from mindspore.train import *)
    Callback,
    CheckpointConfig,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    LossMonitor,
    ModelCheckpoint,
    ReduceLROnPlateau,
    RunContext,
    TimeMonitor,
)
from .train.dataset_helper import DatasetHelper
from .train.exporting import export
from .train.safetensors_convert import ckpt_to_safetensors, safetensors_to_ckpt
from .train.serialization import load_param_into_net
from .train.summary import SummaryRecord

__all__ = [
    "GRAPH_MODE",
    "PYNATIVE_MODE",
    "Callback",
    "CheckpointConfig",
    "DatasetHelper",
    "DynamicLossScaleManager",
    "EarlyStopping",
    "FixedLossScaleManager",
    "History",
    "JitConfig",
    "LambdaCallback",
    "LearningRateScheduler",
    "LossMonitor",
    "LossScaleManager",
    "Model",
    "ModelCheckpoint",
    "ParallelMode",
    "Parameter",
    "ParameterTuple",
    "Profiler",
    "ReduceLROnPlateau",
    "RowTensor",
    "RunContext",
    "SummaryRecord",
    "Tensor",
    "TimeMonitor",
    "__version__",
    "amp",
    "bfloat16",
    "bool_",
    "build_searched_strategy",
    "build_train_network",
    "ckpt_to_safetensors",
    "common",
    "communication",
    "compat",
    "connect_network_with_dataset",
    "context",
    "data_sink",
    "dataset",
    "device_context",
    "dtype",
    "export",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "get_auto_parallel_context",
    "get_context",
    "get_ps_context",
    "get_seed",
    "grad",
    "int8",
    "int16",
    "int32",
    "int64",
    "jit",
    "latest_checkpoint",
    "load",
    "load_checkpoint",
    "load_distributed_checkpoint",
    "load_param_into_net",
    "log",
    "merge_sliced_parameter",
    "mindrecord",
    "mint",
    "ms_function",
    "mutable",
    "nn",
    "numpy",
    "ops",
    "parallel",
    "profiler",
    "reset_auto_parallel_context",
    "safetensors_to_ckpt",
    "save_checkpoint",
    "set_auto_parallel_context",
    "set_context",
    "set_device",
    "set_ps_context",
    "set_recursion_limit",
    "set_seed",
    "string",
    "tensor",
    "train",
    "uint8",
    "value_and_grad",
]

"""jisu (极速, "full speed"): deep-learning training at the speed of the hardware, on PyTorch.

``jisu.dataset`` is a parallel, prefetching, deterministic input pipeline with MindSpore's API;
``jisu.amp`` is mixed precision (levels O0-O3, fp16/bf16, loss scaling without host syncs);
``jisu.Model`` trains with callbacks, sink mode and graph mode (``jisu.train``).
"""

from . import amp, compat, context, dataset, profiler, train  # profiler installs AutoTune
from ._version import __version__
from .context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
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
from .train import Model, latest_checkpoint, load_checkpoint, save_checkpoint

__all__ = [
    "GRAPH_MODE",
    "PYNATIVE_MODE",
    "Model",
    "__version__",
    "amp",
    "bfloat16",
    "bool_",
    "compat",
    "context",
    "dataset",
    "float16",
    "float32",
    "float64",
    "get_context",
    "int8",
    "int16",
    "int32",
    "int64",
    "latest_checkpoint",
    "load_checkpoint",
    "profiler",
    "save_checkpoint",
    "set_context",
    "train",
    "uint8",
]

"""jisu (极速, "full speed"): deep-learning training at the speed of the hardware, on PyTorch.

``jisu.dataset`` is a parallel, prefetching, deterministic input pipeline with MindSpore's API;
``jisu.amp`` is mixed precision (levels O0-O3, fp16/bf16, loss scaling without host syncs).
"""

from . import amp, dataset
from ._version import __version__
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

__all__ = [
    "__version__",
    "amp",
    "bfloat16",
    "bool_",
    "dataset",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
]

"""jisu (极速, "full speed"): deep-learning training at the speed of the hardware, on PyTorch.

``jisu.dataset`` is a parallel, prefetching, deterministic input pipeline with MindSpore's API.
"""

from . import dataset
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

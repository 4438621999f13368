"""Generic data ops (``mindspore.dataset.transforms``' names)."""

from ..core.operation import TensorOperation
from .more_ops import Mask, PadEnd, RandomOrder, Relational, Slice, Unique
from .ops import (
    Compose,
    Concatenate,
    Duplicate,
    Fill,
    OneHot,
    RandomApply,
    RandomChoice,
    TypeCast,
)

__all__ = [
    "Compose",
    "Concatenate",
    "Duplicate",
    "Fill",
    "Mask",
    "OneHot",
    "PadEnd",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "Relational",
    "Slice",
    "TensorOperation",
    "TypeCast",
    "Unique",
]

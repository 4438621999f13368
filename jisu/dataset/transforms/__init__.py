"""Generic data ops (``mindspore.dataset.transforms``' names)."""

from .base import TensorOperation
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
    "OneHot",
    "RandomApply",
    "RandomChoice",
    "TensorOperation",
    "TypeCast",
]

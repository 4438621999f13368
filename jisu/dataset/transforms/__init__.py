"""Generic data ops (``mindspore.dataset.transforms``' names).

``transforms.vision`` is an attribute as in MindSpore 2.10 (where it is
``mindspore.dataset.vision``): the subpackage :mod:`jisu.dataset.transforms.vision`, holding
:mod:`jisu.dataset.vision`'s objects, imported on first use (by :func:`__getattr__`) so that
importing ``transforms`` stays light and ``jisu.dataset.vision``, which imports
``transforms``, never meets a half-built package.
"""

from __future__ import annotations

import importlib
from types import ModuleType

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
from .plugin import Plugin

__all__ = [
    "Compose",
    "Concatenate",
    "Duplicate",
    "Fill",
    "Mask",
    "OneHot",
    "PadEnd",
    "Plugin",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "Relational",
    "Slice",
    "TensorOperation",
    "TypeCast",
    "Unique",
]

#: attributes that are subpackages, imported when first asked for (MindSpore has them at once)
_LAZY = ("vision",)


def __getattr__(name: str) -> ModuleType:
    """``transforms.vision`` on first use; any other missing name is an AttributeError."""
    if name == "vision":
        # imported by name: an import statement here would be an edge of the import graph
        # (tests/test_layout.py) closing the circle transforms -> transforms.vision ->
        # jisu.dataset.vision -> vision.pil -> transforms, which never runs: this runs after
        # transforms' __init__ has finished. The import sets the attribute: later uses do not
        # come here.
        return importlib.import_module(f"{__name__}.vision")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

"""MindSpore 1.x's path ``mindspore.dataset.transforms.py_transforms`` (MindSpore 2.x removed
it, merging its ops into ``mindspore.dataset.transforms``): the same ops as
:mod:`jisu.dataset.transforms`, and 1.x's ``OneHotOp``."""

from . import *  # noqa: F403
from . import __all__ as _transforms_names
from .ops import OneHot


class OneHotOp(OneHot):
    """1.x's ``py_transforms.OneHotOp(num_classes, smoothing_rate=0.0)``: the same op as
    :class:`~jisu.dataset.transforms.OneHot`."""


__all__ = [*_transforms_names, "OneHotOp"]

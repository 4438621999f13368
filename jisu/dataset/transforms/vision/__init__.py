"""MindSpore 0.x's path ``mindspore.dataset.transforms.vision`` (and its ``c_transforms``,
``py_transforms`` and ``utils``), still in old public scripts; MindSpore 2.x keeps only the
attribute ``mindspore.dataset.transforms.vision`` (its ``vision`` module). The names of
:mod:`jisu.dataset.vision`."""

from ...vision import *  # noqa: F403
from ...vision import __all__  # noqa: F401

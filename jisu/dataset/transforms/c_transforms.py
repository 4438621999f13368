"""MindSpore 1.x's path ``mindspore.dataset.transforms.c_transforms`` (MindSpore 2.x removed
it, merging its ops into ``mindspore.dataset.transforms``): the same ops as
:mod:`jisu.dataset.transforms`."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401

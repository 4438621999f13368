"""MindSpore's older path ``mindspore.dataset.vision.c_transforms``: the same ops as
:mod:`jisu.dataset.vision` (MindSpore 2.x merged the C++ and Python transforms there)."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401

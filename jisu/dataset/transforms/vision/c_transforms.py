"""MindSpore 0.x's path ``mindspore.dataset.transforms.vision.c_transforms``: the names of
:mod:`jisu.dataset.vision.c_transforms`."""

from ...vision.c_transforms import *  # noqa: F403
from ...vision.c_transforms import __all__  # noqa: F401

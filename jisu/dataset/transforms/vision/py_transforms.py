"""MindSpore 0.x's path ``mindspore.dataset.transforms.vision.py_transforms``: the names of
:mod:`jisu.dataset.vision.py_transforms`."""

from ...vision.py_transforms import *  # noqa: F403
from ...vision.py_transforms import __all__  # noqa: F401

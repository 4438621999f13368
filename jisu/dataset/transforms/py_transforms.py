"""MindSpore's older path ``mindspore.dataset.transforms.py_transforms``: the same ops
as :mod:`jisu.dataset.transforms`."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401

"""MindSpore 0.x's path ``mindspore.dataset.transforms.vision.utils``: the names of
:mod:`jisu.dataset.vision.utils`."""

from ...vision.utils import *  # noqa: F403
from ...vision.utils import __all__  # noqa: F401

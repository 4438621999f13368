"""MindSpore 2.x's module ``mindspore.dataset.vision.transforms`` (where its vision ops are
defined; scripts import it too): the names of :mod:`jisu.dataset.vision`."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401

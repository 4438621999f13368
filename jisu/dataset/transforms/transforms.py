"""MindSpore 2.x's module ``mindspore.dataset.transforms.transforms`` (where its generic ops
are defined; scripts import it too): the names of :mod:`jisu.dataset.transforms`."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401

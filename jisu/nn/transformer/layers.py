"""MindSpore 1.x's ``mindspore.nn.transformer.layers`` path: the names of
:mod:`jisu.parallel._transformer.layers`."""

from ...parallel._transformer.layers import *  # noqa: F403
from ...parallel._transformer.layers import __all__  # noqa: F401

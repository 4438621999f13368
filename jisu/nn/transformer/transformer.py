"""MindSpore 1.x's ``mindspore.nn.transformer.transformer`` path: the names of
:mod:`jisu.parallel._transformer.transformer`."""

from ...parallel._transformer.transformer import *  # noqa: F403
from ...parallel._transformer.transformer import __all__  # noqa: F401

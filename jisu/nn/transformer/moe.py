"""MindSpore 1.x's ``mindspore.nn.transformer.moe`` path: the names of
:mod:`jisu.parallel._transformer.moe`."""

from ...parallel._transformer.moe import *  # noqa: F403
from ...parallel._transformer.moe import __all__  # noqa: F401

"""MindSpore 1.x's ``mindspore.nn.transformer.loss`` path: the names of
:mod:`jisu.parallel._transformer.loss`."""

from ...parallel._transformer.loss import *  # noqa: F403
from ...parallel._transformer.loss import __all__  # noqa: F401

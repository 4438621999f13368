"""MindSpore 1.x's ``mindspore.nn.transformer.op_parallel_config`` path: the names of
:mod:`jisu.parallel._transformer.op_parallel_config`."""

from ...parallel._transformer.op_parallel_config import *  # noqa: F403
from ...parallel._transformer.op_parallel_config import __all__  # noqa: F401

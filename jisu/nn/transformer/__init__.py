"""MindSpore 1.8-1.10's ``mindspore.nn.transformer`` path, where its big-model transformer
library lived before 2.0 moved it to ``mindspore.parallel._transformer``: the same names
(:mod:`jisu.parallel._transformer`), so model-zoo scripts of that era import unchanged."""

from ...parallel._transformer import *  # noqa: F403
from ...parallel._transformer import __all__ as _ALL
from . import layers, loss, moe, op_parallel_config, transformer  # noqa: F401

__all__ = list(_ALL)

"""MindSpore 1.x's path ``mindspore.dataset.vision.c_transforms`` (MindSpore 2.x removed it,
merging its ops into ``mindspore.dataset.vision``): the ops of :mod:`jisu.dataset.vision`
under the same names, and ``RgbToBgr``, the one 1.x name that 2.x replaced."""

from . import *  # noqa: F403
from . import __all__ as _vision_names
from .enhance import ConvertColor
from .utils import ConvertMode


class RgbToBgr(ConvertColor):
    """MindSpore 1.x's ``c_transforms.RgbToBgr``: an HWC RGB image to BGR (the same as
    ``ConvertColor(ConvertMode.COLOR_RGB2BGR)``, which 2.x names instead)."""

    def __init__(self) -> None:
        super().__init__(ConvertMode.COLOR_RGB2BGR)


__all__ = [*_vision_names, "RgbToBgr"]

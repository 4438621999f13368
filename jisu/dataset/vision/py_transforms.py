"""MindSpore 1.x's path ``mindspore.dataset.vision.py_transforms`` (MindSpore 2.x removed it,
merging its ops into ``mindspore.dataset.vision``): the ops of :mod:`jisu.dataset.vision`
under the same names, with 1.x's defaults where this module's ops differed from the merged
ones: ``Normalize`` and ``Cutout`` take the CHW images ``ToTensor`` makes."""

from __future__ import annotations

from collections.abc import Sequence

from . import *  # noqa: F403
from . import __all__ as _vision_names
from .mixing import CutOut
from .pixel import Normalize as _Normalize


class Normalize(_Normalize):
    """1.x's ``py_transforms.Normalize``: ``(image - mean) / std`` per channel of a CHW image
    (what ``ToTensor`` gives: values in [0, 1]), i.e. ``vision.Normalize(..., is_hwc=False)``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_hwc: bool = False) -> None:
        super().__init__(mean, std, is_hwc)


class Cutout(CutOut):
    """1.x's ``py_transforms.Cutout``: ``num_patches`` square patches of side ``length`` set to
    zero in a CHW image, i.e. ``vision.CutOut(length, num_patches, is_hwc=False)``."""

    def __init__(self, length: int, num_patches: int = 1) -> None:
        super().__init__(length, num_patches, is_hwc=False)


__all__ = [*_vision_names, "Cutout"]

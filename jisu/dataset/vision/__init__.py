"""Image ops (``mindspore.dataset.vision``' names): kernels from OpenCV, libjpeg-turbo, NumPy."""

from .decode import Decode
from .geometry import (
    CenterCrop,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomVerticalFlip,
    Resize,
)
from .pixel import HWC2CHW, Normalize, Rescale
from .utils import Border, Inter

__all__ = [
    "HWC2CHW",
    "Border",
    "CenterCrop",
    "Decode",
    "Inter",
    "Normalize",
    "Pad",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "Rescale",
    "Resize",
]

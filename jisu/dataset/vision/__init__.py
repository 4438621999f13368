"""Image ops (``mindspore.dataset.vision``' names): kernels from OpenCV, libjpeg-turbo, NumPy."""

from .color import RandomColorAdjust
from .decode import Decode, DecompressionBombError
from .geometry import (
    CenterCrop,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomVerticalFlip,
    Resize,
)
from .pixel import HWC2CHW, Normalize, Rescale
from .random_crop_resize import RandomCropDecodeResize, RandomResizedCrop
from .utils import Border, Inter

__all__ = [
    "HWC2CHW",
    "Border",
    "CenterCrop",
    "Decode",
    "DecompressionBombError",
    "Inter",
    "Normalize",
    "Pad",
    "RandomColorAdjust",
    "RandomCrop",
    "RandomCropDecodeResize",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Rescale",
    "Resize",
]
